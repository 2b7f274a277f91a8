package typedcache

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// entriesOf returns the entries of req in every scope that caches its
// kind, making those that are missing.
func (c *Cache) entriesOf(ctx context.Context, req request) ([]entry, error) {
	return c.entriesWaiting(ctx, req, nil)
}

// entriesWaiting is entriesOf that calls wait, if not nil, on each entry
// as soon as it has it, before it makes the next: an informer made last is
// not given the time the others take to be made before it is waited for.
func (c *Cache) entriesWaiting(ctx context.Context, req request, wait func(entry) error) ([]entry, error) {
	scopes := req.r.scopes
	if req.r.single == nil {
		namespaced, err := c.isNamespaced(req)
		if err != nil {
			return nil, err
		}
		scopes = req.r.serving(namespaced)
	}
	out := make([]entry, 0, len(scopes))
	for _, s := range scopes {
		e, err := c.entryIn(ctx, s, req)
		if err != nil {
			return nil, err
		}
		if wait != nil {
			if err := wait(e); err != nil {
				return nil, err
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// GetInformer returns the informer of obj's kind, as obj reads it (typed,
// unstructured or metadata), making it if the cache has none. By default
// (cache.BlockUntilSynced) it waits, once the cache has started, until the
// informer has synced, and returns as soon as the informer meets an error
// that keeps it from syncing (such as Forbidden), rather than when ctx
// ends.
func (c *Cache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	req, err := c.requestFor(obj)
	if err != nil {
		return nil, err
	}
	return c.informerOf(ctx, req, opts)
}

// GetInformerForKind is GetInformer for the Go type the scheme has for gvk.
func (c *Cache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	obj, err := c.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	o, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("typedcache: %T is not a client.Object", obj)
	}
	return c.informerOf(ctx, request{gvk: gvk, rep: typedRep, obj: o, r: c.routerFor(gvk)}, opts)
}

func (c *Cache) informerOf(ctx context.Context, req request, opts []cache.InformerGetOption) (cache.Informer, error) {
	o := cache.InformerGetOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	var wait func(entry) error
	if (o.BlockUntilSynced == nil || *o.BlockUntilSynced) && c.isStarted() {
		wait = func(e entry) error { return c.waitForSync(ctx, e, req.obj) }
	}
	entries, err := c.entriesWaiting(ctx, req, wait)
	if err != nil {
		return nil, err
	}
	if len(entries) == 1 {
		return entries[0].informer(), nil
	}
	informers := make([]cache.Informer, len(entries))
	for i, e := range entries {
		informers[i] = e.informer()
	}
	return newMultiInformer(informers, c.stopped), nil
}

// RemoveInformer stops the informer of obj's kind, as obj reads it, and
// forgets it; a later read or GetInformer makes a new one. An informer the
// cache does not have is no error.
func (c *Cache) RemoveInformer(ctx context.Context, obj client.Object) error {
	req, err := c.requestFor(obj)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range req.r.scopes {
		errs = append(errs, s.remove(ctx, entryKey{req.gvk, req.rep}))
	}
	return errors.Join(errs...)
}

// IndexField adds an index of field to the informer of obj's kind, making
// the informer if the cache has none, so that List answers field
// selectors on field: extract returns the values of an object's field, as
// in controller-runtime, where an object matches "field=value" if one of
// them is value.
func (c *Cache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	req, err := c.requestFor(obj)
	if err != nil {
		return err
	}
	entries, err := c.entriesOf(ctx, req)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := e.indexField(field, extract); err != nil {
			return fmt.Errorf("typedcache: IndexField %q of %v: %w", field, req.gvk, err)
		}
	}
	return nil
}

// ErrAlreadyStarted is returned, wrapped, by a second Start of a Cache. Its
// text is that of controller-runtime's error for the same, which callers
// may look for.
var ErrAlreadyStarted = errors.New("informer already started")

// Start runs every informer of the cache, and those made later, until ctx
// ends; it then stops them and returns once all have returned. A second
// Start returns an error wrapping ErrAlreadyStarted.
func (c *Cache) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.startCalled {
		c.mu.Unlock()
		return fmt.Errorf("typedcache: Start called twice: %w", ErrAlreadyStarted)
	}
	c.startCalled = true
	if _, err := logr.FromContext(ctx); err != nil {
		ctx = logr.NewContext(ctx, c.logger)
	}
	for _, s := range c.scopes {
		s.start(ctx)
	}
	close(c.started)
	c.mu.Unlock()
	<-ctx.Done()
	for _, s := range c.scopes {
		s.stop()
	}
	if c.watches != nil {
		c.watches.CloseIdleWatchConnections()
	}
	close(c.stopped)
	return nil
}

// WaitForCacheSync waits until the cache has started and every informer it
// has has synced, and reports whether they have: false only when ctx ends
// first, as in controller-runtime. An informer that meets an error that
// keeps it from syncing, such as Forbidden, is logged at once, with the
// error, and waited for: it goes on retrying, and syncs once the cause
// goes away (RBAC granted, CRD installed). A manager calls WaitForCacheSync
// once, to know when its controllers may start, and never starts them if
// it returns false; WaitForSync returns the error instead of waiting.
func (c *Cache) WaitForCacheSync(ctx context.Context) bool {
	select {
	case <-c.started:
	case <-ctx.Done():
		return false
	}
	for _, s := range c.scopes {
		for _, e := range s.all() {
			err := e.waitForSync(ctx)
			if err == nil {
				continue
			}
			if ctx.Err() != nil {
				return false
			}
			c.logger.Error(err, "An informer of the cache cannot sync yet; waiting for it")
			select {
			case <-e.synced():
			case <-ctx.Done():
				return false
			}
		}
	}
	return true
}

// WaitForSync is WaitForCacheSync that does not wait for an informer that
// cannot sync: nil once every informer has synced; otherwise, as soon as
// one meets it, the error that keeps it from syncing (an
// *informer.SyncError: apierrors.IsForbidden works on it), or an error
// wrapping ctx's cause.
func (c *Cache) WaitForSync(ctx context.Context) error {
	select {
	case <-c.started:
	case <-ctx.Done():
		return fmt.Errorf("typedcache: the cache has not been started: %w", context.Cause(ctx))
	}
	for _, s := range c.scopes {
		for _, e := range s.all() {
			if err := e.waitForSync(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// NeedLeaderElection reports that the cache runs on every replica, leader
// or not, as controller-runtime's does.
func (c *Cache) NeedLeaderElection() bool { return false }
