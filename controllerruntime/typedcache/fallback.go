package typedcache

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/clientgo"
)

// A Go type known only at run time, such as a CRD's registered in the
// manager's scheme, cannot instantiate the factory's For[T]. Its informer
// caches client.Object values instead, decoded by client-go's codecs into
// the type the scheme names, as controller-runtime's own cache does, and
// listed and watched over a REST client of the kind's group-version. The
// scope runs it. Everything else (the label index, field indexes, reads,
// handlers, sync failures, read-your-writes) is the same as for the other
// informers; only the decoding is client-go's. For[T] in Options.Types
// gives such a type the factory's informer instead.

// fallbackEntry is the entry of a kind whose Go type only the scheme knows.
type fallbackEntry struct {
	*typedEntry[client.Object, client.Object]
	selfRun
}

// fallbackMaker makes the entry of k, a kind whose Go type the cache does
// not know at compile time.
func fallbackMaker(_ context.Context, s *scope, k kind) (entry, error) {
	c := s.c
	rc, err := apiutil.RESTClientForGVK(k.gvk, false, false, c.cfg, c.codecs, c.http)
	if err != nil {
		return nil, fmt.Errorf("typedcache: REST client for %v: %w", k.gvk, err)
	}
	listObj, err := c.scheme.New(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
	if err != nil {
		return nil, fmt.Errorf("typedcache: list type of %v: %w", k.gvk, err)
	}
	sel := s.selectionFor(k)
	var pre func(client.Object)
	if s.dropManagedFields() {
		pre = dropManagedFields[client.Object]
	}
	ns := sel.namespace
	if ns == "" && k.namespaced {
		ns = s.spec.namespace
	}
	lw := clientgo.ListerWatcher[client.Object](restListWatch(rc, c.paramCodec, k, ns, sel, listObj))
	io := c.informerOpts
	name := k.gvr.GroupVersion().String() + "/" + k.gvr.Resource
	inf, err := informer.NewSharedIndexInformer(lw, informer.SharedIndexInformerOptions[client.Object]{
		Name:                name,
		Resource:            k.gvr.GroupResource(),
		NoLabelIndex:        io.NoLabelIndex,
		DefaultResyncPeriod: sel.resync,
		Transform:           transformFor(s.spec.cfg.transform, pre),
		Queue:               io.Queue,
		Reflector:           io.Reflector,
		HandlerPanic:        io.HandlerPanic,
		Metrics:             metricsFor(io, name),
	})
	if err != nil {
		return nil, fmt.Errorf("typedcache: informer of %v: %w", k.gvk, err)
	}
	e := &fallbackEntry{selfRun: newSelfRun(inf.Name(), func(ctx context.Context) {
		_ = inf.Run(ctx) // it reports what it meets itself; readers see a stopped informer
	})}
	e.typedEntry = newTypedEntry(inf, k, sameConverter[client.Object](), clientgo.SharedIndexInformer(inf), e.stopRun)
	s.run(e)
	return e, nil
}

// restListWatch lists and watches k in namespace ns ("" for all, or for a
// cluster-scoped kind) with sel's selectors, decoding into listObj's type.
func restListWatch(rc rest.Interface, pc runtime.ParameterCodec, k kind, ns string, sel watchScope, listObj runtime.Object) *toolscache.ListWatch {
	request := func(opts *metav1.ListOptions) *rest.Request {
		if sel.label != "" {
			opts.LabelSelector = sel.label
		}
		if sel.field != "" {
			opts.FieldSelector = sel.field
		}
		return rc.Get().NamespaceIfScoped(ns, k.namespaced && ns != "").Resource(k.gvr.Resource).VersionedParams(opts, pc)
	}
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			out := listObj.DeepCopyObject()
			if err := request(&opts).Do(ctx).Into(out); err != nil {
				return nil, err
			}
			return out, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			return request(&opts).Watch(ctx)
		},
	}
}

// metricsFor returns the Metrics the factory's hook gives the informer
// named name, as a factory does for its own.
func metricsFor(io informer.InformerOptions, name string) informer.Metrics {
	if io.Metrics == nil {
		return nil
	}
	return io.Metrics(name)
}
