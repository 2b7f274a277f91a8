package informer

import (
	"context"
	"fmt"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ForOptions configures the informer that For, ForUnstructured or
// ForMetadata returns. The zero value is usable: every field documents its
// default.
//
// The informer of a type is shared: the first call makes it with its
// options, and each later call either gets it, when its options agree, or an
// error wrapping ErrOptionsConflict, never an informer that silently
// ignores them. What agrees is said for each field.
type ForOptions[T Object] struct {
	// Namespace limits a namespaced resource to one namespace. Default:
	// FactoryOptions.Namespaces or FactoryOptions.Namespace. Later calls
	// must resolve to the same namespaces. It is an error for a
	// cluster-scoped resource, and with Namespaces.
	Namespace string
	// Namespaces makes one informer cache several namespaces of a
	// namespaced resource: it lists and watches each of them (see
	// MultiNamespaceListWatch), and its Lister reads them all, or one with
	// ByNamespace. It needs no permission beyond those namespaces. Default:
	// as for Namespace. Later calls must resolve to the same set, in any
	// order. The names must be distinct and not empty.
	Namespaces []string
	// LabelSelector and FieldSelector restrict the objects the informer
	// lists and watches, such as "app=web" or "spec.nodeName=node-1". They
	// are added (ANDed) to any selector FactoryOptions.TweakListOptions
	// sets. Default: none. On a later call, "" takes the informer's; any
	// other value must select the same (compared after parsing).
	LabelSelector, FieldSelector string
	// TweakListOptions edits the options of the informer's LIST and WATCH
	// requests, after FactoryOptions.TweakListOptions and the selectors
	// have. It is called from the informer's goroutines. Default: none. On
	// a later call, nil takes the informer's; any other value must be the
	// very same function value (as for Transform).
	TweakListOptions func(*metav1.ListOptions)
	// ResyncPeriod is the informer's default resync period for its
	// handlers (SharedIndexInformerOptions.DefaultResyncPeriod). Default:
	// FactoryOptions.DefaultResync. On a later call, 0 takes the
	// informer's, and any other value must equal it; a handler can still
	// have its own with HandlerOptions.ResyncPeriod.
	ResyncPeriod time.Duration
	// Transform rewrites each object before it is cached (see
	// SharedIndexInformerOptions.Transform). Default: none. On a later
	// call, nil takes the informer's transform, whatever it is; any other
	// value must be the very same function value the informer was made
	// with: a function declared at package level, or a func value stored
	// once and reused. Two func values made by evaluating a function
	// literal or a method value twice are different, even if they would
	// behave alike. SetTransform on the informer, before Start, replaces
	// its transform for every user of the informer, as in client-go.
	Transform TransformFunc[T]
	// Indexers are indexes added to the cache. On a later call, those the
	// informer does not have are added (with AddIndexers, also while it
	// runs); a name it has must come with the very same function value
	// (as for Transform), except NamespaceIndex, which agrees whenever both
	// functions index by namespace (as MetaNamespaceIndexFunc does; judged
	// by their results on probe objects). Default: none besides
	// NamespaceIndex.
	Indexers Indexers[T]
	// WrapListWatch, if set, wraps the ListerWatcher the factory makes for
	// the informer, so that a package such as shard can narrow or watch
	// what it lists (see shard.For). It is called once, when the informer
	// is made, with the factory's lock held: it must not call the factory.
	// On a later call, nil takes the informer's; any other value must be
	// the very same function value (as for Transform).
	WrapListWatch func(ListerWatcher[T]) ListerWatcher[T]
	// Compact makes the informer keep a compact store (see
	// SharedIndexInformerOptions.Compact): it keeps each listed or
	// streamed object's bytes as they came (the initial events of a
	// watch-list stream as a list's items), without decoding them, unless
	// it has a Transform or a WrapListWatch, which read objects. Default:
	// FactoryOptions.Informer.Compact. On a later call, false takes the
	// informer's; true must find a compact informer. It is an error for
	// ForProjection.
	Compact bool
}

// For returns the factory's shared informer of T, such as *corev1.Pod,
// making it on the first call, or an error: ErrNotRegistered if the
// factory's scheme does not know T under exactly one kind, ErrUnknownResource
// if the server does not serve that kind, ErrOptionsConflict (see
// ForOptions), ErrFactoryStopped, or the error of discovery. opts holds at
// most one ForOptions.
//
// The informer lists and watches the resource of T's kind through a REST
// client for its group and version, decoding with the factory's scheme.
// When T and its list type have the methods the protobuf decoder needs
// (Reset and Unmarshal([]byte) error), as the built-in types do, it asks
// for protobuf with JSON as a fallback, unless the factory's *rest.Config
// sets ContentType or AcceptContentTypes, which then apply as given
// (client-go's rule for its typed clients). Otherwise, as for CRD Go types,
// which servers only serve in JSON anyway, it asks for JSON only. The
// informer is named after the resource, such as "v1/pods", and its Lister
// reports that resource in NotFound errors.
//
// For resolves T's resource through discovery once; later calls for T
// contact no server. It does not start the informer: Factory.Start does,
// or did; the informer's own Run returns ErrRunByFactory.
func For[T Object](f *Factory, opts ...ForOptions[T]) (*SharedIndexInformer[T], error) {
	return ForContext(context.Background(), f, opts...)
}

// ForContext is For, with discovery bounded by ctx as well as by the
// factory's life: when ctx ends first, it returns an error wrapping ctx's
// cause, and makes no informer.
func ForContext[T Object](ctx context.Context, f *Factory, opts ...ForOptions[T]) (*SharedIndexInformer[T], error) {
	o, err := forOptions(f, opts)
	if err != nil {
		return nil, err
	}
	typ := reflect.TypeFor[T]()
	return build(ctx, f, o, what{typ: typ, api: typ}, typedHow[T]())
}

// ForType is ForContext for a Go type named at run time: typ, a pointer to
// a struct such as reflect.TypeFor[*corev1.Pod](), is the type of the
// objects the informer lists, decodes and caches, and T an interface type
// that typ implements (such as controller-runtime's client.Object), as
// which it hands them out. Every object it holds is a typ; it lists,
// watches and decodes as For of typ does.
//
// Each instantiation of For compiles the informer's generic code again for
// its type; ForType's serves every type of one T. A program that makes
// informers of many kinds it names at run time (a cache behind an
// interface, such as controller-runtime's) is then smaller by about 200 KB
// a kind, and pays an interface's method calls in place of a pointer's.
//
// The informer is the factory's informer of typ's resource, named as For's
// ("v1/pods"): a later For of typ, or ForType with another T, finds it and
// returns an error wrapping ErrOptionsConflict. A typ that is not a pointer
// to a struct implementing T is an error wrapping ErrNotRegistered; other
// errors and opts are as for For.
func ForType[T Object](ctx context.Context, f *Factory, typ reflect.Type, opts ...ForOptions[T]) (*SharedIndexInformer[T], error) {
	o, err := forOptions(f, opts)
	if err != nil {
		return nil, err
	}
	if typ == nil || typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %v is not a pointer to a struct that implements %v", ErrNotRegistered, typ, reflect.TypeFor[T]())
	}
	if err := handsOut[T](typ); err != nil {
		return nil, err
	}
	return build(ctx, f, o, what{typ: typ, api: typ}, erasedHow[T](typ))
}

// ForProjection returns the factory's shared informer of projections PP
// (*P) of the kind of TP (*T), such as *corev1.Pod: P is a struct the user
// writes, with an embedded wire.Meta[P] and a subset of T's fields at every
// level, each of T's type or a projection of it; no tags, no methods, no
// generated code. The informer decodes each object straight from the
// response bytes into a P, never building a T, and caches only P:
//
//	type PodSlim struct {
//		wire.Meta[PodSlim]
//		Spec struct {
//			NodeName   string
//			Containers []struct{ Name, Image string }
//		}
//	}
//	pods, err := informer.ForProjection[PodSlim, corev1.Pod](f)
//
// The mapping is checked here: a field T lacks, a type that does not
// match, or a wire.Meta other than P's own (a Meta[Q] pasted from another
// projection) is an error wrapping wire.ErrMismatch that names the field's
// path (see wire.NewDecoder for what a projection may hold).
// Keys, namespaces, resource versions, label selectors, indexers, listers,
// handlers and tombstones work with PP as with any type. The informer is
// shared per P, named like "v1/pods (PodSlim)"; FactoryOptions.Wire
// configures its decoding; on a relist it reuses unchanged cached objects
// as DecodeWire does. Other errors and opts are as for For.
//
// In a factory made by NewFactoryForClients, the informer lists and
// watches T through the clients and projects each object by encoding it
// in protobuf and decoding that, which gives the same P.
//
// P and T are structs, not pointers (PP and TP are inferred): for
// ForProjection[*PodSlim, corev1.Pod] or [PodSlim, *corev1.Pod], Go reports
// that **PodSlim (or **v1.Pod) does not satisfy the constraint. For of a
// projection is ErrNotRegistered, naming ForProjection. Generated listers,
// which assert *T, cannot read the cache (see clientgo.Indexer).
func ForProjection[P, T any, PP interface {
	*P
	Object
}, TP interface {
	*T
	Object
}](f *Factory, opts ...ForOptions[PP]) (*SharedIndexInformer[PP], error) {
	o, err := forOptions(f, opts)
	if err != nil {
		return nil, err
	}
	if o.Compact {
		return nil, fmt.Errorf("%w: a compact store keeps full objects, not projections", ErrInvalidOptions)
	}
	w := what{typ: reflect.TypeFor[PP](), api: reflect.TypeFor[TP](), flavor: reflect.TypeFor[P]().Name()}
	return build(context.Background(), f, o, w, projectionHow[PP, TP]())
}

// ForUnstructured returns the factory's shared informer of unstructured
// objects for the resource gvr (such as {Version: "v1", Resource: "pods"}),
// listing and watching through a dynamic client, in JSON. It makes the
// informer on the first call for gvr, named like "v1/pods (unstructured)".
// Errors and opts are as for For.
func ForUnstructured(f *Factory, gvr schema.GroupVersionResource, opts ...ForOptions[*unstructured.Unstructured]) (*SharedIndexInformer[*unstructured.Unstructured], error) {
	return forUnstructured(f, gvr, "ForUnstructured", opts)
}

// ForUnstructuredAs is ForUnstructured with the objects, each an
// *unstructured.Unstructured, handed out as T, an interface type they
// implement (such as controller-runtime's client.Object): as ForType is to
// For, one instantiation of the informer's code for every such informer of
// a program. The informer is the factory's informer of gvr's unstructured
// objects: ForUnstructured of gvr, or ForUnstructuredAs with another T,
// finds it and returns an error wrapping ErrOptionsConflict.
func ForUnstructuredAs[T Object](f *Factory, gvr schema.GroupVersionResource, opts ...ForOptions[T]) (*SharedIndexInformer[T], error) {
	return forUnstructured(f, gvr, "ForUnstructuredAs", opts)
}

// forUnstructured is ForUnstructured and ForUnstructuredAs, named fn in
// errors.
func forUnstructured[T Object](f *Factory, gvr schema.GroupVersionResource, fn string, opts []ForOptions[T]) (*SharedIndexInformer[T], error) {
	if f != nil && f.dynamic == nil {
		return nil, fmt.Errorf("%w: %s needs FactoryClients.Dynamic", ErrInvalidOptions, fn)
	}
	if err := handsOut[T](reflect.TypeFor[*unstructured.Unstructured]()); err != nil {
		return nil, err
	}
	return forResource(f, gvr, "unstructured", opts, dynamicHow[T]())
}

// ForMetadata returns the factory's shared informer of the metadata of the
// objects of the resource gvr, listing and watching through a metadata
// client (the server sends PartialObjectMetadata only, in protobuf). It makes
// the informer on the first call for gvr, named like "v1/pods (metadata)".
// Errors and opts are as for For.
func ForMetadata(f *Factory, gvr schema.GroupVersionResource, opts ...ForOptions[*metav1.PartialObjectMetadata]) (*SharedIndexInformer[*metav1.PartialObjectMetadata], error) {
	return forMetadata(f, gvr, "ForMetadata", opts)
}

// ForMetadataAs is ForMetadata with the objects, each a
// *metav1.PartialObjectMetadata, handed out as T, an interface type they
// implement (such as controller-runtime's client.Object), as
// ForUnstructuredAs is to ForUnstructured.
func ForMetadataAs[T Object](f *Factory, gvr schema.GroupVersionResource, opts ...ForOptions[T]) (*SharedIndexInformer[T], error) {
	return forMetadata(f, gvr, "ForMetadataAs", opts)
}

// forMetadata is ForMetadata and ForMetadataAs, named fn in errors.
func forMetadata[T Object](f *Factory, gvr schema.GroupVersionResource, fn string, opts []ForOptions[T]) (*SharedIndexInformer[T], error) {
	if f != nil && f.metadata == nil {
		return nil, fmt.Errorf("%w: %s needs FactoryClients.Metadata", ErrInvalidOptions, fn)
	}
	if err := handsOut[T](reflect.TypeFor[*metav1.PartialObjectMetadata]()); err != nil {
		return nil, err
	}
	return forResource(f, gvr, "metadata", opts, metadataHow[T]())
}

// handsOut returns an error wrapping ErrNotRegistered unless T is typ or
// an interface type that typ implements.
func handsOut[T Object](typ reflect.Type) error {
	if t := reflect.TypeFor[T](); typ != t && (t.Kind() != reflect.Interface || !typ.Implements(t)) {
		return fmt.Errorf("%w: %v is not a pointer to a struct that implements %v", ErrNotRegistered, typ, t)
	}
	return nil
}

// forResource is ForUnstructured and ForMetadata: the informer of kind
// flavor for gvr.
func forResource[T Object](f *Factory, gvr schema.GroupVersionResource, flavor string, opts []ForOptions[T], h how[T]) (*SharedIndexInformer[T], error) {
	o, err := forOptions(f, opts)
	if err != nil {
		return nil, err
	}
	if gvr.Version == "" || gvr.Resource == "" {
		return nil, fmt.Errorf("%w: incomplete GroupVersionResource %q", ErrInvalidOptions, gvr)
	}
	return build(context.Background(), f, o, what{gvr: gvr, flavor: flavor}, h)
}

// forOptions checks the factory and returns the one ForOptions of opts,
// validated.
func forOptions[T Object](f *Factory, opts []ForOptions[T]) (ForOptions[T], error) {
	var o ForOptions[T]
	switch {
	case f == nil:
		return o, fmt.Errorf("%w: nil *Factory", ErrInvalidOptions)
	case len(opts) > 1:
		return o, fmt.Errorf("%w: more than one ForOptions", ErrInvalidOptions)
	case len(opts) == 1:
		o = opts[0]
	}
	if o.ResyncPeriod < 0 {
		return o, fmt.Errorf("%w: negative ResyncPeriod %v", ErrInvalidOptions, o.ResyncPeriod)
	}
	for name, fn := range o.Indexers {
		if fn == nil {
			return o, fmt.Errorf("%w: nil IndexFunc for index %q", ErrInvalidOptions, name)
		}
	}
	if o.Namespace != "" && len(o.Namespaces) > 0 {
		return o, fmt.Errorf("%w: both Namespace and Namespaces", ErrInvalidOptions)
	}
	if err := checkNamespaces(o.Namespaces); err != nil {
		return o, err
	}
	var err error
	if o.LabelSelector, o.FieldSelector, err = normalizeSelectors(o.LabelSelector, o.FieldSelector); err != nil {
		return o, err
	}
	return o, nil
}
