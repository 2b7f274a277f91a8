package informer

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Lister reads an informer's cache: the typed counterpart of a generated
// client-go lister, for any T. Objects it returns are shared with the
// cache: never mutate them.
type Lister[T Object] struct {
	indexer  *Indexer[T]
	resource schema.GroupResource
	wait     func(ctx context.Context, resourceVersion string) error // the informer's WaitForResourceVersion; nil without an informer
}

// List returns the cached objects whose labels match selector, in
// unspecified order; a nil selector matches everything. With the cache's
// label index (an informer's default, see AddLabelIndex) it reads only the
// objects that have the labels the selector requires; without it, every
// object.
func (l Lister[T]) List(selector labels.Selector) ([]T, error) {
	if selector == nil || selector.Empty() {
		return l.indexer.List(), nil
	}
	return l.list("", false, selector), nil
}

// Select returns an iterator over the objects List would return. It
// iterates a snapshot of the matching objects taken when the iteration
// starts, in a buffer reused across iterations, so that in steady state it
// allocates nothing, and holds no lock while the loop body runs (an empty
// selector iterates as Store.All). The order is unspecified.
func (l Lister[T]) Select(selector labels.Selector) iter.Seq[T] {
	return func(yield func(T) bool) { l.yieldSelected("", false, selector, yield) }
}

// Get returns the cluster-scoped object called name, or an error for which
// apierrors.IsNotFound is true.
func (l Lister[T]) Get(name string) (T, error) {
	return l.get("", name)
}

// ByNamespace returns a lister for the objects of one namespace, read
// through the namespace index. As in client-go's listers,
// metav1.NamespaceAll ("") lists every namespace.
func (l Lister[T]) ByNamespace(namespace string) NamespaceLister[T] {
	return NamespaceLister[T]{l: l, namespace: namespace}
}

func (l Lister[T]) get(namespace, name string) (T, error) {
	var buf [128]byte // the key, spelled on the stack: a Get allocates none
	obj, ok := l.indexer.getKeyBytes(appendMetaNamespaceKey(buf[:0], namespace, name))
	if !ok {
		return obj, apierrors.NewNotFound(l.resource, name)
	}
	return obj, nil
}

// NamespaceLister reads the objects of one namespace from an informer's
// cache.
type NamespaceLister[T Object] struct {
	l         Lister[T]
	namespace string
}

// List returns the namespace's objects whose labels match selector, in
// unspecified order; a nil selector matches everything. With a label index
// it reads only the objects of the namespace, or those with the labels the
// selector requires, whichever are fewer.
func (n NamespaceLister[T]) List(selector labels.Selector) ([]T, error) {
	if n.namespace == metav1.NamespaceAll {
		return n.l.List(selector) // every namespace, as client-go's listers
	}
	if selector == nil || selector.Empty() {
		return n.l.indexer.ByIndex(NamespaceIndex, n.namespace)
	}
	return n.l.list(n.namespace, true, selector), nil
}

// Select returns an iterator over the objects List would return, with the
// guarantees of Lister.Select.
func (n NamespaceLister[T]) Select(selector labels.Selector) iter.Seq[T] {
	return func(yield func(T) bool) {
		n.l.yieldSelected(n.namespace, n.namespace != metav1.NamespaceAll, selector, yield)
	}
}

// Get returns the object called name in the namespace, or an error for
// which apierrors.IsNotFound is true.
func (n NamespaceLister[T]) Get(name string) (T, error) {
	return n.l.get(n.namespace, name)
}

// list returns the objects matching selector, which is not empty, of
// namespace if inNamespace.
func (l Lister[T]) list(namespace string, inNamespace bool, selector labels.Selector) []T {
	if out, ok := l.indexer.selectList(namespace, inNamespace, selector); ok {
		return out
	}
	var out []T
	l.scan(namespace, inNamespace, selector, func(obj T) bool {
		out = append(out, obj)
		return true
	})
	return out
}

// yieldSelected yields the objects matching selector, of namespace if
// inNamespace, from the label index if the cache has one.
func (l Lister[T]) yieldSelected(namespace string, inNamespace bool, selector labels.Selector, yield func(T) bool) {
	if selector != nil && !selector.Empty() &&
		l.indexer.yieldSelectedObjects(namespace, inNamespace, selector, yield) {
		return
	}
	l.scan(namespace, inNamespace, selector, yield)
}

// scan yields the objects matching selector, of namespace if inNamespace,
// testing every one (of the namespace).
func (l Lister[T]) scan(namespace string, inNamespace bool, selector labels.Selector, yield func(T) bool) {
	if labels.MatchesNothing(selector) {
		return
	}
	match := func(_ string, obj T) bool {
		if selector != nil && !selector.Empty() && !selector.Matches(labels.Set(obj.GetLabels())) {
			return true
		}
		return yield(obj)
	}
	if inNamespace {
		l.indexer.yieldBucket(NamespaceIndex, namespace, match)
	} else {
		l.indexer.yieldAll(match)
	}
}

// Syncer is anything that tells whether it has synced: an informer, a
// handler's Registration, or a function adapted with SyncFunc.
type Syncer interface {
	HasSynced() bool
}

// SyncFunc adapts a function to a Syncer.
type SyncFunc func() bool

// HasSynced calls f.
func (f SyncFunc) HasSynced() bool { return f() }

// WaitForCacheSync waits until every one of syncs has synced, or until ctx
// is done, in which case the error names those that had not.
//
// As Factory.WaitForCacheSync, it does not wait for an informer (or a
// handler's Registration of one) whose lists fail with an error that
// retrying is not expected to mend, such as Forbidden: it returns as soon as
// the informer meets it, with an error wrapping ErrNotSynced and the
// informer's *SyncError (so apierrors.IsForbidden works on it). The informer
// goes on retrying; a later call waits until it syncs or fails again.
func WaitForCacheSync(ctx context.Context, syncs ...Syncer) error {
wait:
	for _, s := range syncs {
		switch s := s.(type) {
		case failingSyncer:
			f, _ := s.failureState()
			unreported, next := f.unreported()
			if unreported {
				continue
			}
			select {
			case <-s.Synced():
			case <-next:
			case <-ctx.Done():
				break wait
			}
		case interface{ Synced() <-chan struct{} }:
			select {
			case <-s.Synced():
			case <-ctx.Done():
				break wait
			}
		default:
			if !pollSynced(ctx, s) {
				break wait
			}
		}
	}
	var pending []string
	var causes []error
	for _, s := range syncs {
		if s.HasSynced() {
			continue
		}
		pending = append(pending, syncerName(s))
		if s, ok := s.(failingSyncer); ok {
			f, synced := s.failureState()
			if err := f.report(synced); err != nil && !slices.Contains(causes, err) {
				causes = append(causes, err)
			}
		}
	}
	if len(pending) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		causes = append(causes, context.Cause(ctx))
	}
	return fmt.Errorf("%w: %v: %w", ErrNotSynced, slices.Compact(pending), errors.Join(causes...))
}

// pollSynced polls s every 100ms until it has synced or ctx is done.
func pollSynced(ctx context.Context, s Syncer) bool {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for !s.HasSynced() {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

func syncerName(s Syncer) string {
	switch s := s.(type) {
	case interface{ Name() string }:
		return s.Name()
	case fmt.Stringer:
		return s.String()
	}
	return fmt.Sprintf("%T", s)
}
