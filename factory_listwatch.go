package informer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// protobufDecodable is what the protobuf decoder of apimachinery needs of a
// type to decode into it: the methods generated for the built-in types.
type protobufDecodable interface {
	Reset()
	Unmarshal([]byte) error
}

// restListWatch lists and watches one resource through a REST client for
// its group and version, decoding with the factory's scheme, into T.
type restListWatch[T Object] struct {
	client    *rest.RESTClient
	resource  string
	namespace string // "" for every namespace, or a cluster-scoped resource
	tweak     func(*metav1.ListOptions)
	newList   func() runtime.Object
	items     func(list runtime.Object) []T
}

// newRESTListWatch returns the ListerWatcher of For with client-go's
// codecs: the resource of r, in sc.
func newRESTListWatch[T Object](f *Factory, r *apiResource, sc scope) (ListerWatcher[T], error) {
	mapping, list := r.mapping, r.list
	items, err := itemsOf[T](list)
	if err != nil {
		return nil, err
	}
	_, objProto := reflect.New(reflect.TypeFor[T]().Elem()).Interface().(protobufDecodable)
	_, listProto := reflect.New(list.Elem()).Interface().(protobufDecodable)
	client, err := f.restClient(mapping, objProto && listProto)
	if err != nil {
		return nil, err
	}
	return &restListWatch[T]{
		client:    client,
		resource:  mapping.Resource.Resource,
		namespace: sc.namespace,
		tweak:     sc.tweak,
		newList:   func() runtime.Object { return reflect.New(list.Elem()).Interface().(runtime.Object) },
		items:     items,
	}, nil
}

// List lists one page, as client-go's typed clients do.
func (lw *restListWatch[T]) List(ctx context.Context, opts metav1.ListOptions) (*ListPage[T], error) {
	list := lw.newList()
	res := lw.request(&opts, false).Do(ctx)
	if err := res.Error(); err != nil {
		return nil, err // the request's: transport, status
	}
	if err := res.Into(list); err != nil {
		if errors.As(err, new(apierrors.APIStatus)) {
			return nil, err // a Status object in a successful response
		}
		// The server answered, and its body cannot be read as the list:
		// retrying will not mend it.
		return nil, fmt.Errorf("%w: %s: %w", errUndecodable, lw.resource, err)
	}
	return pageOf(list, lw.items), nil
}

// pageOf returns list, of a type checked by itemsOf, as a ListPage with the
// items that items gives.
func pageOf[T Object](list runtime.Object, items func(runtime.Object) []T) *ListPage[T] {
	return &ListPage[T]{Items: items(list), ListMeta: ListMetaOf(list.(metav1.ListInterface))}
}

// Watch watches, as client-go's typed clients do: the watch decodes each
// event's object with the factory's scheme, and the Reflector converts it to
// T.
func (lw *restListWatch[T]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return lw.request(&opts, true).Watch(ctx)
}

// request is the GET of a LIST or a WATCH with opts, after tweak, as
// client-go's typed clients make it.
func (lw *restListWatch[T]) request(opts *metav1.ListOptions, watch bool) *rest.Request {
	if lw.tweak != nil {
		lw.tweak(opts)
	}
	if watch {
		opts.Watch = true
	}
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	return lw.client.Get().
		NamespaceIfScoped(lw.namespace, lw.namespace != "").
		Resource(lw.resource).
		VersionedParams(opts, metav1.ParameterCodec).
		Timeout(timeout)
}

// IsWatchListSemanticsUnSupported returns false: a REST client can ask a
// server for a watch-list stream. A server that refuses one makes the
// Reflector, in WatchListAuto mode, list instead.
func (lw *restListWatch[T]) IsWatchListSemanticsUnSupported() bool { return false }

// itemsOf checks that list, the Go type of T's list kind, is a pointer to
// a struct with list metadata and a field Items []E, where T is *E, and
// returns a function giving the items of such a list as a []T.
//
// The function copies each item into an allocation of its own (a shallow
// copy, made with reflection because For names T but not E), so that a
// cached object does not keep its whole list page alive.
func itemsOf[T Object](list reflect.Type) (func(runtime.Object) []T, error) {
	ptr := reflect.TypeFor[T]()
	if ptr.Kind() != reflect.Pointer {
		return nil, fmt.Errorf("%w: %v is not a pointer", ErrNotRegistered, ptr)
	}
	if list.Kind() != reflect.Pointer || list.Elem().Kind() != reflect.Struct ||
		!list.Implements(reflect.TypeFor[metav1.ListInterface]()) {
		return nil, fmt.Errorf("%w: the list type %v of %v is not a pointer to a struct with list metadata", ErrNotRegistered, list, ptr)
	}
	field, ok := list.Elem().FieldByName("Items")
	if !ok || field.Type != reflect.SliceOf(ptr.Elem()) {
		return nil, fmt.Errorf("%w: the list type %v of %v has no field Items []%v", ErrNotRegistered, list, ptr, ptr.Elem())
	}
	index, elem := field.Index, ptr.Elem()
	return func(l runtime.Object) []T {
		items := reflect.ValueOf(l).Elem().FieldByIndex(index)
		out := make([]T, items.Len())
		for i := range out {
			// Each item gets an allocation of its own, a shallow copy, as
			// client-go's reflector makes since 1.27: a pointer into the
			// list's array would keep the whole page, with stale versions
			// of the other objects, alive as long as this one is cached.
			v := reflect.New(elem)
			v.Elem().Set(items.Index(i))
			out[i] = v.Interface().(T)
		}
		return out
	}, nil
}
