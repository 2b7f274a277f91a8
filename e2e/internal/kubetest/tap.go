package kubetest

import (
	"context"
	"sync"

	"github.com/typedkube/informer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Tap is a ListerWatcher that passes every call on to LW and records what it sees: the options
// of each List and Watch call, and the bookmarks the watches deliver, among them the
// k8s.io/initial-events-end bookmark that ends the initial events of a watch-list stream.
type Tap[T informer.Object] struct {
	LW informer.ListerWatcher[T]

	mu               sync.Mutex
	lists, watches   []metav1.ListOptions // guarded by mu
	bookmarks        int                  // guarded by mu
	initialEventsEnd []string             // guarded by mu; resource versions of such bookmarks
	events           int                  // guarded by mu; events other than bookmarks
}

// List implements informer.ListerWatcher.
func (t *Tap[T]) List(ctx context.Context, opts metav1.ListOptions) (*informer.ListPage[T], error) {
	t.mu.Lock()
	t.lists = append(t.lists, opts)
	t.mu.Unlock()
	return t.LW.List(ctx, opts)
}

// Watch implements informer.ListerWatcher.
func (t *Tap[T]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	t.mu.Lock()
	t.watches = append(t.watches, opts)
	t.mu.Unlock()
	w, err := t.LW.Watch(ctx, opts)
	if err != nil || w == nil {
		return w, err
	}
	tw := &tapWatch{in: w, out: make(chan watch.Event), stop: make(chan struct{}), observe: t.observe}
	go tw.loop()
	return tw, nil
}

func (t *Tap[T]) observe(ev watch.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ev.Type != watch.Bookmark {
		t.events++
		return
	}
	t.bookmarks++
	if m, ok := ev.Object.(metav1.Object); ok && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
		t.initialEventsEnd = append(t.initialEventsEnd, m.GetResourceVersion())
	}
}

// Lists returns the options of every List call so far.
func (t *Tap[T]) Lists() []metav1.ListOptions {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]metav1.ListOptions(nil), t.lists...)
}

// Watches returns the options of every Watch call so far.
func (t *Tap[T]) Watches() []metav1.ListOptions {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]metav1.ListOptions(nil), t.watches...)
}

// InitialEventsEnd returns the resource versions of the initial-events-end bookmarks seen.
func (t *Tap[T]) InitialEventsEnd() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.initialEventsEnd...)
}

// tapWatch forwards the events of in to out, showing each to observe first. Unlike
// watch.Filter, its goroutine also ends when the consumer has called Stop and no longer reads.
type tapWatch struct {
	in       watch.Interface
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
	observe  func(watch.Event)
}

func (w *tapWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *tapWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.in.Stop()
	})
}

func (w *tapWatch) loop() {
	defer close(w.out)
	for ev := range w.in.ResultChan() {
		w.observe(ev)
		select {
		case w.out <- ev:
		case <-w.stop:
			return
		}
	}
}
