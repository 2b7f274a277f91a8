package informer

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// errNilPage reports a List that returned neither a page nor an error.
var errNilPage = errors.New("informer: List returned no page and no error")

// maxPrealloc bounds how many items a paged list preallocates room for on
// the word of the server's RemainingItemCount.
const maxPrealloc = 1 << 20

// list lists every object, replaces the store's contents with them and
// records the list's resource version.
//
// It lists at relistRV. If the server says that resource version is
// unavailable (410 Expired or Gone, or too large), it lists again at once at
// "" (the latest, read consistently), with the same paging, and keeps using
// "" until a list succeeds.
func (r *Reflector[T]) list(ctx context.Context) error {
	rv := r.relistRV()
	limit := r.pageLimit(rv)
	items, enc, listRV, paged, err := r.observedListPages(ctx, rv, limit)
	if err != nil && ctx.Err() == nil && (isExpiredError(err) || isTooLargeResourceVersionError(err)) {
		r.setRVUnavailable(true)
		r.report(ctx, fmt.Errorf("informer: list %s at resource version %q: %w", r.typeName, rv, err))
		rv = r.relistRV()
		items, enc, listRV, paged, err = r.observedListPages(ctx, rv, limit)
	}
	if err != nil {
		return fmt.Errorf("informer: list %s: %w", r.typeName, err)
	}
	// A paged answer to the first list (at "0", which the watch cache
	// serves unpaged) means the watch cache is off: then page later lists
	// too, since they go to etcd anyway. A paged answer at "" says
	// nothing, as such lists always bypass the watch cache.
	if rv == "0" && paged {
		r.paginatedResult = true
	}
	r.setRVUnavailable(false)
	if err := r.replaceListed(items, enc, listRV); err != nil {
		return fmt.Errorf("informer: replace the store with %d listed objects: %w", len(items)+enc.len(), err)
	}
	r.synced(listRV)
	return nil
}

// encodedReplacer is a ReflectorStore that takes a list from a compact
// source as it is: the informer's queue.
type encodedReplacer[T any] interface {
	replaceEncoded(list *encodedList[T], resourceVersion string) error
}

// replaceListed replaces the store's contents with a list: items, or, from
// a compact source, the records of enc, which the store takes as they are
// if it can, and otherwise decoded.
func (r *Reflector[T]) replaceListed(items []T, enc *encodedList[T], rv string) error {
	if enc.len() == 0 {
		return r.store.Replace(items, rv)
	}
	if er, ok := r.store.(encodedReplacer[T]); ok && len(items) == 0 {
		return er.replaceEncoded(enc, rv)
	}
	objs, _, err := enc.decoded()
	if err != nil {
		return err
	}
	return r.store.Replace(append(items, objs...), rv)
}

// observedListPages is listPages, told to the Metrics if there are any.
func (r *Reflector[T]) observedListPages(ctx context.Context, rv string, limit int64) (items []T, enc *encodedList[T], listRV string, paged bool, err error) {
	if r.metrics == nil {
		return r.listPages(ctx, rv, limit)
	}
	start := r.clock.Now()
	items, enc, listRV, paged, err = r.listPages(ctx, rv, limit)
	if ctx.Err() == nil { // a list cut short by stopping is not observed
		r.metrics.ObserveList(len(items)+enc.len(), r.clock.Since(start), err)
	}
	return items, enc, listRV, paged, err
}

// pageLimit returns the page size for a list at rv; 0 for no paging.
func (r *Reflector[T]) pageLimit(rv string) int64 {
	switch {
	case r.pageSize > 0:
		return r.pageSize
	case r.pageSize < 0:
		return 0
	case r.paginatedResult:
		return defaultPageSize
	case rv != "" && rv != "0":
		// A list at a given resource version is served from the watch
		// cache only when unpaged: do not page it, to spare etcd.
		return 0
	}
	return defaultPageSize
}

// listPages lists at resource version rv in pages of limit objects (0:
// one request) and returns the objects (from a compact source, their
// records in enc), the resource version of the first page, and whether
// the answer came in more than one page. If a continue token expires, it
// lists again in one request at rv.
func (r *Reflector[T]) listPages(ctx context.Context, rv string, limit int64) (items []T, enc *encodedList[T], listRV string, paged bool, err error) {
	opts := metav1.ListOptions{ResourceVersion: rv, Limit: limit}
	for {
		if err := ctx.Err(); err != nil {
			return nil, nil, "", paged, err
		}
		page, err := r.lw.List(ctx, opts)
		if err == nil && page == nil {
			err = errNilPage
		}
		if err != nil {
			if opts.Continue == "" || !apierrors.IsResourceExpired(err) {
				return nil, nil, "", paged, err
			}
			r.report(ctx, fmt.Errorf("%w: listing %s again without paging: %w", ErrContinueExpired, r.typeName, err))
			page, err = r.lw.List(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err == nil && page == nil {
				err = errNilPage
			}
			if err != nil {
				return nil, nil, "", paged, err
			}
			return page.Items, page.encoded.orNil(), page.ResourceVersion, paged, nil
		}
		enc = enc.appendPage(page)
		if items == nil {
			if page.Continue == "" {
				return page.Items, enc, page.ResourceVersion, paged, nil
			}
			n := len(page.Items)
			if rest := page.RemainingItemCount; rest != nil && *rest > 0 {
				n += int(min(*rest, maxPrealloc))
			}
			items = make([]T, 0, n)
			listRV = page.ResourceVersion
		}
		items = append(items, page.Items...)
		if page.Continue == "" {
			return items, enc, listRV, paged, nil
		}
		// Later pages are read at the snapshot of the first, which the
		// continue token names.
		opts = metav1.ListOptions{Continue: page.Continue, Limit: limit}
		paged = true
	}
}
