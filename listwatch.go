package informer

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/watchlist"

	"github.com/typedkube/informer/internal/objmeta"
)

// ListPage is one page of a LIST response: the listed objects and the list
// metadata (ResourceVersion, Continue, RemainingItemCount).
type ListPage[T any] struct {
	Items []T
	metav1.ListMeta
	// encoded holds, from the compact source a Factory makes for a compact
	// informer, the objects as records instead of Items.
	encoded encodedList[T]
}

// ListMetaOf returns the list metadata of list, a client-go list such as a
// *corev1.PodList, an *unstructured.UnstructuredList or a
// *metav1.PartialObjectMetadataList, as a ListPage carries it: its
// resource version, continue token, remaining item count and shard info
// (which a server that filtered the list by ShardSelector echoes). A list
// that is a struct with a metav1.ListMeta field named ListMeta (every
// generated list type, and kubebuilder's) gives that field whole; any
// other gives its resource version and continue token only.
//
// It reads the field rather than calling GetRemainingItemCount and
// GetShardInfo through the interface: a method called through an
// interface keeps every reachable type's method of that name in a
// program's binary (about 55 KB each for the built-in list types).
func ListMetaOf(list metav1.ListInterface) metav1.ListMeta {
	if l, ok := list.(*unstructured.UnstructuredList); ok {
		lm := metav1.ListMeta{ResourceVersion: l.GetResourceVersion(), Continue: l.GetContinue(), RemainingItemCount: l.GetRemainingItemCount()}
		if sel, ok, _ := unstructured.NestedString(l.Object, "metadata", "shardInfo", "selector"); ok {
			lm.ShardInfo = &metav1.ShardInfo{Selector: sel}
		}
		return lm
	}
	if lm, ok := objmeta.List(list); ok {
		return *lm
	}
	return metav1.ListMeta{ResourceVersion: list.GetResourceVersion(), Continue: list.GetContinue()}
}

// ListerWatcher is the source a Reflector lists and watches.
//
// List returns one page of objects for opts; the Reflector asks for the
// next page with opts.Continue. Watch returns a client-go watch.Interface, so
// that every client-go watcher can be used: the Reflector converts the
// object of each event to T once, and reports an event whose object is not
// a T (other than the *metav1.Status of an ERROR event) as an *EventError
// wrapping ErrUnexpectedObject.
//
// Both must honour ctx: the Reflector cancels it to stop, and waits for
// them to return.
//
// A ListerWatcher that also has the method IsWatchListSemanticsUnSupported()
// returning true, client-go's marker carried by its fake clientsets, is never
// asked for a watch-list stream (see WatchListMode and WithoutWatchList).
type ListerWatcher[T Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (*ListPage[T], error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// ListWatchFuncs is a ListerWatcher made of two functions, for sources that
// have no client of their own, such as tests.
type ListWatchFuncs[T Object] struct {
	ListFunc  func(ctx context.Context, opts metav1.ListOptions) (*ListPage[T], error)
	WatchFunc func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// List calls ListFunc.
func (lw ListWatchFuncs[T]) List(ctx context.Context, opts metav1.ListOptions) (*ListPage[T], error) {
	return lw.ListFunc(ctx, opts)
}

// Watch calls WatchFunc.
func (lw ListWatchFuncs[T]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchFunc(ctx, opts)
}

// WithoutWatchList returns lw marked as not supporting watch-list streams,
// so that a Reflector in WatchListAuto mode lists and watches instead. Use it
// for sources that cannot send the initial-events-end bookmark, such as
// hand-written fakes. ListWatchFromClient, ListWatchFromDynamic and
// ListWatchFromMetadata mark client-go's fake clients themselves.
func WithoutWatchList[T Object](lw ListerWatcher[T]) ListerWatcher[T] {
	return noWatchList[T]{lw}
}

type noWatchList[T Object] struct{ ListerWatcher[T] }

// IsWatchListSemanticsUnSupported is client-go's marker; it returns true.
func (noWatchList[T]) IsWatchListSemanticsUnSupported() bool { return true }

// watchListUnsupported reports whether lw carries client-go's marker for a
// client that cannot serve watch-list streams, or is one of client-go's
// fake clients, which cannot either.
func watchListUnsupported(lw any) bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(lw) || isClientGoFake(lw)
}

// isClientGoFake reports whether c is a per-resource client of client-go's
// fakes, which lack the marker their clientsets carry: a typed client of a
// fake clientset (generated fakes embed client-go's testing.Fake, whose
// InvokesWatch they have), or one of the dynamic or metadata fakes.
func isClientGoFake(c any) bool {
	t := reflect.TypeOf(c)
	if t == nil {
		return false
	}
	if m, ok := t.MethodByName("InvokesWatch"); ok && m.Type.NumIn() == 2 && m.Type.In(1).PkgPath() == "k8s.io/client-go/testing" {
		return true
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.PkgPath() {
	case "k8s.io/client-go/dynamic/fake", "k8s.io/client-go/metadata/fake":
		return true
	}
	return false
}

// ListWatchFromClient returns a ListerWatcher over a client-go typed client,
// such as clientset.CoreV1().Pods(namespace). E is the object's struct type,
// usually the only type argument to give:
//
//	lw := informer.ListWatchFromClient[corev1.Pod](clientset.CoreV1().Pods(ns), nil)
//
// tweak, if not nil, edits the options of every List and Watch call, for
// example to set a label or field selector.
//
// L must be a pointer to a list struct with ListMeta and a field
// Items []E, as every generated client's list type is. ListWatchFromClient
// checks this once with reflection and panics if it does not hold, as that is
// a programming error (a type argument that does not match the client). Each
// LIST response then costs one reflective field read; each item is copied
// into its own allocation, like client-go's reflector does since 1.27
// (kubernetes/kubernetes#113305), so that a long-lived object does not keep
// the whole page it arrived in alive.
//
// If c has client-go's IsWatchListSemanticsUnSupported marker, the result
// carries it too, as it does for the typed clients of client-go's fake
// clientsets (and of fakes generated by client-gen), which cannot send the
// initial-events-end bookmark of a watch-list stream but lack the marker:
// an informer over one lists and watches, and syncs at once, rather than
// wait for InitialEventsTimeout before it falls back to a list.
func ListWatchFromClient[E any, T interface {
	*E
	Object
}, L runtime.Object](c interface {
	List(context.Context, metav1.ListOptions) (L, error)
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}, tweak func(*metav1.ListOptions)) ListerWatcher[T] {
	items, err := itemsField[E, L]()
	if err != nil {
		panic(err)
	}
	return &clientListWatch[E, T, L]{
		list:        c.List,
		watch:       c.Watch,
		tweak:       tweak,
		items:       items,
		noWatchList: watchListUnsupported(c),
	}
}

// ListWatchFromDynamic returns a ListerWatcher over a dynamic client for one
// resource, such as dyn.Resource(gvr).Namespace(ns). tweak and the marker
// (client-go's fake dynamic client included) are as for ListWatchFromClient.
func ListWatchFromDynamic(c dynamic.ResourceInterface, tweak func(*metav1.ListOptions)) ListerWatcher[*unstructured.Unstructured] {
	return &clientListWatch[unstructured.Unstructured, *unstructured.Unstructured, *unstructured.UnstructuredList]{
		list:        c.List,
		watch:       c.Watch,
		tweak:       tweak,
		items:       func(l *unstructured.UnstructuredList) []unstructured.Unstructured { return l.Items },
		noWatchList: watchListUnsupported(c),
	}
}

// ListWatchFromMetadata returns a ListerWatcher over a metadata client for
// one resource, such as md.Resource(gvr).Namespace(ns). tweak and the
// marker (client-go's fake metadata client included) are as for
// ListWatchFromClient.
func ListWatchFromMetadata(c metadata.ResourceInterface, tweak func(*metav1.ListOptions)) ListerWatcher[*metav1.PartialObjectMetadata] {
	return &clientListWatch[metav1.PartialObjectMetadata, *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList]{
		list:        c.List,
		watch:       c.Watch,
		tweak:       tweak,
		items:       func(l *metav1.PartialObjectMetadataList) []metav1.PartialObjectMetadata { return l.Items },
		noWatchList: watchListUnsupported(c),
	}
}

// clientListWatch adapts a client whose List returns L, a list of E.
type clientListWatch[E any, T interface {
	*E
	Object
}, L runtime.Object] struct {
	list        func(context.Context, metav1.ListOptions) (L, error)
	watch       func(context.Context, metav1.ListOptions) (watch.Interface, error)
	tweak       func(*metav1.ListOptions)
	items       func(L) []E
	noWatchList bool
}

// errNoListMeta reports a list type without list metadata.
var errNoListMeta = errors.New("informer: the list type has no list metadata")

// List lists with the client and copies each item out of the list.
func (lw *clientListWatch[E, T, L]) List(ctx context.Context, opts metav1.ListOptions) (*ListPage[T], error) {
	if lw.tweak != nil {
		lw.tweak(&opts)
	}
	l, err := lw.list(ctx, opts)
	if err != nil {
		return nil, err
	}
	// L is a pointer type, so a nil result is a nil interface value or a
	// nil pointer in it.
	if isNil(l) {
		return nil, fmt.Errorf("informer: List returned a nil %T and no error", l)
	}
	meta, ok := any(l).(metav1.ListInterface)
	if !ok {
		return nil, fmt.Errorf("%w: %T", errNoListMeta, l)
	}
	src := lw.items(l)
	page := &ListPage[T]{Items: make([]T, len(src)), ListMeta: ListMetaOf(meta)}
	for i := range src {
		item := new(E)
		*item = src[i]
		page.Items[i] = item
	}
	return page, nil
}

// Watch watches with the client.
func (lw *clientListWatch[E, T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if lw.tweak != nil {
		lw.tweak(&opts)
	}
	return lw.watch(ctx, opts)
}

// IsWatchListSemanticsUnSupported forwards client-go's marker from the
// client.
func (lw *clientListWatch[E, T, L]) IsWatchListSemanticsUnSupported() bool { return lw.noWatchList }

// itemsField checks that L is a pointer to a struct with list metadata and a
// field Items of type []E, and returns a function that reads that field.
func itemsField[E any, L runtime.Object]() (func(L) []E, error) {
	lt := reflect.TypeFor[L]()
	want := reflect.TypeFor[[]E]()
	if lt.Kind() != reflect.Pointer || lt.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("informer: ListWatchFromClient: list type %v is not a pointer to a struct", lt)
	}
	if !lt.Implements(reflect.TypeFor[metav1.ListInterface]()) {
		return nil, fmt.Errorf("informer: ListWatchFromClient: list type %v has no list metadata (GetResourceVersion, GetContinue)", lt)
	}
	f, ok := lt.Elem().FieldByName("Items")
	if !ok || !f.IsExported() || f.Type != want {
		return nil, fmt.Errorf("informer: ListWatchFromClient: list type %v has no field Items %v", lt, want)
	}
	index := f.Index
	return func(l L) []E {
		return reflect.ValueOf(l).Elem().FieldByIndex(index).Interface().([]E)
	}, nil
}
