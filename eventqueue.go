package informer

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/typedkube/informer/internal/deque"
)

// eventKind is what an event tells the informer to do.
type eventKind uint8

const (
	evAdd eventKind = iota + 1
	evUpdate
	evDelete
	evReplace  // a relist: the whole new state, applied at once
	evResync   // deliver the cache to handlers whose resync is due
	evBookmark // the watch reached a resource version
)

// event is one entry of an eventQueue.
type event[T any] struct {
	kind eventKind
	// replayed marks an evAdd of the replay a watch from "" or "0" starts
	// with: its resource version says nothing of what came before it.
	replayed bool
	// key is the object's key: for evDelete always, for evAdd and
	// evUpdate unless the queue leaves it to the informer (see
	// eventQueue.checkKey), which it then is "".
	key  string
	obj  T             // evAdd, evUpdate, evDelete
	more *eventMore[T] // evReplace, evBookmark
}

// eventMore is what a relist or a bookmark carries beyond an event, kept
// apart so that the events of a watch, by far the most, stay small in the
// queue's buffer (40 bytes rather than 104, most of them pointers the
// garbage collector scans).
type eventMore[T any] struct {
	list []T // evReplace
	keys []string
	enc  *encodedList[T] // evReplace from a compact source: the list, instead of list and keys
	rv   string          // evReplace, evBookmark
}

// version returns the resource version of a relist or bookmark, "" for
// other events.
func (e *event[T]) version() string {
	if e.more == nil {
		return ""
	}
	return e.more.rv
}

// eventQueue is the informer's default queue. Unlike a DeltaFIFO it does not
// merge changes per key: it keeps every change in the order the watch
// delivered it, across keys, and queues a relist as one event that the
// informer applies at once (client-go's RealFIFO with atomic events, its
// default since 1.36). It implements ReflectorStore with its optional Resync
// and Bookmark methods.
//
// Keys and transforms are computed before the queue is locked.
type eventQueue[T any] struct {
	keyFunc KeyFunc[T]
	// checkKey, if set, says whether an added or updated object has the
	// key keyFunc would make, without making it: the event goes with key
	// "", and the informer's store, which applies it, finds the key it
	// already keeps for the object (Store.upsertVersion). An update, by
	// far the most common event, then allocates no key. Set before the
	// producers start.
	checkKey  func(T) error
	transform TransformFunc[T] // set before the informer starts, read-only after

	syncState // its mu guards events and the fields below
	events    deque.Deque[event[T]]

	// direct, if set, applies a change in the producer's goroutine: when
	// the consumer is waiting on an empty queue after the sync, a change is
	// applied at once instead of queued, which saves waking the consumer
	// for each event of a quiet watch. idle is set while the consumer
	// waits; inline while a producer applies a change (the consumer waits
	// for it, so that order holds).
	direct func(e event[T])
	idle   bool
	inline bool
	// burst is set by the producer (the Reflector, through noteBurst)
	// when another event has already arrived behind the one it is about
	// to write: that one is queued, so that a burst is applied in batches
	// by the consumer, as before direct applying, instead of one event at
	// a time in the producer's goroutine, each waking every handler.
	burst atomic.Bool

	// queued counts the events ever queued or applied directly, applied
	// those of them applied; appliedWake is closed (and cleared) when
	// applied grows or the queue closes, nil when no one waits (see
	// waitApplied).
	queued, applied uint64
	appliedWake     chan struct{}
}

// noteBurst records whether the producer has more events waiting; see
// burst.
func (q *eventQueue[T]) noteBurst(more bool) { q.burst.Store(more) }

// setDirect sets the function that applies a change in the producer's
// goroutine; it must be set before the producers start.
func (q *eventQueue[T]) setDirect(f func(e event[T])) { q.direct = f }

func newEventQueue[T any](keyFunc KeyFunc[T], transform TransformFunc[T]) *eventQueue[T] {
	q := &eventQueue[T]{keyFunc: keyFunc, transform: transform}
	q.init()
	return q
}

// Len returns the number of queued events.
func (q *eventQueue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.events.Len()
}

func (q *eventQueue[T]) Add(obj T) error    { return q.change(evAdd, obj, false) }
func (q *eventQueue[T]) Update(obj T) error { return q.change(evUpdate, obj, false) }
func (q *eventQueue[T]) Delete(obj T) error { return q.change(evDelete, obj, false) }

// addReplayed queues an add of a watch's replay (see replayAdder).
func (q *eventQueue[T]) addReplayed(obj T) error { return q.change(evAdd, obj, true) }

func (q *eventQueue[T]) change(kind eventKind, obj T, replayed bool) error {
	var key string
	var err error
	if q.checkKey != nil && kind != evDelete {
		err = checkedKey(q.checkKey, obj)
	} else {
		key, err = keyOf(q.keyFunc, obj)
	}
	if err != nil {
		return err
	}
	if obj, err = q.transformOne(key, obj); err != nil {
		return err
	}
	q.mu.Lock()
	q.touchLocked()
	if q.direct != nil && q.idle && q.synced && !q.burst.Load() && !q.inline && !q.closed && q.events.Len() == 0 {
		q.inline = true
		q.queued++
		q.mu.Unlock()
		q.direct(event[T]{kind: kind, replayed: replayed, key: key, obj: obj})
		q.mu.Lock()
		q.inline = false
		q.appliedLocked(1)
		if q.events.Len() > 0 || q.closed {
			q.cond.Signal()
		}
		q.mu.Unlock()
		return nil
	}
	q.pushLocked(event[T]{kind: kind, replayed: replayed, key: key, obj: obj})
	q.mu.Unlock()
	return nil
}

// transformOne applies the queue's transform to obj, whose key is key, or
// "" if it was left to the informer: an error then names the key.
func (q *eventQueue[T]) transformOne(key string, obj T) (T, error) {
	out, err := transformed(q.transform, key, obj)
	if err != nil && key == "" {
		if te := (*TransformError)(nil); errors.As(err, &te) {
			te.Key, _ = q.keyFunc(obj)
		}
	}
	return out, err
}

// Replace queues the new state as one event. It takes ownership of list,
// which it transforms in place. On error nothing is queued.
func (q *eventQueue[T]) Replace(list []T, resourceVersion string) error {
	keys := make([]string, len(list))
	for i, obj := range list {
		key, err := keyOf(q.keyFunc, obj)
		if err != nil {
			return err
		}
		keys[i] = key
	}
	if q.transform != nil {
		out := make([]T, len(list))
		for i, obj := range list {
			var err error
			if out[i], err = transformed(q.transform, keys[i], obj); err != nil {
				return err
			}
		}
		list = out
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pushLocked(event[T]{kind: evReplace, more: &eventMore[T]{list: list, keys: keys, rv: resourceVersion}})
	q.replacedLocked(q.events.Len())
	return nil
}

// replaceEncoded is Replace for a list from a compact source, which the
// informer's compact store keeps as it is. With a transform, whose input
// is an object, the list is decoded and transformed as Replace does.
func (q *eventQueue[T]) replaceEncoded(list *encodedList[T], resourceVersion string) error {
	if q.transform != nil {
		objs, _, err := list.decoded()
		if err != nil {
			return err
		}
		return q.Replace(objs, resourceVersion)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pushLocked(event[T]{kind: evReplace, more: &eventMore[T]{enc: list, rv: resourceVersion}})
	q.replacedLocked(q.events.Len())
	return nil
}

// Resync queues a resync of the handlers whose resync period is due.
func (q *eventQueue[T]) Resync() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pushLocked(event[T]{kind: evResync})
	return nil
}

// Bookmark queues the resource version the watch reached.
func (q *eventQueue[T]) Bookmark(resourceVersion string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pushLocked(event[T]{kind: evBookmark, more: &eventMore[T]{rv: resourceVersion}})
}

func (q *eventQueue[T]) pushLocked(e event[T]) {
	q.events.PushBack(e)
	q.queued++
	q.cond.Signal() // one consumer
}

// pop waits for events and moves up to max of them to dst. A batch never
// mixes events of the initial population with later ones, so initial tells
// whether the whole batch is part of the initial list. After applying the
// batch, the caller calls processed with its length. pop returns ok false
// once the queue is closed and empty.
func (q *eventQueue[T]) pop(dst []event[T], max int) (batch []event[T], initial, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.events.Len() == 0 || q.inline {
		if q.closed && q.events.Len() == 0 && !q.inline {
			return dst, false, false
		}
		q.idle = q.events.Len() == 0
		q.cond.Wait()
		q.idle = false
	}
	initial = !q.synced
	n := q.events.Len()
	if q.initial > 0 {
		n = min(n, q.initial)
	}
	for range min(n, max) {
		e, _ := q.events.PopFront()
		dst = append(dst, e)
	}
	return dst, initial, true
}

// processed records that n popped events were applied, and reports whether
// the queue has synced.
func (q *eventQueue[T]) processed(n int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.initial -= min(n, q.initial)
	q.checkLocked()
	q.appliedLocked(n)
	return q.synced
}

// appliedLocked records that n more events were applied.
func (q *eventQueue[T]) appliedLocked(n int) {
	q.applied += uint64(n)
	q.wakeAppliedLocked()
}

// wakeAppliedLocked wakes the waits of waitApplied, to look again.
func (q *eventQueue[T]) wakeAppliedLocked() {
	if q.appliedWake != nil {
		close(q.appliedWake)
		q.appliedWake = nil
	}
}

// Close makes pop report the end once the queue is empty, and ends the
// waits of waitApplied.
func (q *eventQueue[T]) Close() {
	q.syncState.Close()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.wakeAppliedLocked()
}

// waitApplied returns once every event queued before the call has been
// applied to the cache, ErrClosed if the queue closes first, or the
// context's error. Unlike a wait for a resource version, it also covers
// events that do not move the version: a relist that answers the version
// the cache has already applied, as one does when nothing was written
// since the last list.
func (q *eventQueue[T]) waitApplied(ctx context.Context) error {
	q.mu.Lock()
	target := q.queued
	for q.applied < target {
		if q.closed {
			q.mu.Unlock()
			return ErrClosed
		}
		if q.appliedWake == nil {
			q.appliedWake = make(chan struct{})
		}
		wake := q.appliedWake
		q.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		q.mu.Lock()
	}
	q.mu.Unlock()
	return nil
}
