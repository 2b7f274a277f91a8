package informertest_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
)

// A controller's informer, tested without an API server: the Source serves
// the informer's watch-list stream and the changes the test makes, and the
// Recorder lets the test wait for the handler's calls.
func ExampleSource() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	src := informertest.NewSource(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"}})
	pods, _ := informer.NewSharedIndexInformer(src, informer.SharedIndexInformerOptions[*corev1.Pod]{})
	var rec informertest.Recorder[*corev1.Pod]
	reg, _ := pods.AddEventHandler(&rec)
	done := make(chan error)
	go func() { done <- pods.Run(ctx) }()
	if err := informer.WaitForCacheSync(ctx, pods, reg); err != nil {
		fmt.Println(err)
		return
	}

	_, _ = src.Update(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"},
		Spec:       corev1.PodSpec{NodeName: "node-a"},
	})
	_, _ = src.Delete(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"}})
	if err := rec.WaitForKey(ctx, informertest.OnDelete, "default/web-1", ""); err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range rec.Calls() {
		fmt.Println(c)
	}
	cancel()
	<-done
	// Output:
	// OnAdd default/web-1 rv=2 initial
	// OnUpdate default/web-1 rv=3
	// OnDelete default/web-1 rv=4
}

// A controller built on a Factory, tested without an API server: the
// Server is the source of the factory's informers, which honour the
// factory's options (here, one namespace); the test writes through it.
func ExampleServer() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv := informertest.NewServer(nil,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "web-1"}},
	)
	f, err := srv.NewFactory(informer.FactoryOptions{Namespace: "default"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Shutdown()
	pods, _ := informer.For[*corev1.Pod](f) // what the controller does
	var rec informertest.Recorder[*corev1.Pod]
	_, _ = pods.AddEventHandler(&rec)
	f.Start(ctx)
	if _, err := f.WaitForCacheSync(ctx); err != nil {
		fmt.Println(err)
		return
	}

	_, _ = srv.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "web-2"}})
	_, _ = srv.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-2"}})
	if err := rec.WaitForKey(ctx, informertest.OnAdd, "default/web-2", ""); err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range rec.Calls() {
		fmt.Println(c.Kind, c.Key, c.Initial)
	}
	// Output:
	// OnAdd default/web-1 true
	// OnAdd default/web-2 false
}
