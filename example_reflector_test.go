package informer_test

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedkube/informer"
)

// replacedSignal is a Store that says when its contents were replaced.
type replacedSignal struct {
	*informer.Store[*corev1.Pod]
	replaced chan struct{}
}

func (s replacedSignal) Replace(list []*corev1.Pod, resourceVersion string) error {
	err := s.Store.Replace(list, resourceVersion)
	select {
	case s.replaced <- struct{}{}:
	default:
	}
	return err
}

// A Reflector keeps a typed store in step with the Pods of a namespace.
func ExampleReflector() {
	clientset := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-2"}},
	)
	// With a real clientset, ListWatchFromClient alone is enough. The typed
	// clients of the fake cannot stream the initial state (they send no
	// initial-events-end bookmark), so say so with WithoutWatchList.
	lw := informer.WithoutWatchList(informer.ListWatchFromClient[corev1.Pod](clientset.CoreV1().Pods("default"), nil))
	store := replacedSignal{
		Store:    informer.NewStore(informer.MetaNamespaceKeyFunc[*corev1.Pod]),
		replaced: make(chan struct{}, 1),
	}
	r, err := informer.NewReflector(lw, store, informer.ReflectorOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()

	<-store.replaced // the first list is in the store
	for _, key := range slices.Sorted(store.Keys()) {
		pod, _ := store.GetByKey(key)
		fmt.Println(key, pod.Name)
	}
	cancel()
	fmt.Println("Run returned", <-done)
	// Output:
	// default/web-1 web-1
	// default/web-2 web-2
	// Run returned <nil>
}
