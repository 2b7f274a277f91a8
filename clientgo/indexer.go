package clientgo

import (
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/internal/objmeta"
)

// ErrWrongType reports an object handed to an adapter that is not of the
// adapted type.
var ErrWrongType = fmt.Errorf("clientgo: object of the wrong type")

// Indexer returns x as a client-go cache.Indexer, for code written against
// client-go, such as generated listers:
//
//	pods := corev1listers.NewPodLister(clientgo.Indexer(inf.GetIndexer()))
//
// Reads go straight to x; objects come out as interface{} holding a T, and
// are shared with x: never mutate them. Writes convert their argument to T
// and fail with ErrWrongType otherwise; do not write to an informer's
// cache, which the informer owns. As with client-go's key functions, Get
// and Delete also take a cache.ExplicitKey, or a
// cache.DeletedFinalStateUnknown without its object, for the key alone.
// Index functions convert in both directions (GetIndexers, AddIndexers).
// Index with a bare *metav1.ObjectMeta, as client-go's listers ask the
// namespace index, runs the index function on a new T carrying its
// namespace, name, labels and annotations: T (or the informer's object
// type) must keep them in an ObjectMeta field, a projection's wire.Meta,
// or be *unstructured.Unstructured, or Index fails with ErrWrongType.
// LastStoreSyncResourceVersion returns, as client-go's store does, the
// resource version of the last write: the object's for Add, Update and
// Delete (none for a Delete by key alone), the given one for Replace and
// Bookmark. Resync does nothing.
//
// A generated lister asserts the type it was generated for: over the cache
// of a projection (informer.ForProjection, caching a *PodSlim rather than
// a *corev1.Pod), corev1listers.NewPodLister panics in client-go's type
// assertion at its first List or Get. Projections and generated listers
// cannot be combined; read a projection's cache with its informer's
// Lister, or, from client-go code, with cache.NewGenericLister, which
// returns runtime.Objects.
func Indexer[T informer.Object](x *informer.Indexer[T]) cache.Indexer {
	return &indexer[T]{x: x, typ: reflect.TypeFor[T]()}
}

type indexer[T informer.Object] struct {
	x *informer.Indexer[T]
	// typ is the Go type of the objects, for a T that an index function
	// is run on (see withMeta): T, or an informer's seam.ObjectType.
	typ reflect.Type
	// applied, if set, answers LastStoreSyncResourceVersion: for an
	// informer's cache, which the informer writes without the adapter.
	applied func() string

	mu sync.Mutex // guards rv
	rv string
}

var _ cache.Indexer = (*indexer[informer.Object])(nil)

func typed[T informer.Object](obj any) (T, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	t, ok := obj.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("%w: %T, want %T", ErrWrongType, obj, zero)
	}
	return t, nil
}

// keyOnly returns the key of obj when it names an object by its key alone,
// as client-go's key functions take it: a cache.ExplicitKey, or a
// tombstone without its object.
func keyOnly(obj any) (string, bool) {
	switch o := obj.(type) {
	case cache.ExplicitKey:
		return string(o), true
	case cache.DeletedFinalStateUnknown:
		if o.Obj == nil {
			return o.Key, true
		}
	}
	return "", false
}

func untyped[T any](objs []T) []any {
	out := make([]any, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}

func (a *indexer[T]) Add(obj any) error {
	t, err := typed[T](obj)
	if err != nil {
		return err
	}
	return a.wrote(t, a.x.Add(t))
}

func (a *indexer[T]) Update(obj any) error {
	t, err := typed[T](obj)
	if err != nil {
		return err
	}
	return a.wrote(t, a.x.Update(t))
}

func (a *indexer[T]) Delete(obj any) error {
	if key, ok := keyOnly(obj); ok {
		if item, found := a.x.GetByKey(key); found {
			return a.x.Delete(item)
		}
		return nil
	}
	t, err := typed[T](obj)
	if err != nil {
		return err
	}
	return a.wrote(t, a.x.Delete(t))
}

// wrote records t's resource version as the last write's, as client-go's
// store does, unless the write failed with err, which it returns.
func (a *indexer[T]) wrote(t T, err error) error {
	if err == nil {
		a.Bookmark(t.GetResourceVersion())
	}
	return err
}

func (a *indexer[T]) List() []any { return untyped(a.x.List()) }

func (a *indexer[T]) ListKeys() []string { return a.x.ListKeys() }

func (a *indexer[T]) LastStoreSyncResourceVersion() string {
	if a.applied != nil {
		return a.applied()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rv
}

func (a *indexer[T]) Bookmark(rv string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rv = rv
}

func (a *indexer[T]) Get(obj any) (any, bool, error) {
	if key, ok := keyOnly(obj); ok {
		return a.GetByKey(key)
	}
	t, err := typed[T](obj)
	if err != nil {
		return nil, false, err
	}
	item, ok, err := a.x.Get(t)
	if !ok || err != nil {
		return nil, ok, err
	}
	return item, true, nil
}

func (a *indexer[T]) GetByKey(key string) (any, bool, error) {
	item, ok := a.x.GetByKey(key)
	if !ok {
		return nil, false, nil
	}
	return item, true, nil
}

func (a *indexer[T]) Replace(list []any, rv string) error {
	objs := make([]T, len(list))
	for i, o := range list {
		t, err := typed[T](o)
		if err != nil {
			return err
		}
		objs[i] = t
	}
	if err := a.x.Replace(objs, rv); err != nil {
		return err
	}
	a.Bookmark(rv)
	return nil
}

func (a *indexer[T]) Resync() error { return nil }

func (a *indexer[T]) Index(indexName string, obj any) ([]any, error) {
	t, err := typed[T](obj)
	if err != nil {
		// client-go's listers ask the namespace index with a bare
		// *metav1.ObjectMeta: run the index function on a T carrying
		// that metadata.
		m, merr := meta.Accessor(obj)
		if merr != nil {
			return nil, err
		}
		if t, err = withMeta[T](a.typ, m); err != nil {
			return nil, err
		}
	}
	objs, err := a.x.Index(indexName, t)
	return untyped(objs), err
}

func (a *indexer[T]) IndexKeys(indexName, indexedValue string) ([]string, error) {
	return a.x.IndexKeys(indexName, indexedValue)
}

func (a *indexer[T]) ListIndexFuncValues(indexName string) []string {
	return a.x.ListIndexFuncValues(indexName)
}

func (a *indexer[T]) ByIndex(indexName, indexedValue string) ([]any, error) {
	objs, err := a.x.ByIndex(indexName, indexedValue)
	return untyped(objs), err
}

func (a *indexer[T]) GetIndexers() cache.Indexers {
	out := cache.Indexers{}
	for name, f := range a.x.GetIndexers() {
		out[name] = func(obj any) ([]string, error) {
			t, err := typed[T](obj)
			if err != nil {
				return nil, err
			}
			return f(t)
		}
	}
	return out
}

func (a *indexer[T]) AddIndexers(indexers cache.Indexers) error {
	add, err := typedIndexers[T](indexers)
	if err != nil {
		return err
	}
	return a.x.AddIndexers(add)
}

// typedIndexers converts client-go index functions to ours.
func typedIndexers[T informer.Object](indexers cache.Indexers) (informer.Indexers[T], error) {
	out := make(informer.Indexers[T], len(indexers))
	for name, f := range indexers {
		if f == nil {
			return nil, fmt.Errorf("clientgo: nil IndexFunc for index %q", name)
		}
		out[name] = func(t T) ([]string, error) { return f(t) }
	}
	return out, nil
}

// withMeta returns a new T, of typ, with the namespace, name, labels and
// annotations of m.
func withMeta[T informer.Object](typ reflect.Type, m metav1.Object) (T, error) {
	var zero T
	if typ == nil {
		return zero, fmt.Errorf("%w: %v is an interface type, and the objects' type is not known", ErrWrongType, reflect.TypeFor[T]())
	}
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return zero, fmt.Errorf("%w: %v is not a pointer to a struct", ErrWrongType, typ)
	}
	t, ok := reflect.New(typ.Elem()).Interface().(T)
	if !ok {
		return zero, fmt.Errorf("%w: %v", ErrWrongType, typ)
	}
	t.SetNamespace(m.GetNamespace())
	t.SetName(m.GetName())
	// The labels and annotations are written to the fields, not through
	// T's setters: called through an interface, they would keep every API
	// type's SetLabels and SetAnnotations in a program (see package objmeta).
	if l, a, ok := objmeta.Labels(t); ok {
		*l, *a = m.GetLabels(), m.GetAnnotations()
	} else if u, ok := any(t).(*unstructured.Unstructured); ok {
		u.SetLabels(m.GetLabels())
		u.SetAnnotations(m.GetAnnotations())
	} else {
		return zero, fmt.Errorf("%w: %v has no ObjectMeta or wire.Meta field", ErrWrongType, typ)
	}
	return t, nil
}
