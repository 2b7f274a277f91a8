package typedcache

import (
	"context"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What read-your-writes needs of the cache: waiting until the informers a
// read uses have applied a resource version, or no longer hold an object
// that was deleted. Both wait on the informers' applied resource version
// (informer.SharedIndexInformer.WaitForResourceVersion): no handler, no
// goroutine, no polling.

// readEntries returns the entries a read of req in namespace ns ("" for
// all) uses, making those that are missing.
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

// waitApplied waits until every informer a read of req in namespace ns
// uses has applied the changes up to rv.
func (c *Cache) waitApplied(ctx context.Context, req request, ns, rv string) error {
	entries, err := c.readEntries(ctx, req, ns)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := e.waitForResourceVersion(ctx, rv); err != nil {
			return err
		}
	}
	return nil
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
				if err := e.waitForResourceVersion(ctx, next); err != nil {
					return fmt.Errorf("typedcache: wait for the deletion of %v: %w", key, err)
				}
			}
		}
	}
	return nil
}
