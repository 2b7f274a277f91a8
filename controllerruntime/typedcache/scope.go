package typedcache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/wire"
)

// representation is how readers see a kind: as its Go type,
// *unstructured.Unstructured or *metav1.PartialObjectMetadata. Each has
// informers of its own, as in controller-runtime.
type representation uint8

const (
	typedRep representation = iota
	unstructuredRep
	metadataRep
)

// entryKey names an entry of a scope.
type entryKey struct {
	gvk schema.GroupVersionKind
	rep representation
}

// scope is the informers of one configuration (namespaces, selectors,
// transform, resync): a factory of the library, and the informers the
// cache runs itself for the kinds a factory cannot make (Go types it does
// not know at compile time).
type scope struct {
	c       *Cache
	spec    *scopeSpec
	factory *informer.Factory

	create sync.Mutex // held while an entry is made, so that each is made once

	mu      sync.RWMutex // guards entries
	entries map[entryKey]entry

	runMu   sync.Mutex      // guards runCtx and stopped
	runCtx  context.Context // the context of Start; nil before
	stopped bool            // Start's context has ended
	running sync.WaitGroup  // the informers the scope runs itself
}

func newScope(c *Cache, spec *scopeSpec, cfg *rest.Config) (*scope, error) {
	fo := informer.FactoryOptions{
		Scheme:     c.scheme,
		RESTMapper: c.mapper,
		HTTPClient: c.http,
		Decoding:   c.opts.Decoding,
		Wire:       wire.Options{DropManagedFields: c.opts.DropManagedFields || spec.cfg.dropManagedFields},
		Informer:   c.informerOpts,
		Logger:     c.logger,
	}
	fo.Namespace = spec.namespace
	f, err := informer.NewFactory(cfg, fo)
	if err != nil {
		return nil, fmt.Errorf("typedcache: %w", err)
	}
	return &scope{c: c, spec: spec, factory: f, entries: make(map[entryKey]entry)}, nil
}

// dropManagedFields reports whether the scope's informers leave
// managedFields out: Options.DropManagedFields, or the scope's transform
// was controller-runtime's TransformStripManagedFields.
func (s *scope) dropManagedFields() bool {
	return s.c.opts.DropManagedFields || s.spec.cfg.dropManagedFields
}

// lookup returns the entry of key, or nil.
func (s *scope) lookup(key entryKey) entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.entries[key]
}

// entry returns the entry of k, making it if the scope has none.
func (s *scope) entry(ctx context.Context, k kind) (entry, error) {
	key := entryKey{k.gvk, k.rep}
	if e := s.lookup(key); e != nil {
		return e, nil
	}
	s.create.Lock()
	defer s.create.Unlock()
	if e := s.lookup(key); e != nil {
		return e, nil
	}
	e, err := s.c.makerFor(k)(ctx, s, k)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.entries[key] = e
	s.mu.Unlock()
	return e, nil
}

// remove stops the entry of key and forgets it; an unknown key is no error.
func (s *scope) remove(ctx context.Context, key entryKey) error {
	s.create.Lock()
	defer s.create.Unlock()
	s.mu.Lock()
	e := s.entries[key]
	delete(s.entries, key)
	s.mu.Unlock()
	if e == nil {
		return nil
	}
	return e.remove(ctx)
}

// all returns the scope's entries.
func (s *scope) all() []entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]entry, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, e)
	}
	return out
}

// start starts the scope's informers, and those made later, with ctx.
func (s *scope) start(ctx context.Context) {
	s.runMu.Lock()
	s.runCtx = ctx
	s.runMu.Unlock()
	s.factory.Start(ctx)
	// An entry made since sees runCtx and runs itself; one made before is
	// run here (launch runs each once).
	for _, e := range s.all() {
		if r, ok := e.(runner); ok {
			s.run(r)
		}
	}
}

// runner is an entry whose informer the scope runs itself.
type runner interface {
	// launch runs the informer on wg with ctx, once.
	launch(ctx context.Context, wg *sync.WaitGroup)
}

// selfRun runs an informer the scope runs itself (a runner): once, on
// the scope's WaitGroup, until the scope's context ends or the entry is
// removed.
type selfRun struct {
	name string
	run  func(ctx context.Context) // the informer's Run: returns once ctx ends

	mu      sync.Mutex         // guards cancel and removed
	cancel  context.CancelFunc // stops the informer; nil until it runs
	removed bool               // the entry was removed: never run it
	done    chan struct{}      // closed when run has returned
}

func newSelfRun(name string, run func(ctx context.Context)) selfRun {
	return selfRun{name: name, run: run, done: make(chan struct{})}
}

// launch runs the informer on wg with ctx, until ctx ends or the entry is
// removed; once only, and never after the entry was removed.
func (r *selfRun) launch(ctx context.Context, wg *sync.WaitGroup) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil || r.removed {
		return
	}
	ctx, r.cancel = context.WithCancel(ctx)
	cancel := r.cancel
	wg.Go(func() {
		defer close(r.done)
		defer cancel()
		r.run(ctx)
	})
}

// stopRun stops the informer, if it runs, and waits for it to return.
func (r *selfRun) stopRun(ctx context.Context) error {
	r.mu.Lock()
	r.removed = true
	cancel := r.cancel
	r.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("typedcache: remove the informer of %s: %w", r.name, context.Cause(ctx))
	}
}

// run runs r's informer if the scope has started and not stopped; if it
// has not started, start will.
func (s *scope) run(r runner) {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.runCtx == nil || s.stopped {
		return
	}
	r.launch(s.runCtx, &s.running)
}

// stop stops every informer of the scope, once Start's context has ended,
// and waits for them.
func (s *scope) stop() {
	s.runMu.Lock()
	s.stopped = true
	s.runMu.Unlock()
	s.factory.Shutdown()
	s.running.Wait()
}

// watchScope is what the informers of a kind list and watch in this scope.
type watchScope struct {
	namespace    string // one namespace instead of the scope's, or ""
	label, field string
	resync       time.Duration
}

// selectionFor returns what the informer of k lists and watches: the
// scope's selectors, the namespaces other scopes cache left out (for a
// namespaced kind), and, as in controller-runtime, one namespace in place of
// all when the field selector requires metadata.namespace to be one.
func (s *scope) selectionFor(k kind) watchScope {
	cfg := s.spec.cfg
	var sel watchScope
	if cfg.label != nil {
		sel.label = cfg.label.String()
	}
	field := cfg.field
	if k.namespaced && len(s.spec.exclude) > 0 {
		terms := make([]fields.Selector, 0, len(s.spec.exclude)+1)
		for _, ns := range s.spec.exclude {
			terms = append(terms, fields.OneTermNotEqualSelector("metadata.namespace", ns))
		}
		if field != nil {
			terms = append(terms, field)
		}
		field = fields.AndSelectors(terms...)
	}
	if field != nil {
		sel.field = field.String()
	}
	if k.namespaced && s.spec.namespace == "" && cfg.field != nil {
		if ns, ok := cfg.field.RequiresExactMatch("metadata.namespace"); ok {
			sel.namespace = ns
		}
	}
	// controller-runtime spreads resyncs over [0.9, 1.1) of the period, so
	// that informers do not resync together.
	if cfg.syncPeriod > 0 {
		sel.resync = time.Duration(float64(cfg.syncPeriod) * (0.9 + rand.Float64()/5))
	}
	return sel
}
