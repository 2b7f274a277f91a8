package informer

import "fmt"

// ResourceEventHandler receives the changes an informer sees, typed. The
// informer calls the methods of one handler one at a time, in the order of
// the changes, from a goroutine of that handler; a handler that is slow
// delays only itself. Objects are shared with the informer's cache: never
// mutate them.
type ResourceEventHandler[T Object] interface {
	// OnAdd is called for an object the handler has not seen.
	// isInInitialList is true while the informer delivers the objects it
	// listed before it synced, or the cache contents replayed to a handler
	// added late.
	OnAdd(obj T, isInInitialList bool)
	// OnUpdate is called for a change to an object the handler has seen,
	// and on resync (then oldObj and newObj have the same resource version).
	// Several changes may be combined into one call.
	OnUpdate(oldObj, newObj T)
	// OnDelete is called for a deletion.
	OnDelete(obj DeletedObject[T])
}

// DeletedObject describes a deleted object.
type DeletedObject[T Object] struct {
	// Obj is the last state the informer knew. When FinalStateUnknown is
	// set, it may be older than the state that was deleted, and it is the
	// zero T if no state was known at all.
	Obj T
	// Key is the key the object was stored under, such as "ns/name".
	Key string
	// FinalStateUnknown reports that the deletion was inferred: a relist
	// no longer had the object, so the informer missed its deletion and
	// its final state.
	FinalStateUnknown bool
}

// ResourceEventHandlerFuncs is a ResourceEventHandler made of functions;
// a nil function ignores its notifications.
type ResourceEventHandlerFuncs[T Object] struct {
	AddFunc    func(obj T, isInInitialList bool)
	UpdateFunc func(oldObj, newObj T)
	DeleteFunc func(obj DeletedObject[T])
}

// OnAdd calls AddFunc if it is set.
func (f ResourceEventHandlerFuncs[T]) OnAdd(obj T, isInInitialList bool) {
	if f.AddFunc != nil {
		f.AddFunc(obj, isInInitialList)
	}
}

// OnUpdate calls UpdateFunc if it is set.
func (f ResourceEventHandlerFuncs[T]) OnUpdate(oldObj, newObj T) {
	if f.UpdateFunc != nil {
		f.UpdateFunc(oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc if it is set.
func (f ResourceEventHandlerFuncs[T]) OnDelete(obj DeletedObject[T]) {
	if f.DeleteFunc != nil {
		f.DeleteFunc(obj)
	}
}

// FilteringResourceEventHandler passes to Handler only the objects
// FilterFunc accepts. An update across the filter becomes an add (the new
// state is accepted, the old one was not) or a delete (the other way round),
// so that Handler sees a consistent set. A deletion whose object is unknown
// cannot be filtered and is passed on.
type FilteringResourceEventHandler[T Object] struct {
	FilterFunc func(obj T) bool
	Handler    ResourceEventHandler[T]
}

// OnAdd passes obj on if the filter accepts it.
func (f FilteringResourceEventHandler[T]) OnAdd(obj T, isInInitialList bool) {
	if f.FilterFunc(obj) {
		f.Handler.OnAdd(obj, isInInitialList)
	}
}

// OnUpdate passes the change on, as an update, an add or a delete depending
// on which states the filter accepts.
func (f FilteringResourceEventHandler[T]) OnUpdate(oldObj, newObj T) {
	switch older, newer := f.FilterFunc(oldObj), f.FilterFunc(newObj); {
	case older && newer:
		f.Handler.OnUpdate(oldObj, newObj)
	case newer:
		f.Handler.OnAdd(newObj, false)
	case older:
		f.Handler.OnDelete(DeletedObject[T]{Obj: oldObj, Key: objectKey(oldObj)})
	}
}

// OnDelete passes the deletion on if the filter accepts the object, or if
// the object is unknown.
func (f FilteringResourceEventHandler[T]) OnDelete(obj DeletedObject[T]) {
	if isNil(obj.Obj) || f.FilterFunc(obj.Obj) {
		f.Handler.OnDelete(obj)
	}
}

// handlerName names a handler by its Go type, for logs.
func handlerName(h any) string { return fmt.Sprintf("%T", h) }

// objectKey is MetaNamespaceKeyFunc for an object known to be valid.
func objectKey[T Object](obj T) string {
	key, _ := MetaNamespaceKeyFunc(obj)
	return key
}
