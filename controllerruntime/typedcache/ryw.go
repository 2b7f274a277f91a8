package typedcache

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What read-your-writes needs of the cache: waiting until the informers a
// read uses have applied a resource version, or no longer hold an object
// that was deleted. Both wait on the informers' applied resource version
// (informer.SharedIndexInformer.WaitForResourceVersion): no handler, no
// goroutine, no polling.

// readEntries returns the entries a read of req in namespace ns ("" for
// all) uses, making those that are missing; none for a namespace the cache
// does not cache, where no informer will ever see a write.
func (c *Cache) readEntries(ctx context.Context, req request, ns string) ([]entry, error) {
	if ns == "" || req.r.single != nil {
		if req.r.single != nil {
			e, err := c.entryIn(ctx, req.r.single, req)
			if err != nil {
				return nil, err
			}
			return []entry{e}, nil
		}
		return c.entriesOf(ctx, req)
	}
	namespaced, err := c.isNamespaced(req)
	if err != nil {
		return nil, err
	}
	if namespaced && !req.r.caches(ns) {
		return nil, nil
	}
	s, err := c.scopeFor(req, ns, "read", ns)
	if err != nil {
		return nil, err
	}
	e, err := c.entryIn(ctx, s, req)
	if err != nil {
		return nil, err
	}
	return []entry{e}, nil
}

// waitApplied waits until, for each key of rvs, the informers a read of
// req in the key's namespace uses have applied the key's version: each
// informer waits once, for the newest version of the keys it serves, so
// that no informer waits for a change it will never see (one of a
// namespace another informer caches).
func (c *Cache) waitApplied(ctx context.Context, req request, rvs map[client.ObjectKey]string) error {
	newest := map[entry]string{}
	for key, rv := range rvs {
		entries, err := c.readEntries(ctx, req, key.Namespace)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if cur, ok := newest[e]; !ok || newer(rv, cur) {
				newest[e] = rv
			}
		}
	}
	for e, rv := range newest {
		// An informer of cache.Options.NewInformer that reports no
		// version cannot be waited for (errUnversioned): it is read as
		// controller-runtime's cache reads it.
		if err := e.waitForResourceVersion(ctx, rv); err != nil && !errors.Is(err, errUnversioned) {
			return err
		}
	}
	return nil
}

// newer reports whether resource version a is newer than b.
func newer(a, b string) bool {
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c > 0
}

// waitGone waits until no informer a read of req uses holds the object of
// key with one of uids, other than as being deleted: each time an informer
// applies a change, it looks again.
func (c *Cache) waitGone(ctx context.Context, req request, key client.ObjectKey, uids []types.UID) error {
	entries, err := c.readEntries(ctx, req, key.Namespace)
	if err != nil {
		return err
	}
	for _, e := range entries {
		for _, uid := range uids {
			for e.holds(key, uid) {
				next := "1"
				if rv, ok := e.applied(); ok {
					n, err := strconv.ParseUint(rv, 10, 64)
					if err != nil {
						return fmt.Errorf("typedcache: wait for the deletion of %v: resource version %q: %w", key, rv, err)
					}
					next = strconv.FormatUint(n+1, 10)
				}
				if err := e.waitForResourceVersion(ctx, next); errors.Is(err, errUnversioned) {
					break // as for waitApplied
				} else if err != nil {
					return fmt.Errorf("typedcache: wait for the deletion of %v: %w", key, err)
				}
			}
		}
	}
	return nil
}
