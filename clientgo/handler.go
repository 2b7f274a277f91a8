package clientgo

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"

	"github.com/typedkube/informer"
)

// Handler returns h, a client-go event handler, as a typed handler for our
// informers. It is called as client-go's informers call it: OnAdd(obj,
// isInInitialList), OnUpdate(old, new), and OnDelete with the deleted object,
// or a cache.DeletedFinalStateUnknown when the final state is unknown (a
// deletion inferred from a relist).
func Handler[T informer.Object](h cache.ResourceEventHandler) informer.ResourceEventHandler[T] {
	return handler[T]{h}
}

type handler[T informer.Object] struct{ h cache.ResourceEventHandler }

func (a handler[T]) OnAdd(obj T, isInInitialList bool) { a.h.OnAdd(obj, isInInitialList) }
func (a handler[T]) OnUpdate(old, new T)               { a.h.OnUpdate(old, new) }
func (a handler[T]) OnDelete(d informer.DeletedObject[T]) {
	if d.FinalStateUnknown {
		a.h.OnDelete(cache.DeletedFinalStateUnknown{Key: d.Key, Obj: d.Obj})
		return
	}
	a.h.OnDelete(d.Obj)
}

// ListerWatcher returns lw, a client-go ListerWatcher (such as
// cache.NewListWatchFromClient's), as a typed one. Each listed item is
// converted to T once, copied into an allocation of its own so that it does
// not keep its page alive; an item that is not a T is an error wrapping
// ErrWrongType. Watch events pass through: the Reflector converts them. A
// lw carrying client-go's marker for lacking watch-list semantics keeps it.
func ListerWatcher[T informer.Object](lw cache.ListerWatcher) informer.ListerWatcher[T] {
	var out informer.ListerWatcher[T] = listerWatcher[T]{cache.ToListerWatcherWithContext(lw)}
	if watchlist.DoesClientNotSupportWatchListSemantics(lw) {
		out = informer.WithoutWatchList(out)
	}
	return out
}

type listerWatcher[T informer.Object] struct {
	lw cache.ListerWatcherWithContext
}

func (a listerWatcher[T]) List(ctx context.Context, opts metav1.ListOptions) (*informer.ListPage[T], error) {
	list, err := a.lw.ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, fmt.Errorf("clientgo: list of %T: %w", list, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("clientgo: items of %T: %w", list, err)
	}
	page := &informer.ListPage[T]{Items: make([]T, len(items)), ListMeta: informer.ListMetaOf(lm)}
	for i, item := range items {
		t, err := typed[T](item)
		if err != nil {
			return nil, err
		}
		// ExtractList points into the list's array: copy the item out.
		v := reflect.ValueOf(t)
		if v.Kind() == reflect.Pointer && !v.IsNil() {
			c := reflect.New(v.Elem().Type())
			c.Elem().Set(v.Elem())
			t = c.Interface().(T)
		}
		page.Items[i] = t
	}
	return page, nil
}

func (a listerWatcher[T]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return a.lw.WatchWithContext(ctx, opts)
}
