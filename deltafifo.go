package informer

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedkube/informer/internal/deque"
)

// DeltaType is the kind of change a Delta records.
type DeltaType uint8

// The kinds of change.
const (
	Added DeltaType = iota + 1
	Updated
	Deleted
	// Replaced is queued by Replace when EmitDeltaTypeReplaced is set.
	Replaced
	// Sync is queued by Resync, and by Replace without EmitDeltaTypeReplaced.
	Sync
)

func (t DeltaType) String() string {
	switch t {
	case Added:
		return "Added"
	case Updated:
		return "Updated"
	case Deleted:
		return "Deleted"
	case Replaced:
		return "Replaced"
	case Sync:
		return "Sync"
	}
	return fmt.Sprintf("DeltaType(%d)", uint8(t))
}

// Delta is one change to an object.
type Delta[T any] struct {
	Type DeltaType
	// Object is the object after the change; for a deletion, its last
	// state. For a tombstone it is the last state known, which is the zero
	// T when none was known.
	Object T
	// Tombstone is set on a Deleted delta that Replace inferred because the
	// object was missing from the new list: the object's final state is
	// unknown.
	Tombstone *DeletedFinalStateUnknown[T]
}

// DeletedFinalStateUnknown describes an object that was deleted while the
// watch was down: a relist no longer has it, and Obj is the last state known
// of it, the zero T if none was known.
type DeletedFinalStateUnknown[T any] struct {
	Key string
	Obj T
}

// Deltas is the list of changes to one object, oldest first.
type Deltas[T any] []Delta[T]

// Oldest returns the oldest change, or nil if d is empty.
func (d Deltas[T]) Oldest() *Delta[T] {
	if len(d) == 0 {
		return nil
	}
	return &d[0]
}

// Newest returns the newest change, or nil if d is empty.
func (d Deltas[T]) Newest() *Delta[T] {
	if len(d) == 0 {
		return nil
	}
	return &d[len(d)-1]
}

// TransformFunc rewrites an object before it is queued or cached, for
// example to drop fields the program does not need. It may return its
// argument modified in place or a new object.
type TransformFunc[T any] func(T) (T, error)

// KnownObjects is what a DeltaFIFO needs from the store its consumer keeps:
// the keys it holds and the object under a key. *Indexer[T] and *Store[T]
// satisfy it. The DeltaFIFO calls it with its lock held.
type KnownObjects[T any] interface {
	ListKeys() []string
	GetByKey(key string) (T, bool)
}

// DeltaFIFOOptions configures a DeltaFIFO.
type DeltaFIFOOptions[T any] struct {
	// KeyFunction computes keys. The default reads the namespace and name
	// of a T that is a metav1.Object.
	KeyFunction KeyFunc[T]
	// KnownObjects is the consumer's store. With it, Delete ignores keys
	// neither queued nor known, Replace queues tombstones for known keys
	// missing from the list, and Resync queues Sync deltas. Optional.
	KnownObjects KnownObjects[T]
	// EmitDeltaTypeReplaced makes Replace queue Replaced deltas instead of
	// Sync, so that consumers can tell a relist from a resync.
	EmitDeltaTypeReplaced bool
	// Transformer, if set, rewrites objects given to Add, Update, Delete
	// and Replace before they are queued. Resync does not transform: known
	// objects were transformed when they were queued.
	Transformer TransformFunc[T]
}

// DeltaFIFO is a queue of per-object change lists. Each key is queued at
// most once; changes to a queued key are appended to its Deltas, except that
// two consecutive deletions collapse into the more informative one. It is
// the typed counterpart of client-go's cache.DeltaFIFO, including the methods
// client-go 1.33 removed (List, ListKeys, Get, GetByKey, AddIfNotPresent and
// requeueing).
type DeltaFIFO[T any] struct {
	keyFunc      KeyFunc[T]
	known        KnownObjects[T]
	emitReplaced bool
	transform    TransformFunc[T]

	syncState // its mu guards the fields below
	// Invariant: a key is in queue iff it is in items, and its Deltas are
	// never empty.
	items map[string]Deltas[T]
	queue deque.Deque[string]
}

// NewDeltaFIFO returns an empty DeltaFIFO.
func NewDeltaFIFO[T any](opts DeltaFIFOOptions[T]) *DeltaFIFO[T] {
	f := &DeltaFIFO[T]{
		keyFunc:      opts.KeyFunction,
		known:        opts.KnownObjects,
		emitReplaced: opts.EmitDeltaTypeReplaced,
		transform:    opts.Transformer,
		items:        make(map[string]Deltas[T]),
	}
	if f.keyFunc == nil {
		f.keyFunc = metaKeyFunc[T]
	}
	f.init()
	return f
}

// metaKeyFunc is MetaNamespaceKeyFunc for a T not known to be an Object.
func metaKeyFunc[T any](obj T) (string, error) {
	m, ok := any(obj).(metav1.Object)
	if !ok {
		return "", fmt.Errorf("informer: a %T has no object metadata; set a KeyFunction", obj)
	}
	name := m.GetName()
	if name == "" {
		return "", fmt.Errorf("%w: the object has no name", ErrEmptyKey)
	}
	if ns := m.GetNamespace(); ns != "" {
		return ns + "/" + name, nil
	}
	return name, nil
}

// KeyOf returns the key of the newest change in d; for a tombstone, the key
// it carries.
func (f *DeltaFIFO[T]) KeyOf(d Deltas[T]) (string, error) {
	newest := d.Newest()
	if newest == nil {
		var zero T
		return "", &KeyError[T]{Obj: zero, Err: ErrEmptyDeltas}
	}
	if newest.Tombstone != nil {
		return newest.Tombstone.Key, nil
	}
	return keyOf(f.keyFunc, newest.Object)
}

// Add queues an Added delta for obj.
func (f *DeltaFIFO[T]) Add(obj T) error { return f.change(Added, obj) }

// Update queues an Updated delta for obj.
func (f *DeltaFIFO[T]) Update(obj T) error { return f.change(Updated, obj) }

// Delete queues a Deleted delta for obj, unless its key is neither queued
// nor, with KnownObjects, known: there is nothing to delete then.
func (f *DeltaFIFO[T]) Delete(obj T) error { return f.change(Deleted, obj) }

func (f *DeltaFIFO[T]) change(t DeltaType, obj T) error {
	key, err := keyOf(f.keyFunc, obj)
	if err != nil {
		return err
	}
	obj, err = transformed(f.transform, key, obj)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.touchLocked()
	if err != nil {
		return err
	}
	if t == Deleted && !f.queuedOrKnownLocked(key) {
		return nil
	}
	f.queueLocked(key, Delta[T]{Type: t, Object: obj})
	return nil
}

func (f *DeltaFIFO[T]) queuedOrKnownLocked(key string) bool {
	if _, ok := f.items[key]; ok {
		return true
	}
	if f.known == nil {
		return false
	}
	_, ok := f.known.GetByKey(key)
	return ok
}

// queueLocked appends d to the Deltas of key, queueing the key if needed.
func (f *DeltaFIFO[T]) queueLocked(key string, d Delta[T]) {
	old, queued := f.items[key]
	deltas := append(old, d)
	if n := len(deltas); n >= 2 && deltas[n-1].Type == Deleted && deltas[n-2].Type == Deleted {
		// Two deletions in a row: keep the older one unless it is a
		// tombstone and so knows less than the newer one.
		if deltas[n-2].Tombstone != nil {
			deltas[n-2] = deltas[n-1]
		}
		deltas[n-1] = Delta[T]{}
		deltas = deltas[:n-1]
	}
	if !queued {
		f.queue.PushBack(key)
	}
	f.items[key] = deltas
	f.cond.Broadcast()
}

// AddIfNotPresent queues d, Deltas returned by Pop, unless its key is
// queued already. A consumer can use it to retry without overwriting newer
// changes.
func (f *DeltaFIFO[T]) AddIfNotPresent(d Deltas[T]) error {
	key, err := f.KeyOf(d)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addIfNotPresentLocked(key, d)
	return nil
}

func (f *DeltaFIFO[T]) addIfNotPresentLocked(key string, d Deltas[T]) {
	f.touchLocked()
	if _, ok := f.items[key]; ok {
		return
	}
	f.queue.PushBack(key)
	f.items[key] = slices.Clip(d) // later appends must not write into the caller's array
	f.cond.Broadcast()
}

// Pop waits until a key is queued or the DeltaFIFO is closed, removes the
// first key and passes its Deltas to process, which may be nil.
// isInInitialList tells whether the key came from the first Replace. Pop
// returns the Deltas and process's error; ErrClosed once the DeltaFIFO is
// closed and empty.
//
// process runs with the DeltaFIFO locked, so that the consumer can apply the
// Deltas to its KnownObjects store before Replace or Resync looks at it
// again; it must not call methods of this DeltaFIFO. If it returns a
// *RequeueError the Deltas are queued again (see RequeueError).
func (f *DeltaFIFO[T]) Pop(process func(d Deltas[T], isInInitialList bool) error) (Deltas[T], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.queue.Len() == 0 {
		if f.closed {
			return nil, ErrClosed
		}
		f.cond.Wait()
	}
	isInInitialList := !f.synced
	key, _ := f.queue.PopFront()
	if f.poppedLocked() {
		f.checkLocked()
	}
	d := f.items[key]
	delete(f.items, key)
	if process == nil {
		return d, nil
	}
	again, err := requeued(process(d, isInInitialList))
	if again {
		f.addIfNotPresentLocked(key, d)
	}
	return d, err
}

// Replace queues a Sync delta (Replaced with EmitDeltaTypeReplaced) for
// every object in list, then a tombstone for every key that is queued or, with
// KnownObjects, known, but missing from list: such objects were deleted
// while nobody watched. Tombstones for known keys are queued in the order of
// KnownObjects.ListKeys. On error the DeltaFIFO is unchanged.
// resourceVersion is not used.
func (f *DeltaFIFO[T]) Replace(list []T, resourceVersion string) error {
	keys := make([]string, len(list))
	objs := list
	if f.transform != nil {
		objs = make([]T, len(list))
	}
	for i, obj := range list {
		key, err := keyOf(f.keyFunc, obj)
		if err != nil {
			return err
		}
		keys[i] = key
		if f.transform != nil {
			if objs[i], err = transformed(f.transform, key, obj); err != nil {
				return err
			}
		}
	}
	t := Sync
	if f.emitReplaced {
		t = Replaced
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	listed := make(map[string]struct{}, len(keys))
	for i, key := range keys {
		listed[key] = struct{}{}
		f.queueLocked(key, Delta[T]{Type: t, Object: objs[i]})
	}
	deletions := 0
	for key, d := range f.items {
		if _, ok := listed[key]; ok {
			continue
		}
		last := d.Newest()
		obj := last.Object
		if last.Tombstone != nil {
			obj = last.Tombstone.Obj
		}
		f.queueLocked(key, tombstone(key, obj))
		deletions++
	}
	if f.known != nil {
		for _, key := range f.known.ListKeys() {
			if _, ok := listed[key]; ok {
				continue
			}
			if _, ok := f.items[key]; ok {
				continue
			}
			obj, _ := f.known.GetByKey(key)
			f.queueLocked(key, tombstone(key, obj))
			deletions++
		}
	}
	f.replacedLocked(len(listed) + deletions)
	return nil
}

func tombstone[T any](key string, obj T) Delta[T] {
	return Delta[T]{Type: Deleted, Object: obj, Tombstone: &DeletedFinalStateUnknown[T]{Key: key, Obj: obj}}
}

// Resync queues a Sync delta for every known object whose key is not
// queued, in the order of KnownObjects.ListKeys. Without KnownObjects it does
// nothing.
func (f *DeltaFIFO[T]) Resync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.known == nil {
		return nil
	}
	for _, key := range f.known.ListKeys() {
		if _, queued := f.items[key]; queued {
			continue
		}
		if obj, ok := f.known.GetByKey(key); ok {
			f.queueLocked(key, Delta[T]{Type: Sync, Object: obj})
		}
	}
	return nil
}

// List returns the newest object of every queued key, in unspecified order,
// skipping tombstones whose last state is unknown.
func (f *DeltaFIFO[T]) List() []T {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]T, 0, len(f.items))
	for _, d := range f.items {
		if obj := d.Newest().Object; !isNil(obj) {
			out = append(out, obj)
		}
	}
	return out
}

// ListKeys returns the queued keys in queue order.
func (f *DeltaFIFO[T]) ListKeys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, f.queue.Len())
	f.queue.All(func(key string) bool {
		out = append(out, key)
		return true
	})
	return out
}

// Get returns a copy of the Deltas queued under obj's key.
func (f *DeltaFIFO[T]) Get(obj T) (d Deltas[T], exists bool, err error) {
	key, err := keyOf(f.keyFunc, obj)
	if err != nil {
		return nil, false, err
	}
	d, exists = f.GetByKey(key)
	return d, exists, nil
}

// GetByKey returns a copy of the Deltas queued under key.
func (f *DeltaFIFO[T]) GetByKey(key string) (d Deltas[T], exists bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, exists = f.items[key]
	return slices.Clone(d), exists
}

// Len returns the number of queued keys.
func (f *DeltaFIFO[T]) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queue.Len()
}
