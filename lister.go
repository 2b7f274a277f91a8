package informer

import (
	"context"
	"fmt"
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
}

// List returns the cached objects whose labels match selector, in
// unspecified order; a nil selector matches everything.
func (l Lister[T]) List(selector labels.Selector) ([]T, error) {
	if selector == nil || selector.Empty() {
		return l.indexer.List(), nil
	}
	return filterLabels(l.indexer.All(), selector), nil
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
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, ok := l.indexer.GetByKey(key)
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
// unspecified order; a nil selector matches everything.
func (n NamespaceLister[T]) List(selector labels.Selector) ([]T, error) {
	if n.namespace == metav1.NamespaceAll {
		return n.l.List(selector) // every namespace, as client-go's listers
	}
	if selector == nil || selector.Empty() {
		return n.l.indexer.ByIndex(NamespaceIndex, n.namespace)
	}
	return filterLabels(n.l.indexer.ByIndexSeq(NamespaceIndex, n.namespace), selector), nil
}

// Get returns the object called name in the namespace, or an error for
// which apierrors.IsNotFound is true.
func (n NamespaceLister[T]) Get(name string) (T, error) {
	return n.l.get(n.namespace, name)
}

func filterLabels[T Object](objs func(func(string, T) bool), selector labels.Selector) []T {
	var out []T
	for _, obj := range objs {
		if selector.Matches(labels.Set(obj.GetLabels())) {
			out = append(out, obj)
		}
	}
	return out
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
func WaitForCacheSync(ctx context.Context, syncs ...Syncer) error {
	for _, s := range syncs {
		if c, ok := s.(interface{ Synced() <-chan struct{} }); ok {
			select {
			case <-c.Synced():
				continue
			case <-ctx.Done():
			}
		} else if pollSynced(ctx, s) {
			continue
		}
		var pending []string
		for _, s := range syncs {
			if !s.HasSynced() {
				pending = append(pending, syncerName(s))
			}
		}
		if len(pending) == 0 {
			return nil
		}
		return fmt.Errorf("informer: caches not synced: %v: %w", slices.Compact(pending), context.Cause(ctx))
	}
	return nil
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
