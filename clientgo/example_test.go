package clientgo_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/clientgo"
	"github.com/typedkube/informer/informertest"
)

// A generated client-go lister reading a typed cache, such as an
// informer's GetIndexer().
func ExampleIndexer() {
	pods := informer.NewIndexer(informer.MetaNamespaceKeyFunc[*corev1.Pod], informer.Indexers[*corev1.Pod]{
		informer.NamespaceIndex: informer.MetaNamespaceIndexFunc[*corev1.Pod],
	})
	_ = pods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"}})
	lister := corev1listers.NewPodLister(clientgo.Indexer(pods))
	inDefault, _ := lister.Pods("default").List(labels.Everything())
	p, _ := lister.Pods("default").Get("web-1")
	fmt.Println(len(inDefault), p.Name)
	// Output: 1 web-1
}

// A client-go event handler, unchanged, fed by a typed informer.
func ExampleHandler() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	src := informertest.NewSource(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"}})
	pods, _ := informer.NewSharedIndexInformer(src, informer.SharedIndexInformerOptions[*corev1.Pod]{})
	added := make(chan string, 1)
	legacy := cache.ResourceEventHandlerFuncs{ // written for client-go
		AddFunc: func(obj any) { added <- obj.(*corev1.Pod).Name },
	}
	reg, _ := pods.AddEventHandler(clientgo.Handler[*corev1.Pod](legacy))
	done := make(chan error)
	go func() { done <- pods.Run(ctx) }()
	_ = informer.WaitForCacheSync(ctx, pods, reg)
	fmt.Println(<-added)
	cancel()
	<-done
	// Output: web-1
}

// legacyController is code written against client-go: it takes a
// cache.SharedIndexInformer and reads through a generated lister.
type legacyController struct {
	lister corev1listers.PodLister
	seen   chan string
}

func newLegacyController(inf cache.SharedIndexInformer) *legacyController {
	c := &legacyController{lister: corev1listers.NewPodLister(inf.GetIndexer()), seen: make(chan string, 1)}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.seen <- obj.(*corev1.Pod).Name },
	})
	return c
}

// A controller written for client-go, given a typed informer: the wiring
// changes, the controller does not.
func ExampleSharedIndexInformer() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	src := informertest.NewSource(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"}})
	// Was: inf := factory.Core().V1().Pods().Informer()
	pods, _ := informer.NewSharedIndexInformer(src, informer.SharedIndexInformerOptions[*corev1.Pod]{})
	inf := clientgo.SharedIndexInformer(pods)

	c := newLegacyController(inf)
	stopped := make(chan struct{})
	go func() { defer close(stopped); inf.Run(ctx.Done()) }()
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	fmt.Println(<-c.seen)
	p, _ := c.lister.Pods("default").Get("web-1")
	fmt.Println(p.Name)
	_, err := c.lister.Pods("default").Get("web-2")
	fmt.Println(apierrors.IsNotFound(err))
	cancel()
	<-stopped
	fmt.Println(inf.IsStopped())
	// Output:
	// web-1
	// web-1
	// true
	// true
}
