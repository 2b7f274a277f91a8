package informer_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
)

// run runs inf until the returned stop is called.
func run[T informer.Object](inf *informer.SharedIndexInformer[T]) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = inf.Run(ctx) }()
	return func() { cancel(); <-done }
}

// Stats, as a metrics system reads them.
func ExampleSharedIndexInformer_Stats() {
	src := informertest.NewSource(labelled("default", "web-1", "web"), labelled("default", "web-2", "web"))
	pods, _ := informer.NewSharedIndexInformer[*corev1.Pod](src, informer.SharedIndexInformerOptions[*corev1.Pod]{Name: "v1/pods"})
	reg, _ := pods.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{}, informer.HandlerOptions{Name: "reconciler"})
	stop := run(pods)
	defer stop()
	informer.WaitForCacheSync(context.Background(), pods, reg)
	st := pods.Stats()
	fmt.Println(st.Name, st.Synced, st.Objects, st.Lists, st.Relists)
	for _, h := range st.Handlers {
		fmt.Println(h.Name, h.Pending, h.Synced)
	}
	// Output:
	// v1/pods true 2 1 0
	// reconciler 0 true
}

// A handler that only needs each object's latest state: with Coalesce, a
// slow handler makes the informer hold at most one pending notification
// per object, however fast the objects change.
func ExampleHandlerOptions() {
	src := informertest.NewSource(labelled("default", "web-1", "web"))
	pods, _ := informer.NewSharedIndexInformer[*corev1.Pod](src, informer.SharedIndexInformerOptions[*corev1.Pod]{})
	busy, release := make(chan struct{}), make(chan struct{})
	updates := make(chan string, 8)
	reg, _ := pods.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(*corev1.Pod, bool) { close(busy); <-release }, // busy while the updates arrive
		UpdateFunc: func(_, p *corev1.Pod) {
			updates <- p.Labels["app"]
		},
	}, informer.HandlerOptions{Name: "slow", Coalesce: true})
	// A second handler, told of each change right after the first.
	sawV4 := make(chan struct{})
	pods.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		UpdateFunc: func(_, p *corev1.Pod) {
			if p.Labels["app"] == "v4" {
				close(sawV4)
			}
		},
	})
	stop := run(pods)
	defer stop()
	informer.WaitForCacheSync(context.Background(), pods)
	// Wait for the first handler's add to start: an update that came
	// before would merge into that add, which is then of v4.
	<-busy
	for _, app := range []string{"v2", "v3", "v4"} {
		src.Update(labelled("default", "web-1", app))
	}
	<-sawV4
	fmt.Println("pending:", reg.Pending()) // the add in progress, and the three updates as one
	close(release)
	fmt.Println("update to", <-updates)
	// Output:
	// pending: 2
	// update to v4
}

// ListWatchFuncs makes a ListerWatcher of two functions, here over a
// fixed list and a watch the program feeds.
func ExampleListWatchFuncs() {
	w := watch.NewFake()
	lw := informer.ListWatchFuncs[*corev1.Pod]{
		ListFunc: func(context.Context, metav1.ListOptions) (*informer.ListPage[*corev1.Pod], error) {
			return &informer.ListPage[*corev1.Pod]{
				Items:    []*corev1.Pod{labelled("default", "web-1", "web")},
				ListMeta: metav1.ListMeta{ResourceVersion: "10"},
			}, nil
		},
		WatchFunc: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return w, nil },
	}
	pods, _ := informer.NewSharedIndexInformer(informer.WithoutWatchList[*corev1.Pod](lw), informer.SharedIndexInformerOptions[*corev1.Pod]{})
	added := make(chan string, 2)
	pods.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, initial bool) { added <- fmt.Sprint(p.Name, " initial=", initial) },
	})
	stop := run(pods)
	defer stop()
	fmt.Println(<-added)
	p := labelled("default", "web-2", "web")
	p.ResourceVersion = "11"
	w.Add(p)
	fmt.Println(<-added)
	// Output:
	// web-1 initial=true
	// web-2 initial=false
}

// The informer's errors are typed: a transform's failure names the object.
func ExampleTransformError() {
	src := informertest.NewSource(labelled("default", "web-1", "web"))
	reported := make(chan error, 1)
	pods, _ := informer.NewSharedIndexInformer[*corev1.Pod](src, informer.SharedIndexInformerOptions[*corev1.Pod]{
		Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			if p.Name == "web-2" {
				return nil, errors.New("no thanks")
			}
			return p, nil
		},
		Reflector: informer.ReflectorOptions{WatchErrorHandler: func(_ context.Context, err error) {
			select {
			case reported <- err:
			default:
			}
		}},
	})
	stop := run(pods)
	defer stop()
	informer.WaitForCacheSync(context.Background(), pods)
	src.Add(labelled("default", "web-2", "web"))
	err := <-reported
	var te *informer.TransformError
	var ee *informer.EventError
	fmt.Println(errors.As(err, &te), te.Key, errors.As(err, &ee), ee.Type)
	// Output: true default/web-2 true ADDED
}

// A key function's failure is a *KeyError holding the object.
func ExampleKeyError() {
	store := informer.NewStore(informer.MetaNamespaceKeyFunc[*corev1.Pod])
	err := store.Add(&corev1.Pod{}) // no name
	var ke *informer.KeyError[*corev1.Pod]
	fmt.Println(errors.As(err, &ke), errors.Is(err, informer.ErrEmptyKey))
	// Output: true true
}

// QueueDeltaFIFO makes the informer merge each object's changes in a
// DeltaFIFO, as client-go's informers did before RealFIFO; the default,
// QueueInOrder, keeps every change in order across objects.
func ExampleQueueMode() {
	src := informertest.NewSource(labelled("default", "web-1", "web"))
	pods, _ := informer.NewSharedIndexInformer[*corev1.Pod](src, informer.SharedIndexInformerOptions[*corev1.Pod]{
		Queue: informer.QueueDeltaFIFO,
		Reflector: informer.ReflectorOptions{
			WatchList: informer.WatchListOff, // list, then watch
			Backoff:   informer.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second},
		},
	})
	stop := run(pods)
	defer stop()
	informer.WaitForCacheSync(context.Background(), pods)
	fmt.Println(pods.GetIndexer().Len(), pods.Stats().Lists)
	// Output: 1 1
}

// A consumer that cannot process an item yet puts it back with a
// *RequeueError: Pop returns the error it wraps, and the item is popped
// again later.
func ExampleRequeueError() {
	q := informer.NewFIFO(informer.MetaNamespaceKeyFunc[*corev1.Pod])
	q.Add(labelled("default", "web-1", "web"))
	busy := errors.New("database busy")
	_, err := q.Pop(func(p *corev1.Pod, _ bool) error {
		return &informer.RequeueError{Err: busy}
	})
	fmt.Println(errors.Is(err, busy), len(q.ListKeys()))
	q.Pop(func(p *corev1.Pod, _ bool) error {
		fmt.Println("processed", p.Name)
		return nil
	})
	// Output:
	// true 1
	// processed web-1
}

// WaitForCacheSync waits for anything with a HasSynced method, and for a
// plain function as a SyncFunc.
func ExampleSyncFunc() {
	ready := false
	check := informer.SyncFunc(func() bool { return ready })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	fmt.Println(informer.WaitForCacheSync(ctx, check) != nil) // never ready: the context ends
	ready = true
	fmt.Println(informer.WaitForCacheSync(context.Background(), check))
	// Output:
	// true
	// <nil>
}
