package informer

import (
	"slices"

	"github.com/typedkube/informer/internal/deque"
)

// FIFO is a queue that keeps the latest object per key and hands keys out
// in the order they were first queued: adding an object whose key is already
// queued replaces the object and keeps its place. It is the typed counterpart
// of client-go's cache.FIFO, including the methods client-go 1.33 removed
// (List, ListKeys, Get, GetByKey, AddIfNotPresent and requeueing).
//
// The zero value is not usable; call NewFIFO.
type FIFO[T any] struct {
	keyFunc KeyFunc[T]

	syncState // its mu guards the fields below
	items     map[string]T
	// queue holds the keys to pop, in order. A key deleted after it was
	// queued stays in queue and Pop skips it; a key deleted and added
	// again is in queue twice and Pop skips the copy it finds missing.
	queue deque.Deque[string]
}

// NewFIFO returns an empty FIFO that keys objects with keyFunc. It panics if
// keyFunc is nil.
func NewFIFO[T any](keyFunc KeyFunc[T]) *FIFO[T] {
	if keyFunc == nil {
		panic("informer: NewFIFO with a nil KeyFunc")
	}
	f := &FIFO[T]{keyFunc: keyFunc, items: make(map[string]T)}
	f.init()
	return f
}

// Add queues obj: it replaces the object queued under its key, or queues
// the key at the end.
func (f *FIFO[T]) Add(obj T) error {
	key, err := keyOf(f.keyFunc, obj)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.touchLocked()
	if _, ok := f.items[key]; !ok {
		f.queue.PushBack(key)
	}
	f.items[key] = obj
	f.cond.Broadcast()
	return nil
}

// Update is Add.
func (f *FIFO[T]) Update(obj T) error { return f.Add(obj) }

// AddIfNotPresent queues obj unless an object with its key is queued, in
// which case it does nothing. A consumer can use it to retry an item
// without overwriting a newer one from the producer.
func (f *FIFO[T]) AddIfNotPresent(obj T) error {
	key, err := keyOf(f.keyFunc, obj)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addIfNotPresentLocked(key, obj)
	return nil
}

func (f *FIFO[T]) addIfNotPresentLocked(key string, obj T) {
	f.touchLocked()
	if _, ok := f.items[key]; ok {
		return
	}
	f.queue.PushBack(key)
	f.items[key] = obj
	f.cond.Broadcast()
}

// Delete drops the object queued under obj's key. The FIFO only hands out
// objects, so a deletion is not queued.
func (f *FIFO[T]) Delete(obj T) error {
	key, err := keyOf(f.keyFunc, obj)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.touchLocked()
	delete(f.items, key)
	return nil
}

// List returns the queued objects, in unspecified order.
func (f *FIFO[T]) List() []T {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]T, 0, len(f.items))
	for _, obj := range f.items {
		out = append(out, obj)
	}
	return out
}

// ListKeys returns the keys of the queued objects, in unspecified order.
func (f *FIFO[T]) ListKeys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.items))
	for key := range f.items {
		out = append(out, key)
	}
	return out
}

// Get returns the object queued under obj's key.
func (f *FIFO[T]) Get(obj T) (item T, exists bool, err error) {
	key, err := keyOf(f.keyFunc, obj)
	if err != nil {
		return item, false, err
	}
	item, exists = f.GetByKey(key)
	return item, exists, nil
}

// GetByKey returns the object queued under key.
func (f *FIFO[T]) GetByKey(key string) (item T, exists bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	item, exists = f.items[key]
	return item, exists
}

// Pop waits until an object is queued or the FIFO is closed, removes the
// first object and passes it to process, which may be nil. isInInitialList
// tells whether the object came from the first Replace. Pop returns the
// object and process's error; ErrClosed once the FIFO is closed and empty.
//
// process runs with the FIFO locked, so that it can update state that must
// stay in step with the queue; it must not call methods of this FIFO. If it
// returns a *RequeueError the object is queued again (see RequeueError).
func (f *FIFO[T]) Pop(process func(obj T, isInInitialList bool) error) (T, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Like client-go, the sync state changes by the initial entries this
	// call takes are applied when it returns, or before it waits.
	check := false
	defer func() {
		if check {
			f.checkLocked()
		}
	}()
	for {
		for f.queue.Len() == 0 {
			if f.closed {
				var zero T
				return zero, ErrClosed
			}
			if check {
				f.checkLocked()
				check = false
			}
			f.cond.Wait()
		}
		isInInitialList := !f.synced
		key, _ := f.queue.PopFront()
		if f.poppedLocked() {
			check = true
		}
		obj, ok := f.items[key]
		if !ok {
			continue // deleted after it was queued
		}
		delete(f.items, key)
		if process == nil {
			return obj, nil
		}
		again, err := requeued(process(obj, isInInitialList))
		if again {
			f.addIfNotPresentLocked(key, obj)
		}
		return obj, err
	}
}

// Replace makes the FIFO hold exactly list, queued in list order; when list
// has several objects with one key the last one wins, at the place of the
// first. On error the FIFO is unchanged. resourceVersion is not used.
func (f *FIFO[T]) Replace(list []T, resourceVersion string) error {
	keys := make([]string, len(list))
	items := make(map[string]T, len(list))
	for i, obj := range list {
		key, err := keyOf(f.keyFunc, obj)
		if err != nil {
			return err
		}
		keys[i] = key
		items[key] = obj
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replacedLocked(len(items))
	f.items = items
	f.queue.Clear()
	seen := make(map[string]struct{}, len(items))
	for _, key := range keys {
		if _, dup := seen[key]; !dup {
			seen[key] = struct{}{}
			f.queue.PushBack(key)
		}
	}
	if f.queue.Len() > 0 {
		f.cond.Broadcast()
	}
	return nil
}

// Resync queues again, in key order, every object whose key is not queued.
func (f *FIFO[T]) Resync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	queued := make(map[string]struct{}, f.queue.Len())
	f.queue.All(func(key string) bool {
		queued[key] = struct{}{}
		return true
	})
	var missing []string
	for key := range f.items {
		if _, ok := queued[key]; !ok {
			missing = append(missing, key)
		}
	}
	slices.Sort(missing)
	for _, key := range missing {
		f.queue.PushBack(key)
	}
	if f.queue.Len() > 0 {
		f.cond.Broadcast()
	}
	return nil
}
