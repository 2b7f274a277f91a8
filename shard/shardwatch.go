package shard

import (
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedkube/informer"
)

// shardWatch is the watch a source gives the Reflector. It first passes on
// the events that move the store to its buckets (if the source's buckets
// changed since the store was filled), then the events of a watch of the
// server whose objects are in its buckets; with no inner watch (no
// bucket), it only waits to be ended. When the buckets change again, it
// ends with a bookmark at the resource version it reached, and the
// Reflector's next Watch moves the store from there.
type shardWatch[T informer.Object] struct {
	src    *source[T]
	inner  watch.Interface
	want   Buckets
	moving []watch.Event // the events of the move to want, passed on first
	pos    string        // resource version reached: the start, then each event's, passed on or dropped

	out       chan watch.Event
	stop      chan struct{}
	stopOnce  sync.Once
	moved     chan struct{} // closed when the buckets changed
	movedOnce sync.Once
	done      chan struct{}
	relist    atomic.Bool // ended asking for a relist
}

func newShardWatch[T informer.Object](src *source[T], inner watch.Interface, want Buckets, from string, moving []watch.Event) *shardWatch[T] {
	return &shardWatch[T]{
		src: src, inner: inner, want: want, moving: moving, pos: from,
		out: make(chan watch.Event), stop: make(chan struct{}), moved: make(chan struct{}), done: make(chan struct{}),
	}
}

func (w *shardWatch[T]) run() {
	defer close(w.done)
	defer close(w.out)
	defer w.src.forget(w)
	if w.inner != nil {
		defer w.inner.Stop()
	}
	if w.moving != nil {
		for _, ev := range w.moving {
			select {
			case w.out <- ev:
			case <-w.stop: // half moved: the Reflector lists next
				w.src.unsettle()
				return
			}
		}
		w.moving = nil
		w.src.settle(w.want)
	}
	var in <-chan watch.Event // nil, with no inner watch: only stop or moved
	if w.inner != nil {
		in = w.inner.ResultChan()
	}
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-w.stop:
			return
		case <-w.moved:
			w.endForMove()
			return
		case ev, ok = <-in:
			if !ok {
				return
			}
		}
		rv := ""
		if obj, isT := ev.Object.(T); isT {
			rv = obj.GetResourceVersion()
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				w.src.objects.Add(1)
				if !w.want.HasHash(Hash(field(obj, w.src.key))) {
					w.src.dropped.Add(1)
					w.reached(rv)
					continue
				}
			}
		}
		select {
		case w.out <- ev:
			w.reached(rv)
		case <-w.stop:
			return
		case <-w.moved: // ev is not passed on: the next watch, from pos, brings it again
			w.endForMove()
			return
		}
	}
}

// reached records the resource version of an event passed on or dropped.
func (w *shardWatch[T]) reached(rv string) {
	if rv != "" {
		w.pos = rv
	}
}

// endForMove passes on a bookmark at the resource version reached, so that
// the Reflector watches again from it at once, or asks for a relist if
// there is none.
func (w *shardWatch[T]) endForMove() {
	bm, ok := bookmark[T](w.pos)
	if !ok {
		w.relist.Store(true)
		return
	}
	select {
	case w.out <- watch.Event{Type: watch.Bookmark, Object: bm}:
	case <-w.stop:
	}
}

// move ends the watch because the buckets changed. It does not wait.
func (w *shardWatch[T]) move() { w.movedOnce.Do(func() { close(w.moved) }) }

func (w *shardWatch[T]) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}

func (w *shardWatch[T]) ResultChan() <-chan watch.Event { return w.out }

// Err tells the Reflector why the watch ended: informer.ErrRelist when the
// buckets changed and it could not end with a bookmark.
func (w *shardWatch[T]) Err() error {
	if w.relist.Load() {
		return fmt.Errorf("shard: owned buckets changed: %w", informer.ErrRelist)
	}
	return nil
}
