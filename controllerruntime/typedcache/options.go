package typedcache

import (
	"context"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/typedkube/informer"
)

// Options are what this cache adds to controller-runtime's cache.Options:
// the library's own strengths, each off or at its default in New. The zero
// value is usable: every field documents its default.
type Options struct {
	// Types are Go types the cache decodes itself, beyond client-go's
	// built-in kinds, which need no entry: For[T] for a CRD Go type
	// (decoded by package wire, straight from the JSON), Projection[P, T]
	// for a projection P that serves the readers of T. A typed kind the
	// cache does not know is still cached, decoded by client-go's codecs
	// as controller-runtime's own cache does. Default: none.
	Types []Typed
	// Decoding chooses how typed informers decode the API server's
	// responses. Default informer.DecodeWire; informer.DecodeClientGo
	// decodes with client-go's codecs.
	Decoding informer.DecodingMode
	// DropManagedFields leaves metadata.managedFields out of every cached
	// object, as controller-runtime's cache.TransformStripManagedFields
	// does, but while decoding: a typed informer never builds them, and
	// keeps reusing unchanged objects on a relist, which a transform
	// prevents. Informers of Unstructured and PartialObjectMetadata, and
	// typed ones decoded by client-go, drop them after decoding, from the
	// object's ObjectMeta field (or an unstructured object's map): a
	// client.Object of one's own that keeps its metadata elsewhere keeps
	// them unless its type is given with For. Default false: kept, as the
	// server sends them.
	DropManagedFields bool
	// Informer holds the options every informer of the cache gets (queue
	// mode, the Reflector's options such as WatchList, metrics, and
	// Compact: each object kept as its wire bytes and decoded on read, at
	// about a sixth of the heap of decoded objects; projections ignore it). Its
	// Reflector.WatchErrorHandler gives way to cache.Options'
	// DefaultWatchErrorHandler when that is set. Default: the informers'
	// defaults.
	Informer informer.InformerOptions
	// WatchHTTP1 sends each watch of the cache's informers over an HTTP/1.1
	// connection of its own, and its other requests through the manager's
	// client as before: informer.FactoryOptions.WatchHTTP1, for the typed
	// informers and the others alike. New returns an error wrapping
	// watchconn.ErrUnsupported for a *rest.Config that sets its own
	// Transport or TLS protocols without HTTP/1.1. Default false.
	WatchHTTP1 bool
	// WatchHTTP1IdleTimeout is informer.FactoryOptions.WatchHTTP1IdleTimeout:
	// how long a watch's reader waits for a byte (the apiserver sends a
	// bookmark about once a minute) before the watch is taken for dead and
	// watched again. Zero: watchconn.DefaultIdleTimeout; negative: never.
	WatchHTTP1IdleTimeout time.Duration
}

// Typed is a Go type the cache decodes itself: see For and Projection.
type Typed struct {
	typ  reflect.Type // the Go type readers ask for, such as *corev1.Pod
	make entryMaker
}

// For[T] makes the cache decode T, a Go type of a CRD registered in the
// manager's scheme, with package wire (Options.Types), rather than with
// client-go's codecs.
func For[T client.Object]() Typed {
	return Typed{typ: reflect.TypeFor[T](), make: typedMaker[T]}
}

// Projection[P, T] makes the cache keep projections P of the objects of
// T's kind (see informer.ForProjection: P mirrors a subset of T's fields,
// with an embedded wire.Meta[P]), decoded straight from the wire, and serve
// them to the code that reads T: Get, List and the event handlers of
// GetInformer get a T with P's fields filled in and the others empty. A
// controller whose code reads only those fields keeps its code; a field it
// reads outside P reads as empty. Transforms are given the *P.
func Projection[P, T any, PP interface {
	*P
	informer.Object
}, TP interface {
	*T
	client.Object
}]() Typed {
	return Typed{typ: reflect.TypeFor[TP](), make: projectionMaker[P, T, PP, TP]}
}

// New is controller-runtime's cache.NewCacheFunc for this cache, with the
// library's defaults (Options{}): the one line of a manager's options,
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{NewCache: typedcache.New})
//
// It takes the options controller-runtime's cache.New takes, and refuses,
// with an error wrapping ErrUnsupported, those it cannot honour.
func New(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	return newCache(cfg, opts, Options{})
}

// NewWith returns a cache.NewCacheFunc that makes caches with o:
//
//	ctrl.Options{NewCache: typedcache.NewWith(typedcache.Options{DropManagedFields: true})}
func NewWith(o Options) cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		return newCache(cfg, opts, o)
	}
}

// entryMaker makes the entry of one kind in a scope.
type entryMaker func(ctx context.Context, s *scope, k kind) (entry, error)

// kind is what an entry is made for: a kind, how readers see it, and where
// the server serves it.
type kind struct {
	gvk        schema.GroupVersionKind
	rep        representation
	gvr        schema.GroupVersionResource
	namespaced bool
	obj        client.Object // an object of the Go type readers ask for
}
