// Package watchqueue is a watch.Interface fed by an unbounded queue, for
// fake API sources: the source sends without ever blocking on the watcher,
// and a goroutine moves the events to the result channel in order.
package watchqueue

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedkube/informer/internal/deque"
)

// Watch delivers the events sent to it, in order, until Stop or the end of
// the context it was made with; then its result channel closes.
type Watch struct {
	mu    sync.Mutex // guards queue
	queue deque.Deque[watch.Event]
	more  chan struct{} // capacity 1: the queue grew
	done  chan struct{} // closed by Stop
	once  sync.Once
	ch    chan watch.Event
}

// New returns a Watch whose goroutine ends at Stop or when ctx ends.
func New(ctx context.Context) *Watch {
	w := &Watch{more: make(chan struct{}, 1), done: make(chan struct{}), ch: make(chan watch.Event)}
	go w.pump(ctx)
	return w
}

// Send queues ev. It never blocks.
func (w *Watch) Send(ev watch.Event) {
	w.mu.Lock()
	w.queue.PushBack(ev)
	w.mu.Unlock()
	select {
	case w.more <- struct{}{}:
	default:
	}
}

func (w *Watch) pump(ctx context.Context) {
	defer close(w.ch)
	for {
		w.mu.Lock()
		ev, ok := w.queue.PopFront()
		w.mu.Unlock()
		if !ok {
			select {
			case <-w.more:
				continue
			case <-w.done:
				return
			case <-ctx.Done():
				return
			}
		}
		select {
		case w.ch <- ev:
		case <-w.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Stop ends the watch. It may be called more than once.
func (w *Watch) Stop() { w.once.Do(func() { close(w.done) }) }

// ResultChan returns the events; it closes when the watch ends.
func (w *Watch) ResultChan() <-chan watch.Event { return w.ch }
