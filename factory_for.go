package informer

import (
	"context"
	"errors"
	"fmt"
	"github.com/typedkube/informer/wire"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
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
	// SharedIndexInformerOptions.Compact): it lists each object's bytes
	// and keeps them as they came, without decoding them, unless it has a
	// Transform or a WrapListWatch, which read objects. Default:
	// FactoryOptions.Informer.Compact. On a later call, false takes the
	// informer's; true must find a compact informer. It is an error for
	// ForProjection.
	Compact bool
}

// shared is one shared informer of a Factory and what it was made with.
type shared[T Object] struct {
	informer   *SharedIndexInformer[T]
	name       string
	namespaced bool
	// namespaces are the namespaces it watches, sorted: {""} for all (or
	// a cluster-scoped resource), one, or several.
	namespaces                   []string
	labelSelector, fieldSelector string                    // normalized; "" for none
	tweak                        func(*metav1.ListOptions) // ForOptions.TweakListOptions
	resync                       time.Duration
	transform                    TransformFunc[T]                        // ForOptions.Transform, not the factory's default
	wrap                         func(ListerWatcher[T]) ListerWatcher[T] // ForOptions.WrapListWatch
	compact                      bool                                    // the informer keeps a compact store
	codec                        recordCodec[T]                          // its codec, shared with its source; nil: its own
	sizer                        objectSizer[T]                          // the sizer of its objects; zero: NewSharedIndexInformer's
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
	if inf, found, err := existingFor(f, typ, o); found {
		return inf, err
	}
	s, mapping, list, err := sharedFor[T](ctx, f, o, resourceName)
	if err != nil {
		return nil, err
	}
	var d *wireDecoding[T]
	if f.clients == nil && f.opts.Decoding == DecodeWire {
		var derr error
		if d, derr = newWireDecoding(f, o, wire.NewDecoder[T, T]); derr != nil {
			d = nil
			f.opts.Logger.V(2).Info("Decoding with client-go's codecs: package wire cannot decode this type", "type", typ.String(), "reason", derr.Error())
		}
	}
	var raw *wire.Compact[T] // a compact store's codec, for a source that lists records
	if s.compact && d != nil {
		raw = wire.NewCompact(d.dec, wire.DecodedCacheSize)
		s.codec = raw
		if !d.reuse || o.WrapListWatch != nil || f.opts.Informer.Reflector.WatchList == WatchListOn {
			// Objects are what a transform, a wrapper or a watch-list
			// stream reads; a transform set later is found when d settles.
			raw = nil
		}
	}
	lw, err := scopedListWatch(f, s, func(sc scope) (ListerWatcher[T], error) {
		switch {
		case f.clients != nil:
			return clientListWatchFor[T](f, mapping, list, sc)
		case d != nil:
			_, protobuf := any(*new(T)).(protobufDecodable)
			wlw, err := newWireListWatch(f, mapping, sc, protobuf, d)
			if wlw != nil {
				wlw.compact = raw
			}
			return orNil(wlw, err)
		}
		return orNil(newRESTListWatch[T](f, mapping, list, sc))
	})
	if err != nil {
		return nil, err
	}
	return registerDecoded(f, s, typ, mapping, lw, o, d)
}

// existingFor returns the informer the factory already has for the Go type
// typ, joined with o (found is then true), or the error of a factory that
// cannot be used (found is true too).
func existingFor[T Object](f *Factory, typ reflect.Type, o ForOptions[T]) (inf *SharedIndexInformer[T], found bool, err error) {
	f.mu.Lock()
	if err := f.usableLocked(); err != nil {
		f.mu.Unlock()
		return nil, true, err
	}
	e := f.types[typ]
	f.mu.Unlock()
	if e == nil {
		return nil, false, nil
	}
	inf, err = join(f, e, o)
	return inf, true, err
}

// sharedFor resolves the resource of the kind of K (the Go type the server
// encodes, T itself for For) and returns the shared entry of an informer of
// it named by name, in the namespace o asks for, with the mapping and the
// Go type of K's list kind.
func sharedFor[K, T Object](ctx context.Context, f *Factory, o ForOptions[T], name func(schema.GroupVersionResource) string) (*shared[T], *meta.RESTMapping, reflect.Type, error) {
	gvk, list, err := kindOf[K](f.opts.Scheme)
	if err != nil {
		return nil, nil, nil, err
	}
	mapping, err := f.restMapping(ctx, gvk)
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := newShared(f, name(mapping.Resource), mapping, o)
	if err != nil {
		return nil, nil, nil, err
	}
	return s, mapping, list, nil
}

// registerDecoded registers the informer of s, as register does, and
// gives it to d, if not nil, which reads its transform and cache.
func registerDecoded[T Object](f *Factory, s *shared[T], typ reflect.Type, mapping *meta.RESTMapping, lw ListerWatcher[T], o ForOptions[T], d *wireDecoding[T]) (*SharedIndexInformer[T], error) {
	if d != nil {
		s.sizer = d.objectSizer()
	}
	inf, err := register(f, s, typ, mapping.Resource, lw, o)
	if err == nil && d != nil {
		d.inf.Store(inf)
	}
	return inf, err
}

// ForUnstructured returns the factory's shared informer of unstructured
// objects for the resource gvr (such as {Version: "v1", Resource: "pods"}),
// listing and watching through a dynamic client, in JSON. It makes the
// informer on the first call for gvr, named like "v1/pods (unstructured)".
// Errors and opts are as for For.
func ForUnstructured(f *Factory, gvr schema.GroupVersionResource, opts ...ForOptions[*unstructured.Unstructured]) (*SharedIndexInformer[*unstructured.Unstructured], error) {
	if f != nil && f.dynamic == nil {
		return nil, fmt.Errorf("%w: ForUnstructured needs FactoryClients.Dynamic", ErrInvalidOptions)
	}
	return forResource(f, gvr, "unstructured", opts, func(gvr schema.GroupVersionResource, sc scope) ListerWatcher[*unstructured.Unstructured] {
		var c dynamic.ResourceInterface = f.dynamic.Resource(gvr)
		if sc.namespace != "" {
			c = f.dynamic.Resource(gvr).Namespace(sc.namespace)
		}
		lw := ListWatchFromDynamic(c, sc.tweak)
		if watchListUnsupported(f.dynamic) { // the client carries client-go's marker, not its resources
			return WithoutWatchList(lw)
		}
		return lw
	})
}

// ForMetadata returns the factory's shared informer of the metadata of the
// objects of the resource gvr, listing and watching through a metadata
// client (the server sends PartialObjectMetadata only, in protobuf). It makes
// the informer on the first call for gvr, named like "v1/pods (metadata)".
// Errors and opts are as for For.
func ForMetadata(f *Factory, gvr schema.GroupVersionResource, opts ...ForOptions[*metav1.PartialObjectMetadata]) (*SharedIndexInformer[*metav1.PartialObjectMetadata], error) {
	if f != nil && f.metadata == nil {
		return nil, fmt.Errorf("%w: ForMetadata needs FactoryClients.Metadata", ErrInvalidOptions)
	}
	return forResource(f, gvr, "metadata", opts, func(gvr schema.GroupVersionResource, sc scope) ListerWatcher[*metav1.PartialObjectMetadata] {
		var c metadata.ResourceInterface = f.metadata.Resource(gvr)
		if sc.namespace != "" {
			c = f.metadata.Resource(gvr).Namespace(sc.namespace)
		}
		lw := ListWatchFromMetadata(c, sc.tweak)
		if watchListUnsupported(f.metadata) {
			return WithoutWatchList(lw)
		}
		return lw
	})
}

// forResource is ForUnstructured and ForMetadata: the informer of kind
// flavor for gvr, listing and watching with the ListerWatcher newLW makes
// for the resource, as the RESTMapper names it, and a scope (its namespace
// is "" for all, or cluster-scoped).
func forResource[T Object](f *Factory, gvr schema.GroupVersionResource, flavor string, opts []ForOptions[T],
	newLW func(gvr schema.GroupVersionResource, sc scope) ListerWatcher[T]) (*SharedIndexInformer[T], error) {
	o, err := forOptions(f, opts)
	if err != nil {
		return nil, err
	}
	if gvr.Version == "" || gvr.Resource == "" {
		return nil, fmt.Errorf("%w: incomplete GroupVersionResource %q", ErrInvalidOptions, gvr)
	}
	f.mu.Lock()
	if err := f.usableLocked(); err != nil {
		f.mu.Unlock()
		return nil, err
	}
	e := f.entries[flavoredName(gvr, flavor)]
	f.mu.Unlock()
	if e != nil {
		return join(f, e, o)
	}

	var mapping *meta.RESTMapping
	err = f.discover(context.Background(), resourceName(gvr), func(ctx context.Context) error {
		gvk, err := f.mapper.KindForWithContext(ctx, gvr)
		if err != nil {
			return err
		}
		mapping, err = f.mapper.RESTMappingWithContext(ctx, gvk.GroupKind(), gvk.Version)
		return err
	})
	if err != nil {
		return nil, err
	}
	gvr = mapping.Resource // canonical, if gvr named it otherwise
	s, err := newShared(f, flavoredName(gvr, flavor), mapping, o)
	if err != nil {
		return nil, err
	}
	lw, err := scopedListWatch(f, s, func(sc scope) (ListerWatcher[T], error) { return newLW(gvr, sc), nil })
	if err != nil {
		return nil, err
	}
	return register(f, s, nil, gvr, lw, o)
}

// wrapListWatch returns lw wrapped by o.WrapListWatch, if set.
func wrapListWatch[T Object](lw ListerWatcher[T], o ForOptions[T]) ListerWatcher[T] {
	if o.WrapListWatch == nil {
		return lw
	}
	return o.WrapListWatch(lw)
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

// register adds the informer s describes, made over lw, to the factory and
// starts it if the factory runs; if another call has made the informer
// meanwhile, it joins that one instead. typ is T for For, nil otherwise.
func register[T Object](f *Factory, s *shared[T], typ reflect.Type, gvr schema.GroupVersionResource, lw ListerWatcher[T], o ForOptions[T]) (*SharedIndexInformer[T], error) {
	f.mu.Lock()
	if err := f.usableLocked(); err != nil {
		f.mu.Unlock()
		return nil, err
	}
	if e := f.entries[s.name]; e != nil {
		f.mu.Unlock()
		return join(f, e, o)
	}
	s.resync = o.ResyncPeriod
	if s.resync == 0 {
		s.resync = f.opts.DefaultResync
	}
	s.transform = o.Transform
	s.wrap = o.WrapListWatch
	// Wrapped here, under the lock, once the informer is sure to be made:
	// never twice for one informer, nor for a call that joins another's.
	inf, err := NewSharedIndexInformer(wrapListWatch(lw, o), SharedIndexInformerOptions[T]{
		Name:                s.name,
		Resource:            gvr.GroupResource(),
		Indexers:            o.Indexers,
		DefaultResyncPeriod: s.resync,
		Transform:           transformFor(f, o),
		Queue:               f.opts.Informer.Queue,
		Reflector:           f.opts.Informer.Reflector,
		HandlerPanic:        f.opts.Informer.HandlerPanic,
		Metrics:             f.opts.Informer.metricsFor(s.name),
		NoLabelIndex:        f.opts.Informer.NoLabelIndex,
		Compact:             s.compact,
		codec:               s.codec,
		sizer:               s.sizer,
	})
	if err != nil {
		f.mu.Unlock()
		return nil, err
	}
	inf.byFactory = true
	s.informer = inf
	e := &factoryEntry{name: s.name, informer: inf, shared: s, done: make(chan struct{})}
	f.entries[s.name] = e
	f.order = append(f.order, e)
	if typ != nil {
		f.types[typ] = e
	}
	if f.runCtx != nil {
		f.startLocked(e)
	}
	f.mu.Unlock()
	return inf, nil
}

// join returns the informer of e to a caller asking for it with o, if o
// agrees with it (see ForOptions), after adding o's new indexers.
func join[T Object](f *Factory, e *factoryEntry, o ForOptions[T]) (*SharedIndexInformer[T], error) {
	s, ok := e.shared.(*shared[T])
	if !ok {
		var zero T
		return nil, fmt.Errorf("%w: %s has an informer of another Go type than %T", ErrOptionsConflict, e.name, zero)
	}
	ns, err := f.namespaces(s.name, s.namespaced, o)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(ns, s.namespaces) {
		return nil, fmt.Errorf("%w: %s watches %s, not %s", ErrOptionsConflict, s.name, namespaceText(s.namespaces), namespaceText(ns))
	}
	if o.LabelSelector != "" && o.LabelSelector != s.labelSelector {
		return nil, fmt.Errorf("%w: %s selects labels %q, not %q", ErrOptionsConflict, s.name, s.labelSelector, o.LabelSelector)
	}
	if o.FieldSelector != "" && o.FieldSelector != s.fieldSelector {
		return nil, fmt.Errorf("%w: %s selects fields %q, not %q", ErrOptionsConflict, s.name, s.fieldSelector, o.FieldSelector)
	}
	if o.TweakListOptions != nil && (s.tweak == nil || !sameFunc(o.TweakListOptions, s.tweak)) {
		return nil, fmt.Errorf("%w: %s was made with another TweakListOptions, or none", ErrOptionsConflict, s.name)
	}
	if o.ResyncPeriod != 0 && o.ResyncPeriod != s.resync {
		return nil, fmt.Errorf("%w: %s resyncs every %v, not %v (a handler may have its own period: HandlerOptions.ResyncPeriod)",
			ErrOptionsConflict, s.name, s.resync, o.ResyncPeriod)
	}
	if o.Transform != nil && (s.transform == nil || !sameFunc(o.Transform, s.transform)) {
		return nil, fmt.Errorf("%w: %s was made with another transform, or none", ErrOptionsConflict, s.name)
	}
	if o.WrapListWatch != nil && (s.wrap == nil || !sameFunc(o.WrapListWatch, s.wrap)) {
		return nil, fmt.Errorf("%w: %s was made with another WrapListWatch, or none", ErrOptionsConflict, s.name)
	}
	if o.Compact && !s.compact {
		return nil, fmt.Errorf("%w: %s keeps decoded objects, not a compact store", ErrOptionsConflict, s.name)
	}
	if err := addIndexers(s, o.Indexers); err != nil {
		return nil, err
	}
	return s.informer, nil
}

// addIndexers adds to the informer of s the indexers of want it does not
// have. An index it has must have the same function.
func addIndexers[T Object](s *shared[T], want Indexers[T]) error {
	for {
		have := s.informer.GetIndexer().GetIndexers()
		add := make(Indexers[T], len(want))
		for name, fn := range want {
			old, ok := have[name]
			if !ok {
				add[name] = fn
			} else if !sameFunc(old, fn) && !(name == NamespaceIndex && indexesNamespace(old) && indexesNamespace(fn)) {
				return fmt.Errorf("%w: %s has an index %q with another function: %w", ErrOptionsConflict, s.name, name, ErrIndexConflict)
			}
		}
		if len(add) == 0 {
			return nil
		}
		err := s.informer.AddIndexers(add)
		if !errors.Is(err, ErrIndexConflict) {
			return err
		}
		// Another call added one of these names meanwhile: look again.
	}
}

// indexesNamespace reports whether f indexes objects by namespace, as
// MetaNamespaceIndexFunc does, judged by what it returns for two probe
// objects: function values cannot be compared across packages, and an
// index means what it computes.
func indexesNamespace[T Object](f IndexFunc[T]) bool {
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return false
	}
	for _, ns := range []string{"informer-probe-namespace", ""} {
		obj, ok := reflect.New(typ.Elem()).Interface().(T)
		if !ok {
			return false
		}
		obj.SetNamespace(ns)
		obj.SetName("informer-probe")
		vals, err := callIndexFunc(f, obj)
		if err != nil || len(vals) != 1 || vals[0] != ns {
			return false
		}
	}
	return true
}

// callIndexFunc calls f, turning a panic into an error.
func callIndexFunc[T Object](f IndexFunc[T], obj T) (vals []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("informer: index function panicked: %v", r)
		}
	}()
	return f(obj)
}

// sameFunc reports whether a and b are the very same function value. A
// func value is a pointer to a closure record (the code pointer and the
// captured variables): equal pointers mean the same function with the same
// captured state. Comparing the code pointers alone, as
// reflect.Value.Pointer does, would take two closures of one function
// literal over different variables for the same function.
// F is a func type.
func sameFunc[F any](a, b F) bool { return samePointer(a, b) }

// resourceName names the informer of For for gvr: "v1/pods",
// "apps/v1/deployments".
func resourceName(gvr schema.GroupVersionResource) string {
	return gvr.GroupVersion().String() + "/" + gvr.Resource
}

// flavoredName names the informer of ForUnstructured or ForMetadata.
func flavoredName(gvr schema.GroupVersionResource, flavor string) string {
	return resourceName(gvr) + " (" + flavor + ")"
}

// kindOf returns the kind of T in scheme, and the Go type of its list kind
// (Kind+"List").
func kindOf[T Object](scheme *runtime.Scheme) (schema.GroupVersionKind, reflect.Type, error) {
	typ := reflect.TypeFor[T]()
	var gvk schema.GroupVersionKind
	switch typ {
	case reflect.TypeFor[*unstructured.Unstructured]():
		return gvk, nil, fmt.Errorf("%w: %v: use ForUnstructured", ErrNotRegistered, typ)
	case reflect.TypeFor[*metav1.PartialObjectMetadata]():
		return gvk, nil, fmt.Errorf("%w: %v: use ForMetadata", ErrNotRegistered, typ)
	}
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return gvk, nil, fmt.Errorf("%w: %v is not a pointer to a struct", ErrNotRegistered, typ)
	}
	obj := reflect.New(typ.Elem()).Interface().(runtime.Object)
	gvks, unversioned, err := scheme.ObjectKinds(obj)
	switch {
	case err != nil && isProjection(typ):
		return gvk, nil, fmt.Errorf("%w: %v is a projection (it embeds wire.Meta): use ForProjection[%s, T], T being the API type it projects, such as corev1.Pod",
			ErrNotRegistered, typ, typ.Elem().Name())
	case err != nil:
		return gvk, nil, fmt.Errorf("%w: %v: %w", ErrNotRegistered, typ, err)
	case unversioned:
		return gvk, nil, fmt.Errorf("%w: %v is unversioned, not a resource", ErrNotRegistered, typ)
	case len(gvks) != 1:
		return gvk, nil, fmt.Errorf("%w: %v has %d kinds %v, want one", ErrNotRegistered, typ, len(gvks), gvks)
	}
	gvk = gvks[0]
	listKind := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	list, err := scheme.New(listKind)
	if err != nil {
		return gvk, nil, fmt.Errorf("%w: %v has no list kind %s: %w", ErrNotRegistered, typ, listKind.Kind, err)
	}
	return gvk, reflect.TypeOf(list), nil
}

// isProjection reports whether typ, a pointer to a struct, is a
// projection: whether the struct embeds a wire.Meta.
func isProjection(typ reflect.Type) bool {
	for i := range typ.Elem().NumField() {
		f := typ.Elem().Field(i)
		if f.Anonymous && f.Type.PkgPath() == reflect.TypeFor[wire.Options]().PkgPath() && strings.HasPrefix(f.Type.Name(), "Meta[") {
			return true
		}
	}
	return false
}

// restMapping maps gvk to its resource and scope.
func (f *Factory) restMapping(ctx context.Context, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	var mapping *meta.RESTMapping
	err := f.discover(ctx, gvk.GroupVersion().String()+"/"+gvk.Kind, func(ctx context.Context) error {
		var err error
		mapping, err = f.mapper.RESTMappingWithContext(ctx, gvk.GroupKind(), gvk.Version)
		return err
	})
	return mapping, err
}

// discover runs lookup, a RESTMapper query about what, and, if the mapper
// knew no match, resets the mapper, if it can be, and runs lookup again.
// It gives up when ctx or the factory's context ends.
func (f *Factory) discover(ctx context.Context, what string, lookup func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(f.ctx, func() { cancel(ErrFactoryStopped) })
	defer stop()
	err := lookup(ctx)
	if meta.IsNoMatchError(err) && ctx.Err() == nil {
		if f.resetMapper != nil {
			f.opts.Logger.V(4).Info("Discovering again: no match", "resource", what)
			f.resetMapper(ctx)
			err = lookup(ctx)
		}
	}
	switch {
	case err == nil:
		return nil
	case f.ctx.Err() != nil:
		return fmt.Errorf("%w: shut down during discovery of %s", ErrFactoryStopped, what)
	case ctx.Err() != nil:
		return fmt.Errorf("informer: discover %s: %w", what, context.Cause(ctx))
	case meta.IsNoMatchError(err):
		return fmt.Errorf("%w: %s: %w", ErrUnknownResource, what, err)
	}
	return fmt.Errorf("informer: discover %s: %w", what, err)
}
