package typedcache

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// With cache.Options.NewInformer set, as tests set it to hand the cache a
// fake or instrumented informer, every informer of the cache is the one it
// returns: a client-go SharedIndexInformer, given a ListerWatcher of the
// kind in its scope (namespace, selectors), an object of the type readers
// ask for, the scope's resync period and a namespace index, as
// controller-runtime gives it. The cache sets its transform and watch error
// handler, runs it, and serves reads from its indexer, as controller-runtime
// does: label selectors by testing every candidate (no label index), field
// selectors from the indexes IndexField adds. Read-your-writes (NewClient)
// waits on the indexer's LastStoreSyncResourceVersion; an informer whose
// indexer does not report one is not waited for.

// errUnversioned reports an informer that cannot say which resource
// version its cache has applied: read-your-writes cannot wait for it.
var errUnversioned = errors.New("typedcache: the informer does not report the resource version it applied")

// clientGoEntry is the entry of an informer made by cache.Options.NewInformer.
type clientGoEntry struct {
	selfRun
	inf        toolscache.SharedIndexInformer
	gvk        schema.GroupVersionKind
	namespaced bool
	elem       reflect.Type // the struct type readers' objects point to
}

// clientGoMaker makes the entry of k with the cache's NewInformer.
func clientGoMaker(_ context.Context, s *scope, k kind) (entry, error) {
	c := s.c
	sel := s.selectionFor(k)
	ns := sel.namespace
	if ns == "" && k.namespaced {
		ns = s.spec.namespace
	}
	lw, err := c.listWatchFor(k, ns, sel)
	if err != nil {
		return nil, fmt.Errorf("typedcache: list and watch %v: %w", k.gvk, err)
	}
	inf := c.newInformer(lw, k.obj.DeepCopyObject(), sel.resync, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	if inf == nil {
		return nil, fmt.Errorf("typedcache: cache.Options.NewInformer returned nil for %v", k.gvk)
	}
	if h := c.watchErrorHandler; h != nil {
		if err := inf.SetWatchErrorHandlerWithContext(h); err != nil {
			return nil, fmt.Errorf("typedcache: informer of %v: %w", k.gvk, err)
		}
	}
	if err := inf.SetTransform(clientGoTransform(s, k)); err != nil {
		return nil, fmt.Errorf("typedcache: informer of %v: %w", k.gvk, err)
	}
	e := &clientGoEntry{inf: inf, gvk: k.gvk, namespaced: k.namespaced, elem: reflect.TypeOf(k.obj).Elem()}
	e.selfRun = newSelfRun(k.gvk.String(), inf.RunWithContext)
	s.run(e)
	return e, nil
}

// clientGoTransform returns the transform the informer of k in s gets: the
// cache's own steps (the kind of a metadata object, DropManagedFields),
// then the scope's transform.
func clientGoTransform(s *scope, k kind) toolscache.TransformFunc {
	gvk, drop, metadataKind := k.gvk, s.dropManagedFields(), k.rep == metadataRep
	user := s.spec.cfg.transform
	if user == nil && !drop && !metadataKind {
		return nil
	}
	return func(obj any) (any, error) {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok && metadataKind {
			m.SetGroupVersionKind(gvk)
		}
		if drop {
			dropManagedFields(obj)
		}
		if user == nil {
			return obj, nil
		}
		return user(obj)
	}
}

// listWatchFor returns a ListerWatcher of k in namespace ns ("" for all,
// or for a cluster-scoped kind) with sel's selectors, of the objects
// readers of k ask for: the scheme's Go type, Unstructured or
// PartialObjectMetadata.
func (c *Cache) listWatchFor(k kind, ns string, sel watchScope) (*toolscache.ListWatch, error) {
	apply := func(opts *metav1.ListOptions) {
		if sel.label != "" {
			opts.LabelSelector = sel.label
		}
		if sel.field != "" {
			opts.FieldSelector = sel.field
		}
	}
	if k.rep == typedRep {
		rc, err := apiutil.RESTClientForGVK(k.gvk, false, false, c.cfg, c.codecs, c.http)
		if err != nil {
			return nil, err
		}
		listObj, err := c.scheme.New(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
		if err != nil {
			return nil, err
		}
		return restListWatch(rc, c.paramCodec, k, ns, sel, listObj), nil
	}
	cfg := rest.CopyConfig(c.cfg)
	cfg.NegotiatedSerializer = nil // the clients set their own
	var list func(context.Context, metav1.ListOptions) (runtime.Object, error)
	var watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)
	switch k.rep {
	case unstructuredRep:
		dc, err := dynamic.NewForConfigAndClient(cfg, c.http)
		if err != nil {
			return nil, err
		}
		var r dynamic.ResourceInterface = dc.Resource(k.gvr)
		if ns != "" {
			r = dc.Resource(k.gvr).Namespace(ns)
		}
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, o) }
		watchFn = r.Watch
	default:
		mc, err := metadata.NewForConfigAndClient(cfg, c.http)
		if err != nil {
			return nil, err
		}
		var r metadata.ResourceInterface = mc.Resource(k.gvr)
		if ns != "" {
			r = mc.Resource(k.gvr).Namespace(ns)
		}
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, o) }
		watchFn = r.Watch
	}
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			apply(&opts)
			return list(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			apply(&opts)
			opts.Watch = true
			return watchFn(ctx, opts)
		},
	}, nil
}

func (e *clientGoEntry) informer() cache.Informer { return e.inf }

func (e *clientGoEntry) synced() <-chan struct{} { return e.inf.HasSyncedChecker().Done() }

// waitForSync returns nil once the informer has synced, even if ctx has
// ended already, as controller-runtime's cache does: a synced informer is
// read, whatever the context (a select on both would pick either at
// random).
func (e *clientGoEntry) waitForSync(ctx context.Context) error {
	synced := e.synced()
	select {
	case <-synced:
		return nil
	default:
	}
	select {
	case <-synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("typedcache: waiting for the informer of %v to sync: %w", e.gvk, context.Cause(ctx))
	}
}

func (e *clientGoEntry) remove(ctx context.Context) error { return e.stopRun(ctx) }

// storeKey is the key client-go's informers keep the object of key under.
func (e *clientGoEntry) storeKey(key client.ObjectKey) string {
	if !e.namespaced || key.Namespace == "" {
		return key.Name
	}
	return key.Namespace + "/" + key.Name
}

func (e *clientGoEntry) get(key client.ObjectKey, out client.Object, unsafe bool) error {
	item, ok, err := e.inf.GetIndexer().GetByKey(e.storeKey(key))
	if err != nil {
		return err
	}
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: e.gvk.Group, Resource: e.gvk.Kind}, key.Name)
	}
	obj, err := e.copyOf(item, unsafe)
	if err != nil {
		return err
	}
	dst := reflect.ValueOf(out)
	if reflect.TypeOf(obj) != dst.Type() {
		return fmt.Errorf("typedcache: the cache holds %T, but %T was asked for", obj, out)
	}
	dst.Elem().Set(reflect.ValueOf(obj).Elem())
	if !unsafe {
		out.GetObjectKind().SetGroupVersionKind(e.gvk)
	}
	return nil
}

// copyOf returns item, a cached object, as an object a reader may keep: a
// deep copy with its kind, or, if unsafe, item itself.
func (e *clientGoEntry) copyOf(item any, unsafe bool) (runtime.Object, error) {
	obj, ok := item.(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("typedcache: the informer of %v holds a %T, not an object", e.gvk, item)
	}
	if unsafe {
		return obj, nil
	}
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(e.gvk)
	return obj, nil
}

func (e *clientGoEntry) list(out client.ObjectList, o *client.ListOptions, unsafe bool) error {
	items, err := e.collect(o)
	if err != nil {
		return err
	}
	objs := make([]runtime.Object, 0, len(items))
	for _, item := range items {
		obj, err := e.copyOf(item, unsafe)
		if err != nil {
			return err
		}
		objs = append(objs, obj)
	}
	if err := apimeta.SetList(out, objs); err != nil {
		return fmt.Errorf("typedcache: the cache holds *%v, but %T was asked for: %w", e.elem, out, err)
	}
	out.SetContinue("continue-not-supported")
	return nil
}

// collect returns the cached objects o selects, at most o.Limit if set:
// through the field indexes for a field selector, the namespace index for
// a namespace, every object otherwise; the label selector tests each.
func (e *clientGoEntry) collect(o *client.ListOptions) ([]any, error) {
	x := e.inf.GetIndexer()
	var candidates []any
	var tests []toolscache.IndexFunc
	var reqs []string // the index values tests must give
	var err error
	switch {
	case o.FieldSelector != nil:
		rs := o.FieldSelector.Requirements()
		if !exactMatch(rs) {
			return nil, fmt.Errorf("typedcache: field selector %q: %w", o.FieldSelector, errNonExactField)
		}
		indexers := x.GetIndexers()
		for _, r := range rs[1:] {
			f, ok := indexers[fieldIndexName(r.Field)]
			if !ok {
				return nil, fmt.Errorf("typedcache: field selector %q: no index of field %q: add one with IndexField", o.FieldSelector, r.Field)
			}
			tests, reqs = append(tests, f), append(reqs, namespacedKey(o.Namespace, r.Value))
		}
		candidates, err = x.ByIndex(fieldIndexName(rs[0].Field), namespacedKey(o.Namespace, rs[0].Value))
	case o.Namespace != "":
		candidates, err = x.ByIndex(toolscache.NamespaceIndex, o.Namespace)
	default:
		candidates = x.List()
	}
	if err != nil {
		return nil, err
	}
	sel := o.LabelSelector
	if sel == nil {
		sel = labels.Everything()
	}
	out := candidates[:0]
	for _, item := range candidates {
		if o.Limit > 0 && int64(len(out)) >= o.Limit {
			break
		}
		m, err := apimeta.Accessor(item)
		if err != nil {
			return nil, fmt.Errorf("typedcache: the informer of %v holds a %T: %w", e.gvk, item, err)
		}
		ok := sel.Matches(labels.Set(m.GetLabels()))
		for i := 0; i < len(tests) && ok; i++ {
			vals, err := tests[i](item)
			if err != nil {
				return nil, err
			}
			ok = slices.Contains(vals, reqs[i])
		}
		if ok {
			out = append(out, item)
		}
	}
	return out, nil
}

func (e *clientGoEntry) indexField(field string, extract client.IndexerFunc) error {
	return e.inf.AddIndexers(toolscache.Indexers{fieldIndexName(field): func(item any) ([]string, error) {
		obj, ok := item.(client.Object)
		if !ok {
			return nil, fmt.Errorf("typedcache: index of field %q: a %T is not a client.Object", field, item)
		}
		return fieldValues(obj.GetNamespace(), extract(obj)), nil
	}})
}

func (e *clientGoEntry) holds(key client.ObjectKey, uid types.UID) bool {
	item, ok, err := e.inf.GetIndexer().GetByKey(e.storeKey(key))
	if err != nil || !ok {
		return false
	}
	m, err := apimeta.Accessor(item)
	return err == nil && m.GetUID() == uid && !deleting(item)
}

func (e *clientGoEntry) applied() (string, bool) {
	rv := e.inf.GetIndexer().LastStoreSyncResourceVersion()
	return rv, rv != ""
}

// appliedPoll is how often waitForResourceVersion looks at the informer's
// indexer again: a client-go informer says nothing when it applies a
// change.
const appliedPoll = 5 * time.Millisecond

// waitForResourceVersion waits until the informer's indexer reports it has
// applied rv, looking every appliedPoll, or returns errUnversioned if it
// reports no version at all.
func (e *clientGoEntry) waitForResourceVersion(ctx context.Context, rv string) error {
	var tick *time.Ticker
	for {
		cur, ok := e.applied()
		if !ok {
			return errUnversioned
		}
		if c, err := resourceversion.CompareResourceVersion(cur, rv); err != nil {
			return fmt.Errorf("typedcache: compare resource versions %q and %q: %w", cur, rv, err)
		} else if c >= 0 {
			return nil
		}
		if tick == nil {
			tick = time.NewTicker(appliedPoll)
			defer tick.Stop()
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("typedcache: waiting for the informer of %v to apply resource version %s (it has %s): %w", e.gvk, rv, cur, context.Cause(ctx))
		}
	}
}
