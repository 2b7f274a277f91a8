package informer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/typedkube/informer/wire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// how is what a For* hands to step 3 of the pipeline: the ways its
// informer of T may list and watch, of which source chooses one.
type how[T Object] struct {
	// typ is the Go type of the objects: T, or for ForType a pointer type
	// that implements T.
	typ reflect.Type
	// decoder makes package wire's decoder of T from the bytes of the API
	// type; nil where package wire does not serve (ForUnstructured,
	// ForMetadata).
	decoder func(wire.Options) (*wire.Decoder[T], error)
	// protobuf tells whether the API type has protobuf (see
	// protobufDecodable).
	protobuf bool
	// projection: T is a projection (ForProjection), which only package
	// wire makes, and which a compact store does not keep.
	projection bool
	// listAccept and watchAccept, when set, are the Accept headers of
	// package wire's lists and watches, in place of the API type's own:
	// ForMetadata asks for the server's metadata views.
	listAccept, watchAccept string
	// client makes the ListerWatcher of one scope without package wire,
	// through client-go: the clients of a factory made by
	// NewFactoryForClients, a REST client with client-go's codecs, or the
	// dynamic or metadata client. d is the informer's decoding, or nil.
	client func(f *Factory, r *apiResource, sc scope, d *wireDecoding[T]) (ListerWatcher[T], error)
}

// typedHow is how For lists and watches T: with package wire, if the
// factory decodes with it and it can decode T, and else with client-go's
// codecs, or through the factory's clients.
func typedHow[T Object]() how[T] { return erasedHow[T](reflect.TypeFor[T]()) }

// erasedHow is how ForType lists and watches objects of typ, a pointer
// type that implements T, handed out as T: as For does for typ.
func erasedHow[T Object](typ reflect.Type) how[T] {
	return how[T]{
		typ:      typ,
		decoder:  func(opts wire.Options) (*wire.Decoder[T], error) { return wire.NewDecoderOf[T](typ, opts) },
		protobuf: typ.Implements(reflect.TypeFor[protobufDecodable]()),
		client: func(f *Factory, r *apiResource, sc scope, _ *wireDecoding[T]) (ListerWatcher[T], error) {
			if f.clients != nil {
				return clientListWatchFor[T](f, r, sc, typ)
			}
			return newRESTListWatch[T](f, r, sc, typ)
		},
	}
}

// projectionHow is how ForProjection lists and watches projections PP of
// TP: with package wire, or through the factory's clients, projecting each
// object through its protobuf encoding.
func projectionHow[PP, TP Object]() how[PP] {
	return how[PP]{
		typ: reflect.TypeFor[PP](),
		decoder: func(opts wire.Options) (*wire.Decoder[PP], error) {
			dec, err := wire.NewDecoder[PP, TP](opts)
			if err != nil {
				return nil, fmt.Errorf("informer: projection %v of %v: %w", reflect.TypeFor[PP]().Elem(), reflect.TypeFor[TP]().Elem(), err)
			}
			return dec, nil
		},
		protobuf:   reflect.TypeFor[TP]().Implements(reflect.TypeFor[protobufDecodable]()),
		projection: true,
		client: func(f *Factory, r *apiResource, sc scope, d *wireDecoding[PP]) (ListerWatcher[PP], error) {
			full, err := clientListWatchFor[TP](f, r, sc, reflect.TypeFor[TP]())
			if err != nil {
				return nil, err
			}
			return projectedListWatch(full, d), nil
		},
	}
}

// dynamicHow is how ForUnstructured and ForUnstructuredAs list and watch:
// through the factory's dynamic client, in JSON, handing out each
// *unstructured.Unstructured as a T.
func dynamicHow[T Object]() how[T] {
	typ := reflect.TypeFor[*unstructured.Unstructured]()
	return how[T]{
		typ: typ,
		client: func(f *Factory, r *apiResource, sc scope, _ *wireDecoding[T]) (ListerWatcher[T], error) {
			return handedOutAs[T](dynamicListWatch(f.dynamic, r.mapping.Resource, sc), typ), nil
		},
	}
}

// handedOutAs returns lw, whose objects are of typ (a From), as a
// ListerWatcher of T: lw itself if From is T, or one that converts each
// object (see ForUnstructuredAs).
func handedOutAs[T Object, From Object](lw ListerWatcher[From], typ reflect.Type) ListerWatcher[T] {
	if same, ok := any(lw).(ListerWatcher[T]); ok {
		return same
	}
	return convertedListWatch(lw, nil, func(obj From) (T, error) { return objectOf[T](obj, typ) })
}

// metadataHow is how ForMetadata and ForMetadataAs list and watch, handing
// out each *metav1.PartialObjectMetadata as a T: with package wire, as
// the server's metadata views (PartialObjectMetadataList for a list,
// PartialObjectMetadata for a watch's objects: protobuf, JSON as a
// fallback, as client-go's metadata client asks), if the factory decodes
// with it, and else through the factory's metadata client.
func metadataHow[T Object]() how[T] {
	typ := reflect.TypeFor[*metav1.PartialObjectMetadata]()
	return how[T]{
		typ:         typ,
		decoder:     func(opts wire.Options) (*wire.Decoder[T], error) { return wire.NewDecoderOf[T](typ, opts) },
		protobuf:    true,
		listAccept:  metadataAccept("PartialObjectMetadataList"),
		watchAccept: metadataAccept("PartialObjectMetadata"),
		client: func(f *Factory, r *apiResource, sc scope, _ *wireDecoding[T]) (ListerWatcher[T], error) {
			var c metadata.ResourceInterface = f.metadata.Resource(r.mapping.Resource)
			if sc.namespace != "" {
				c = f.metadata.Resource(r.mapping.Resource).Namespace(sc.namespace)
			}
			return handedOutAs[T](markedLike(f.metadata, ListWatchFromMetadata(c, sc.tweak)), typ), nil
		},
	}
}

// metadataAccept is the Accept header that asks the server for its
// metadata view kind (meta.k8s.io/v1) of the objects it serves, in
// protobuf, then JSON, then plain JSON for a server without the view.
func metadataAccept(kind string) string {
	view := ";as=" + kind + ";g=meta.k8s.io;v=v1"
	return runtime.ContentTypeProtobuf + view + "," + runtime.ContentTypeJSON + view + "," + runtime.ContentTypeJSON
}

// source returns the ListerWatcher of the informer of s: with package
// wire when d is set, over REST, and otherwise through client-go. For
// several namespaces it merges one ListerWatcher a namespace. It settles
// whether the informer keeps a compact store, and the store's codec.
func source[T Object](f *Factory, r *apiResource, s *shared[T], o ForOptions[T], h how[T], d *wireDecoding[T]) (ListerWatcher[T], error) {
	s.compact = !h.projection && (o.Compact || f.opts.Informer.Compact)
	var raw *wire.Compact[T] // a compact store's codec, for a source that lists and streams records
	if s.compact && d != nil {
		raw = wire.NewCompact(d.dec, wire.DecodedCacheSize)
		s.codec = raw
		if !d.reuse || o.WrapListWatch != nil {
			// Objects are what a transform or a wrapper reads; a
			// transform set later is found when d settles.
			raw = nil
		}
	}
	mk := func(sc scope) (ListerWatcher[T], error) {
		if f.clients != nil || d == nil {
			return h.client(f, r, sc, d)
		}
		return newWireListWatch(f, r.mapping, sc, h, d, raw, !s.compact)
	}
	if len(s.namespaces) == 1 {
		return mk(scope{namespace: s.namespaces[0], tweak: s.requests})
	}
	return MultiNamespaceListWatch(s.namespaces, func(ns string) (ListerWatcher[T], error) {
		return mk(scope{namespace: ns, tweak: s.requests})
	})
}

// dynamicListWatch lists and watches gvr in sc through c.
func dynamicListWatch(c dynamic.Interface, gvr schema.GroupVersionResource, sc scope) ListerWatcher[*unstructured.Unstructured] {
	var rc dynamic.ResourceInterface = c.Resource(gvr)
	if sc.namespace != "" {
		rc = c.Resource(gvr).Namespace(sc.namespace)
	}
	return markedLike(c, ListWatchFromDynamic(rc, sc.tweak))
}

// markedLike returns lw, marked as not supporting watch-list streams if
// client is (see watchListUnsupported): a per-resource client of a
// clientset that carries the marker may not.
func markedLike[T Object](client any, lw ListerWatcher[T]) ListerWatcher[T] {
	if watchListUnsupported(client) {
		return WithoutWatchList(lw)
	}
	return lw
}

// projectedListWatch lists and watches T through full and projects each
// object into PP through its protobuf encoding.
func projectedListWatch[PP, TP Object](full ListerWatcher[TP], d *wireDecoding[PP]) ListerWatcher[PP] {
	return convertedListWatch(full, nil, func(obj TP) (PP, error) {
		var zero PP
		m, ok := any(obj).(interface{ Marshal() ([]byte, error) })
		if !ok {
			return zero, fmt.Errorf("informer: %T has no protobuf encoding to project", obj)
		}
		b, err := m.Marshal()
		if err != nil {
			return zero, err
		}
		dec, _ := d.settle()
		return dec.Protobuf(b)
	})
}

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
// codecs: the resource of r, in sc, whose objects are of typ (T, or for
// ForType a type that implements T).
func newRESTListWatch[T Object](f *Factory, r *apiResource, sc scope, typ reflect.Type) (ListerWatcher[T], error) {
	mapping, list := r.mapping, r.list
	items, err := itemsOf[T](typ, list)
	if err != nil {
		return nil, err
	}
	_, objProto := reflect.New(typ.Elem()).Interface().(protobufDecodable)
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

// itemsOf checks that list, the Go type of the list kind of ptr (T, or a
// type that implements T), is a pointer to a struct with list metadata and
// a field Items []E, where ptr is *E, and returns a function giving the
// items of such a list as a []T.
//
// The function copies each item into an allocation of its own (a shallow
// copy, made with reflection because For names T but not E), as
// client-go's reflector does since 1.27: a pointer into the list's array
// would keep the whole page, with stale versions of the other objects,
// alive as long as the object is cached.
func itemsOf[T Object](ptr, list reflect.Type) (func(runtime.Object) []T, error) {
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
			v := reflect.New(elem)
			v.Elem().Set(items.Index(i))
			out[i] = v.Interface().(T)
		}
		return out
	}, nil
}
