package informer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	"github.com/typedkube/informer/watchconn"
	"github.com/typedkube/informer/wire"
)

// build is the one pipeline every For* takes, from its arguments to a
// running informer, in five steps, each in a file named for it. The For*
// differ only in what they hand to step 1 (a what) and step 3 (a how).
//
//  1. what (factory_kind.go): the kind, its REST mapping, the informer's
//     name. Package wire's decoding of the Go type, if it decodes with
//     package wire (factory_wire.go), is made first: a projection is
//     checked before any request.
//  2. where (factory_scope.go): namespaces, selectors, tweaks.
//  3. how (factory_source.go): the source, chosen in one place: package
//     wire or client-go's codecs over REST, the factory's clients, the
//     dynamic or metadata client, a projection, a compact store.
//  4. join or register (factory_join.go): the shared entry, the options
//     that must agree, indexers, transform. A call for an informer that
//     an earlier call made joins it first, and contacts no server.
//  5. start (factory_start.go): at once if the factory runs.
func build[T Object](ctx context.Context, f *Factory, o ForOptions[T], w what, h how[T]) (*SharedIndexInformer[T], error) {
	if inf, found, err := existing(f, w, o); found { // 4, for a later call
		return inf, err
	}
	d, err := decoding(f, o, h) // before 1
	if err != nil {
		return nil, err
	}
	r, err := w.resolve(ctx, f) // 1
	if err != nil {
		return nil, err
	}
	s, err := newShared(f, r, o) // 2
	if err != nil {
		return nil, err
	}
	s.objType = h.typ
	lw, err := source(f, r, s, o, h, d) // 3
	if err != nil {
		return nil, err
	}
	return register(f, w, r, s, lw, o, d) // 4, then 5
}

// Errors of a Factory. Each is returned wrapped, so test for them with
// errors.Is.
var (
	// ErrFactoryStopped reports a Factory that has been shut down, or
	// whose Start context has ended: it makes no more informers.
	ErrFactoryStopped = errors.New("informer: factory stopped")
	// ErrNotRegistered reports a Go type that the factory's scheme does not
	// know, or knows under more than one kind.
	ErrNotRegistered = errors.New("informer: type not registered in the scheme")
	// ErrUnknownResource reports a kind or resource that the server does
	// not serve (according to the RESTMapper).
	ErrUnknownResource = errors.New("informer: unknown resource")
	// ErrOptionsConflict reports ForOptions that the shared informer of
	// the type, made by an earlier call, cannot honour.
	ErrOptionsConflict = errors.New("informer: options conflict with the shared informer")
	// ErrNotStarted reports a Factory.WaitForCacheSync before Start.
	ErrNotStarted = errors.New("informer: factory not started")
	// ErrNotSynced reports informers whose caches did not sync before the
	// context of WaitForCacheSync or Factory.WaitForCacheSync ended, or
	// that stopped or failed to sync (see ErrSyncFailed) first.
	ErrNotSynced = errors.New("informer: caches not synced")
	// ErrNoInformer reports a name under which the factory has no
	// informer (Factory.Remove).
	ErrNoInformer = errors.New("informer: no such informer in the factory")
)

// FactoryOptions configures a Factory. The zero value is usable: every
// field documents its default.
type FactoryOptions struct {
	// Namespace limits the informers of namespaced resources to one
	// namespace; ForOptions.Namespace and Namespaces override it per type.
	// Informers of cluster-scoped resources ignore it. Default ""
	// (metav1.NamespaceAll): every namespace.
	Namespace string
	// Namespaces, instead of Namespace, makes each informer of a
	// namespaced resource cache these namespaces (see
	// ForOptions.Namespaces), unless its ForOptions name others. The names
	// must be distinct and not empty. Default: none.
	Namespaces []string
	// TweakListOptions, if set, edits the options of every LIST and WATCH
	// request of every informer, for example to set a label or field
	// selector. It is called from the informers' goroutines, concurrently.
	// Default: none.
	TweakListOptions func(*metav1.ListOptions)
	// DefaultTransform rewrites each object before it is cached, in every
	// informer made without ForOptions.Transform, for example to drop
	// managedFields (see SharedIndexInformerOptions.Transform). It has the
	// signature of client-go's cache.TransformFunc, and gets and must
	// return an object of the informer's Go type, such as a *corev1.Pod;
	// anything else is a *TransformError wrapping ErrUnexpectedObject,
	// handled as any transform's error (the list or event it came with is
	// refused and reported). It is called from the informers' goroutines,
	// concurrently. Default: none.
	DefaultTransform func(obj any) (any, error)
	// DefaultResync is the resync period of the informers made without
	// ForOptions.ResyncPeriod (see SharedIndexInformerOptions.
	// DefaultResyncPeriod). Default 0: no resync.
	DefaultResync time.Duration
	// Scheme maps Go types to kinds for For and decodes their responses.
	// Default client-go's kubernetes/scheme.Scheme, which knows the
	// built-in types. For CRD Go types, give a scheme where they are
	// registered (with the built-in types added too, if For is also used
	// with those). Never modify the scheme while the factory uses it.
	Scheme *runtime.Scheme
	// RESTMapper maps kinds to resources and tells which resources are
	// namespaced. Default: a mapper backed by discovery through cfg, which
	// discovers on first use and caches the result in memory. Whatever
	// the mapper, when it does not know a kind or resource and has a
	// Reset method (meta.ResettableRESTMapper), the factory resets it and
	// asks once more, so that a CRD installed after startup is found.
	RESTMapper meta.RESTMapper
	// Informer holds the options the factory gives every informer it
	// makes. Default: the informers' defaults.
	Informer InformerOptions
	// Decoding chooses how the informers of For decode responses in a
	// factory made by NewFactory. Default DecodeWire. ForProjection always
	// decodes with package wire.
	Decoding DecodingMode
	// Wire configures package wire's decoders, for DecodeWire and
	// ForProjection: which annotations to keep, dropping managedFields,
	// sharing strings and maps. Default: everything kept, strings shared,
	// and maps and managedFields' FieldsV1 bytes shared between the objects
	// of informers without a transform.
	Wire wire.Options
	// HTTPClient, if set, carries every request of a factory made by
	// NewFactory (lists, watches, discovery) instead of a client made from
	// the *rest.Config, which still gives the host, the content types and
	// the rate limits: for a program that shares one client, and its
	// connections, among its parts, as controller-runtime's manager does.
	// Shutdown leaves its idle connections open. Either way the factory's
	// lists and watches of package wire ask for gzip themselves and
	// inflate it (wire.RecordEncodingInflating), unless the *rest.Config
	// sets DisableCompression. Default: one made from the *rest.Config
	// with rest.HTTPClientFor.
	HTTPClient *http.Client
	// WatchHTTP1 sends each watch of the informers of a factory made by
	// NewFactory over an HTTP/1.1 connection of its own, and its other
	// requests (lists, discovery) as before (package watchconn; a factory
	// over clients, informertest's too, has no transport to change). A
	// watch event then costs the client no flow-control writes and one
	// hand-off fewer than over HTTP/2's shared connection
	// (docs/transport.md). The price: a connection per watch, and no
	// HTTP/2 health checks on it: in their place a watch that waited
	// WatchHTTP1IdleTimeout for a byte (the apiserver sends a bookmark
	// about once a minute) is taken for dead and watched again.
	// NewFactory returns an error wrapping watchconn.ErrUnsupported for a
	// *rest.Config that sets its own Transport or TLS protocols without
	// HTTP/1.1. Default false.
	WatchHTTP1 bool
	// WatchHTTP1IdleTimeout is watchconn.Options.IdleTimeout of the
	// watches WatchHTTP1 sends: how long a watch's reader waits for a byte
	// before the watch is ended and watched again from the last resource
	// version, and how long a watch request waits for its response.
	// Zero: watchconn.DefaultIdleTimeout (90 seconds). Negative: never (a
	// watch on a connection that died silently then ends when TCP
	// keep-alive or the watch's timeout notices).
	WatchHTTP1IdleTimeout time.Duration
	// Logger receives the factory's own log lines, such as discovery
	// refreshes. Informers log through the context given to Start
	// (klog.FromContext), as SharedIndexInformer.Run does. Default: none.
	Logger logr.Logger
}

// InformerOptions are the options of SharedIndexInformerOptions that a
// Factory gives every informer it makes. The zero value gives the
// informers' defaults.
type InformerOptions struct {
	// Queue chooses the informers' queue. Default QueueInOrder.
	Queue QueueMode
	// Reflector configures list and watch: WatchList mode, paging,
	// backoff, timeouts, WatchErrorHandler. Its ResyncPeriod and
	// ShouldResync must be zero: resync is set with
	// FactoryOptions.DefaultResync, ForOptions.ResyncPeriod and
	// HandlerOptions. Its Name is set per informer.
	Reflector ReflectorOptions
	// HandlerPanic is told about a handler call that panicked (see
	// SharedIndexInformerOptions.HandlerPanic). Default: log it.
	HandlerPanic func(ctx context.Context, handler string, recovered any)
	// Metrics, if set, is called once per informer the factory makes,
	// with its name, for the informer's Metrics (see
	// SharedIndexInformerOptions.Metrics); it may return nil. It is
	// called with the factory's lock held: it must not call the factory.
	// Default: none. Counters and gauges are in each informer's Stats.
	Metrics func(name string) Metrics
	// NoLabelIndex leaves the label index out of every informer the
	// factory makes (see SharedIndexInformerOptions.NoLabelIndex): their
	// Listers then test every object against a label selector, and a
	// write to their caches costs what it would without the index.
	// Default false: each informer keeps one.
	NoLabelIndex bool
	// Compact makes every informer keep a compact store (see
	// SharedIndexInformerOptions.Compact), which ForOptions.Compact asks
	// for one type. Default false. ForProjection ignores it: a projection
	// is small already.
	Compact bool
}

// Factory makes informers for any type, without generated code, and shares
// them: For[T] returns one informer per type however often it is called,
// ForUnstructured and ForMetadata one per resource. It finds the resource
// of a Go type through a scheme and a RESTMapper, and lists and watches it
// over a REST client made for that group and version, in protobuf where the
// type supports it.
//
// A Factory runs once: Start starts its informers, and those made later;
// Shutdown stops them all. Its methods are safe for concurrent use.
type Factory struct {
	cfg  *rest.Config // cfg given to NewFactory, with a rate limiter shared by the REST clients
	opts FactoryOptions
	http *http.Client // shared by every client of the factory
	// watches carries the watches of f.http when WatchHTTP1 is set.
	watches *watchconn.Splitter
	codecs  serializer.CodecFactory
	mapper  meta.RESTMapperWithContext
	// resetMapper makes the mapper forget what it discovered; nil if it
	// cannot.
	resetMapper func(context.Context)
	dynamic     dynamic.Interface  // nil in a factory of clients without one
	metadata    metadata.Interface // likewise
	clients     *FactoryClients    // set by NewFactoryForClients; cfg and http are nil then
	// typedClients returns the ListerWatcher of a typed client of
	// clients.Kube (see typedClientMapper.listWatch); nil without one.
	typedClients func(elem reflect.Type, sc scope) (ListerWatcher[Object], bool)
	// ctx bounds discovery; it ends at Shutdown. It carries opts.Logger.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex                     // guards the fields below
	entries map[string]*factoryEntry       // every informer, by name
	order   []*factoryEntry                // the same, in the order they were made
	types   map[reflect.Type]*factoryEntry // the informers of For, by type T
	runCtx  context.Context                // the context of Start, nil before Start
	stopRun context.CancelFunc             // cancels runCtx
	down    bool                           // Shutdown was called
	running sync.WaitGroup                 // the goroutines running informers
}

// factoryEntry is one informer of a Factory.
type factoryEntry struct {
	name     string
	informer interface {
		run(context.Context) error
		HasSynced() bool
		Synced() <-chan struct{}
		SyncFailure() error
		syncFailures() (uint64, <-chan struct{})
	}
	shared  any                // the *shared[T] of the informer
	started bool               // guarded by Factory.mu
	cancel  context.CancelFunc // stops the informer; set when started
	done    chan struct{}      // closed when Run has returned
	err     error              // what Run returned; read after done is closed
	// reported counts the SyncFailures WaitForCacheSync has returned: a
	// later call waits for a newer one.
	reported atomic.Uint64
}

// NewFactory returns a Factory making informers that list and watch through
// cfg. It contacts no server: discovery happens on the first For. It returns
// an error for invalid options or a cfg that client-go refuses.
func NewFactory(cfg *rest.Config, opts FactoryOptions) (*Factory, error) {
	if cfg == nil {
		return nil, fmt.Errorf("%w: nil *rest.Config", ErrInvalidOptions)
	}
	if err := validateFactoryOptions(&opts); err != nil {
		return nil, err
	}
	f := newFactory(opts)
	f.cfg = rest.CopyConfig(cfg)
	// Like a clientset: one rate limiter for every client, if cfg asks for
	// one; with QPS 0 each REST client gets client-go's default.
	if f.cfg.RateLimiter == nil && f.cfg.QPS > 0 {
		if f.cfg.Burst <= 0 {
			return nil, fmt.Errorf("%w: Burst must be positive when QPS is", ErrInvalidOptions)
		}
		f.cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(f.cfg.QPS, f.cfg.Burst)
	}
	var err error
	if f.http = opts.HTTPClient; f.http == nil {
		if f.http, err = rest.HTTPClientFor(f.cfg); err != nil {
			return nil, fmt.Errorf("informer: HTTP client for the factory: %w", err)
		}
	}
	rt := f.http.Transport
	if opts.WatchHTTP1 {
		if f.watches, err = watchconn.Transport(f.cfg, rt, watchconn.Options{IdleTimeout: opts.WatchHTTP1IdleTimeout}); err != nil {
			return nil, fmt.Errorf("informer: WatchHTTP1: %w", err)
		}
		rt = f.watches
	}
	// Through the same transport, and so the same connections, watches
	// learn whether the server compressed them (see wire.RecordEncoding).
	// Unless cfg disables compression, they inflate the watch-list
	// streams themselves (wire.RecordEncodingInflating).
	record := wire.RecordEncodingInflating
	if f.cfg.DisableCompression {
		record = wire.RecordEncoding
	}
	f.http = &http.Client{
		Transport:     record(rt),
		CheckRedirect: f.http.CheckRedirect,
		Jar:           f.http.Jar,
		Timeout:       f.http.Timeout,
	}
	if f.dynamic, err = dynamic.NewForConfigAndClient(f.cfg, f.http); err != nil {
		return nil, fmt.Errorf("informer: dynamic client for the factory: %w", err)
	}
	if f.metadata, err = metadata.NewForConfigAndClient(f.cfg, f.http); err != nil {
		return nil, fmt.Errorf("informer: metadata client for the factory: %w", err)
	}
	if opts.RESTMapper != nil {
		f.setMapper(opts.RESTMapper)
	} else {
		// Discovery makes many requests at once: it keeps its own limits
		// (client-go's discovery defaults), not the shared rate limiter.
		dc, err := discovery.NewDiscoveryClientForConfigAndClient(rest.CopyConfig(cfg), f.http)
		if err != nil {
			return nil, fmt.Errorf("informer: discovery client for the factory: %w", err)
		}
		m := restmapper.NewDeferredDiscoveryRESTMapperWithContext(memory.NewMemCacheClientWithContext(dc))
		f.mapper, f.resetMapper = m, m.ResetWithContext
	}
	return f, nil
}

// validateFactoryOptions checks opts and fills in its defaults.
func validateFactoryOptions(opts *FactoryOptions) error {
	if opts.Namespace != "" && len(opts.Namespaces) > 0 {
		return fmt.Errorf("%w: both Namespace and Namespaces", ErrInvalidOptions)
	}
	if err := checkNamespaces(opts.Namespaces); err != nil {
		return err
	}
	opts.Namespaces = slices.Clone(opts.Namespaces)
	if opts.DefaultResync < 0 {
		return fmt.Errorf("%w: negative DefaultResync %v", ErrInvalidOptions, opts.DefaultResync)
	}
	if opts.Informer.Queue > QueueDeltaFIFO {
		return fmt.Errorf("%w: unknown QueueMode %d", ErrInvalidOptions, opts.Informer.Queue)
	}
	if opts.Decoding != DecodeWire && opts.Decoding != DecodeClientGo {
		return fmt.Errorf("%w: unknown DecodingMode %d", ErrInvalidOptions, opts.Decoding)
	}
	if opts.Informer.Reflector.ResyncPeriod != 0 || opts.Informer.Reflector.ShouldResync != nil {
		return fmt.Errorf("%w: set resync with DefaultResync, ForOptions or HandlerOptions, not in Informer.Reflector", ErrInvalidOptions)
	}
	// The informers' Reflector options, checked now with NewReflector's
	// rules rather than at each For.
	// Of Object, whose instantiation the informers of ForType and the As
	// functions share, rather than of a pointer type of its own.
	probe := ListWatchFuncs[Object]{}
	if _, err := NewReflector(probe, ReflectorStore[Object](discardStore[Object]{}), opts.Informer.Reflector); err != nil {
		return err
	}
	if opts.Scheme == nil {
		opts.Scheme = scheme.Scheme
	}
	return nil
}

// newFactory returns a Factory with validated opts and no clients.
func newFactory(opts FactoryOptions) *Factory {
	f := &Factory{
		opts:    opts,
		entries: make(map[string]*factoryEntry),
		types:   make(map[reflect.Type]*factoryEntry),
	}
	if opts.Scheme == scheme.Scheme {
		f.codecs = scheme.Codecs
	} else {
		f.codecs = serializer.NewCodecFactory(opts.Scheme)
	}
	f.ctx, f.cancel = context.WithCancel(klog.NewContext(context.Background(), opts.Logger))
	return f
}

// setMapper makes the factory map kinds and resources with m, resetting m
// when it can be.
func (f *Factory) setMapper(m meta.RESTMapper) {
	f.mapper = meta.ToRESTMapperWithContext(m)
	switch m := m.(type) {
	case meta.ResettableRESTMapperWithContext:
		f.resetMapper = m.ResetWithContext
	case interface{ Reset() }:
		f.resetMapper = func(context.Context) { m.Reset() }
	}
}
