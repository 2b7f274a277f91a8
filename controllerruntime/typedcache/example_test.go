package typedcache_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/typedkube/informer/controllerruntime/typedcache"
	"github.com/typedkube/informer/internal/fakeapi"
)

func ExampleNew() {
	// A fake API server stands in for a cluster here; a manager passes its
	// *rest.Config, and calls typedcache.New itself: ctrl.Options{NewCache:
	// typedcache.New}.
	srv := fakeapi.New(scheme.Scheme, fakeapi.Resource{
		GVK: corev1.SchemeGroupVersion.WithKind("Pod"), Name: "pods", Namespaced: true, Protobuf: true,
	})
	defer srv.Close()
	for i, node := range []string{"node-a", "node-b", "node-a"} {
		srv.Create(&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("web-%d", i), Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{NodeName: node},
		})
	}

	c, err := typedcache.New(srv.Config(), cache.Options{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- c.Start(runCtx) }()
	defer func() { stop(); <-done }()

	// A field index, as a controller's SetupWithManager adds one.
	err = c.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	})
	if err != nil {
		panic(err)
	}
	var pod corev1.Pod
	err = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web-1"}, &pod) // waits for the informer's sync
	fmt.Println(pod.Kind, pod.Name, "on", pod.Spec.NodeName, err)
	var onA corev1.PodList
	err = c.List(ctx, &onA, client.InNamespace("default"), client.MatchingLabels{"app": "web"}, client.MatchingFields{"spec.nodeName": "node-a"})
	fmt.Println(len(onA.Items), "web pods on node-a", err)
	// Output:
	// Pod web-1 on node-b <nil>
	// 2 web pods on node-a <nil>
}

func ExampleNewWith() {
	// NewWith adds the library's options; an option of controller-runtime's
	// that the cache cannot honour is refused, never ignored.
	newCache := typedcache.NewWith(typedcache.Options{DropManagedFields: true})
	srv := fakeapi.New(scheme.Scheme)
	defer srv.Close()
	_, err := newCache(srv.Config(), cache.Options{DefaultEnableWatchBookmarks: ptr.To(false)})
	fmt.Println(errors.Is(err, typedcache.ErrUnsupported))
	// Output: true
}
