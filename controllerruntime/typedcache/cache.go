package typedcache

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/watchconn"
)

// Cache is controller-runtime's cache.Cache on the library's informers.
// Make one with New or NewWith; a manager does, given either as its
// NewCache option.
type Cache struct {
	cfg        *rest.Config
	http       *http.Client
	watches    *watchconn.Splitter // carries c.http's watches with Options.WatchHTTP1
	scheme     *runtime.Scheme
	mapper     apimeta.RESTMapper
	codecs     serializer.CodecFactory
	paramCodec runtime.ParameterCodec
	logger     logr.Logger

	opts         Options
	informerOpts informer.InformerOptions
	types        map[reflect.Type]entryMaker // Options.Types, by the Go type readers ask for

	failOnMissing bool // ReaderFailOnMissingInformer
	// newInformer is cache.Options.NewInformer: when set, it makes every
	// informer of the cache (see newinformer.go).
	newInformer func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer
	// watchErrorHandler is cache.Options.DefaultWatchErrorHandler, for the
	// informers newInformer makes.
	watchErrorHandler toolscache.WatchErrorHandlerWithContext
	defaults          *router
	byGVK             map[schema.GroupVersionKind]*router // ByObject
	scopes            []*scope                            // every scope, once

	namespaced sync.Map // schema.GroupVersionKind -> bool, for routing

	mu          sync.Mutex // guards startCalled
	startCalled bool
	started     chan struct{} // closed once Start has started every scope
	stopped     chan struct{} // closed once Start has stopped every scope
}

var _ cache.Cache = (*Cache)(nil)

func newCache(cfg *rest.Config, opts cache.Options, o Options) (*Cache, error) {
	if cfg == nil {
		return nil, errors.New("typedcache: nil *rest.Config")
	}
	if opts.NewInformer != nil && len(o.Types) > 0 {
		return nil, fmt.Errorf("%w: NewInformer with Options.Types: the informers of those types are the library's", ErrUnsupported)
	}
	if o.Decoding != informer.DecodeWire && o.Decoding != informer.DecodeClientGo {
		return nil, fmt.Errorf("typedcache: unknown DecodingMode %d", o.Decoding)
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	c := &Cache{
		cfg: cfg, http: opts.HTTPClient, scheme: opts.Scheme, mapper: opts.Mapper,
		logger: ctrllog.Log.WithName("typedcache"), opts: o, informerOpts: o.Informer,
		types: make(map[reflect.Type]entryMaker), failOnMissing: opts.ReaderFailOnMissingInformer,
		newInformer: opts.NewInformer, watchErrorHandler: opts.DefaultWatchErrorHandler,
		byGVK: make(map[schema.GroupVersionKind]*router), started: make(chan struct{}), stopped: make(chan struct{}),
	}
	var err error
	if c.http == nil {
		if c.http, err = rest.HTTPClientFor(cfg); err != nil {
			return nil, fmt.Errorf("typedcache: HTTP client: %w", err)
		}
	}
	if o.WatchHTTP1 {
		if c.watches, err = watchconn.Transport(cfg, c.http.Transport, watchconn.Options{IdleTimeout: o.WatchHTTP1IdleTimeout}); err != nil {
			return nil, fmt.Errorf("typedcache: WatchHTTP1: %w", err)
		}
		c.http = &http.Client{Transport: c.watches, CheckRedirect: c.http.CheckRedirect, Jar: c.http.Jar, Timeout: c.http.Timeout}
	}
	if c.scheme == nil {
		c.scheme = scheme.Scheme
	}
	if c.mapper == nil {
		if c.mapper, err = apiutil.NewDynamicRESTMapper(cfg, c.http); err != nil {
			return nil, fmt.Errorf("typedcache: RESTMapper: %w", err)
		}
	}
	c.codecs = serializer.NewCodecFactory(c.scheme)
	c.paramCodec = runtime.NewParameterCodec(c.scheme)
	for _, t := range o.Types {
		if t.make == nil {
			return nil, errors.New("typedcache: a zero Typed in Options.Types: use For or Projection")
		}
		if _, dup := c.types[t.typ]; dup {
			return nil, fmt.Errorf("typedcache: %v is in Options.Types twice", t.typ)
		}
		c.types[t.typ] = t.make
	}
	if h := opts.DefaultWatchErrorHandler; h != nil {
		// client-go's handler takes a Reflector; ours have none of its type.
		// A stand-in that never runs carries the cache's name; the context
		// carries the informer's.
		stand := toolscache.NewReflectorWithOptions(&toolscache.ListWatch{}, nil, toolscache.NewStore(toolscache.MetaNamespaceKeyFunc), toolscache.ReflectorOptions{Name: "typedcache"})
		c.informerOpts.Reflector.WatchErrorHandler = func(ctx context.Context, err error) { h(ctx, stand, err) }
	}
	if err := c.layOut(&opts); err != nil {
		return nil, err
	}
	return c, nil
}

// layOut makes the routers and scopes of opts.
func (c *Cache) layOut(opts *cache.Options) error {
	specs := map[*scopeSpec]*scope{}
	scopesOf := func(r *routerSpec) error {
		for _, spec := range r.scopes {
			s, err := newScope(c, spec, c.cfg)
			if err != nil {
				return err
			}
			specs[spec] = s
			c.scopes = append(c.scopes, s)
		}
		return nil
	}
	spec, err := defaultRouter(opts)
	if err != nil {
		return err
	}
	if err := scopesOf(spec); err != nil {
		return err
	}
	c.defaults = newRouter(spec, specs)
	for obj, b := range opts.ByObject {
		gvk, err := apiutil.GVKForObject(obj, c.scheme)
		if err != nil {
			return fmt.Errorf("typedcache: ByObject: kind of %T: %w", obj, err)
		}
		if _, dup := c.byGVK[gvk]; dup {
			return fmt.Errorf("typedcache: ByObject names %v twice", gvk)
		}
		namespaced, err := apiutil.IsObjectNamespaced(obj, c.scheme, c.mapper)
		if err != nil {
			return fmt.Errorf("typedcache: ByObject: is %T namespaced: %w", obj, err)
		}
		spec, err := byObjectRouter(fmt.Sprintf("ByObject %v", gvk), opts, b, namespaced)
		if err != nil {
			return err
		}
		if err := scopesOf(spec); err != nil {
			return err
		}
		c.byGVK[gvk] = newRouter(spec, specs)
	}
	return nil
}

// routerFor returns the router of kind gvk.
func (c *Cache) routerFor(gvk schema.GroupVersionKind) *router {
	if r, ok := c.byGVK[gvk]; ok {
		return r
	}
	return c.defaults
}

// makerFor returns how to make the entry of k.
func (c *Cache) makerFor(k kind) entryMaker {
	if c.newInformer != nil {
		return clientGoMaker
	}
	switch k.rep {
	case unstructuredRep:
		return unstructuredMaker
	case metadataRep:
		return metadataMaker
	}
	if m := c.types[reflect.TypeOf(k.obj)]; m != nil {
		return m
	}
	if m := builtinMaker(k.obj); m != nil {
		return m
	}
	return fallbackMaker
}

// request is what one call of the cache is about.
type request struct {
	gvk schema.GroupVersionKind
	rep representation
	obj client.Object // an object of the Go type the caller reads
	r   *router
}

// requestFor returns the request of a call about obj.
func (c *Cache) requestFor(obj client.Object) (request, error) {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return request{}, err
	}
	return request{gvk: gvk, rep: representationOf(obj), obj: obj, r: c.routerFor(gvk)}, nil
}

// requestForList returns the request of a list call: its kind is the
// list's without "List", and obj an object of the item type.
func (c *Cache) requestForList(list client.ObjectList) (request, error) {
	gvk, err := apiutil.GVKForObject(list, c.scheme)
	if err != nil {
		return request{}, err
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	req := request{gvk: gvk, rep: representationOf(list), r: c.routerFor(gvk)}
	switch req.rep {
	case unstructuredRep:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		req.obj = u
	case metadataRep:
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		req.obj = m
	default:
		obj, err := c.scheme.New(gvk)
		if err != nil {
			return request{}, err
		}
		o, ok := obj.(client.Object)
		if !ok {
			return request{}, fmt.Errorf("typedcache: %T is not a client.Object", obj)
		}
		req.obj = o
	}
	return req, nil
}

func representationOf(obj runtime.Object) representation {
	switch obj.(type) {
	case runtime.Unstructured:
		return unstructuredRep
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return metadataRep
	}
	return typedRep
}

// kindOf returns the kind of req, with its resource and scope.
func (c *Cache) kindOf(req request) (kind, error) {
	m, err := c.mapper.RESTMapping(req.gvk.GroupKind(), req.gvk.Version)
	if err != nil {
		return kind{}, err
	}
	namespaced := m.Scope.Name() == apimeta.RESTScopeNameNamespace
	c.namespaced.Store(req.gvk, namespaced)
	return kind{gvk: req.gvk, rep: req.rep, gvr: m.Resource, namespaced: namespaced, obj: req.obj}, nil
}

// isNamespaced reports whether req's kind is namespaced.
func (c *Cache) isNamespaced(req request) (bool, error) {
	if v, ok := c.namespaced.Load(req.gvk); ok {
		return v.(bool), nil
	}
	k, err := c.kindOf(req)
	return k.namespaced, err
}

// entryIn returns the entry of req in s, making it if it is missing.
func (c *Cache) entryIn(ctx context.Context, s *scope, req request) (entry, error) {
	if e := s.lookup(entryKey{req.gvk, req.rep}); e != nil {
		return e, nil
	}
	k, err := c.kindOf(req)
	if err != nil {
		return nil, err
	}
	return s.entry(ctx, k)
}

// readEntry returns the entry a read of req in s uses, as controller-runtime
// does: ErrResourceNotCached when ReaderFailOnMissingInformer is set and it
// is missing, ErrCacheNotStarted before Start, and otherwise once its
// informer has synced, or with the error that keeps it from syncing (such
// as Forbidden) as soon as it meets one.
func (c *Cache) readEntry(ctx context.Context, s *scope, req request) (entry, error) {
	e := s.lookup(entryKey{req.gvk, req.rep})
	if e == nil {
		if c.failOnMissing {
			return nil, &cache.ErrResourceNotCached{GVK: req.gvk}
		}
		var err error
		if e, err = c.entryIn(ctx, s, req); err != nil {
			return nil, err
		}
	}
	if !c.isStarted() {
		return nil, &cache.ErrCacheNotStarted{}
	}
	if err := c.waitForSync(ctx, e, req.obj); err != nil {
		return nil, err
	}
	return e, nil
}

// waitForSync waits for e's informer, returning its sync failure as it is,
// and the end of ctx as controller-runtime's Timeout error.
func (c *Cache) waitForSync(ctx context.Context, e entry, obj client.Object) error {
	err := e.waitForSync(ctx)
	if err == nil || ctx.Err() == nil {
		return err
	}
	return apierrors.NewTimeoutError(fmt.Sprintf("failed waiting for %T Informer to sync: %v", obj, err), 0)
}

func (c *Cache) isStarted() bool {
	select {
	case <-c.started:
		return true
	default:
		return false
	}
}

// Get copies the cached object of key into out (see client.Reader). A
// missing object is NotFound, with the kind as the resource, as
// controller-runtime's cache says.
func (c *Cache) Get(ctx context.Context, key client.ObjectKey, out client.Object, opts ...client.GetOption) error {
	req, err := c.requestFor(out)
	if err != nil {
		return err
	}
	s, err := c.scopeFor(req, key.Namespace, "get", key)
	if err != nil {
		return err
	}
	e, err := c.readEntry(ctx, s, req)
	if err != nil {
		return err
	}
	o := client.GetOptions{}
	o.ApplyOptions(opts)
	return e.get(key, out, s.spec.cfg.unsafe || o.UnsafeDisableDeepCopy != nil && *o.UnsafeDisableDeepCopy)
}

// scopeFor returns the scope of req's kind in namespace ns.
func (c *Cache) scopeFor(req request, ns, op string, what any) (*scope, error) {
	if req.r.single != nil {
		return req.r.single, nil
	}
	namespaced, err := c.isNamespaced(req)
	if err != nil {
		return nil, err
	}
	return req.r.forNamespace(namespaced, ns, op, what)
}

// List fills out with the cached objects opts select (see client.Reader):
// label selectors are answered by the label index, field selectors by the
// indexes of IndexField (exact terms only), Limit caps the items, and
// Continue is refused, as in controller-runtime's cache.
func (c *Cache) List(ctx context.Context, out client.ObjectList, opts ...client.ListOption) error {
	o := client.ListOptions{}
	o.ApplyOptions(opts)
	if o.Continue != "" {
		return errors.New("continue list option is not supported by the cache")
	}
	req, err := c.requestForList(out)
	if err != nil {
		return err
	}
	unsafe := func(s *scope) bool {
		return s.spec.cfg.unsafe || o.UnsafeDisableDeepCopy != nil && *o.UnsafeDisableDeepCopy
	}
	if req.r.single == nil && o.Namespace == "" {
		namespaced, err := c.isNamespaced(req)
		if err != nil {
			return err
		}
		if namespaced {
			return req.r.listAcross(ctx, out, &o, func(ctx context.Context, s *scope) (entry, error) {
				return c.readEntry(ctx, s, req)
			}, unsafe)
		}
	}
	s, err := c.scopeFor(req, o.Namespace, "list", o.Namespace)
	if err != nil {
		return err
	}
	e, err := c.readEntry(ctx, s, req)
	if err != nil {
		return err
	}
	return e.list(out, &o, unsafe(s))
}
