package benchmarks

import (
	"context"
	"fmt"

	"github.com/typedkube/informer"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// operatorPods is how many Pods the operator of startOperator manages in BenchmarkPeakRSS.
const operatorPods = 5000

// operatorSelector is the label selector the operator's cache lists and watches its Pods with
// (cache.ByObject): every realistic Pod carries it, so the server filters and the operator
// still holds all of them.
var operatorSelector = labels.SelectorFromSet(labels.Set{"app.kubernetes.io/part-of": "shop"})

// The operator's field indexes, as kubebuilder operators declare them: Pods by node, and by the
// UID of their controlling owner.
const (
	indexNode  = "spec.nodeName"
	indexOwner = ".metadata.controller"
)

// startOperator starts the manager of an operator as kubebuilder scaffolds them, as issue 37
// describes it: the default transform (transform, nil for none), a cache restricted to ns and,
// for Pods, to operatorSelector (ByObject), two field indexes on Pods, and two controllers: one
// of Pods that reads each Pod it reconciles from the cache (client.Get, with its deep copy), and
// one that watches only the Pods' metadata (builder.OnlyMetadata, a second informer of
// PartialObjectMetadata) and reconciles from that. It has synced once both controllers have
// reconciled want Pods each. Both implementations get the same manager but for newCache.
func startOperator(b fataler, cfg *rest.Config, ns string, want int, newCache cache.NewCacheFunc, transform toolscache.TransformFunc) startFunc {
	return func(ctx context.Context) (synced func() bool, size func() int, stats func() informer.Stats, stop func()) {
		mgr := newManager(b, cfg, newCache, cache.Options{
			DefaultNamespaces: map[string]cache.Config{ns: {}},
			DefaultTransform:  transform,
			ByObject:          map[client.Object]cache.ByObject{&corev1.Pod{}: {Label: operatorSelector}},
		})
		indexer := mgr.GetFieldIndexer()
		if err := indexer.IndexField(ctx, &corev1.Pod{}, indexNode, func(o client.Object) []string {
			if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
				return []string{n}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		if err := indexer.IndexField(ctx, &corev1.Pod{}, indexOwner, func(o client.Object) []string {
			for _, ref := range o.GetOwnerReferences() {
				if ref.Controller != nil && *ref.Controller {
					return []string{string(ref.UID)}
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}

		var pods, metas reconcileCounter
		reader := mgr.GetClient()
		err := ctrl.NewControllerManagedBy(mgr).
			Named(fmt.Sprintf("operator-pods-%d", controllerSeq.Add(1))).
			For(&corev1.Pod{}).
			Complete(reconcile.Func(func(ctx context.Context, r reconcile.Request) (reconcile.Result, error) {
				var p corev1.Pod
				if err := reader.Get(ctx, r.NamespacedName, &p); err != nil {
					return reconcile.Result{}, client.IgnoreNotFound(err)
				}
				pods.saw(r)
				return reconcile.Result{}, nil
			}))
		if err != nil {
			b.Fatal(err)
		}
		err = ctrl.NewControllerManagedBy(mgr).
			Named(fmt.Sprintf("operator-metadata-%d", controllerSeq.Add(1))).
			For(&corev1.Pod{}, builder.OnlyMetadata).
			Complete(reconcile.Func(func(_ context.Context, r reconcile.Request) (reconcile.Result, error) {
				metas.saw(r)
				return reconcile.Result{}, nil
			}))
		if err != nil {
			b.Fatal(err)
		}
		stopManager := runManager(ctx, mgr)
		synced = func() bool { return pods.n.Load() >= int64(want) && metas.n.Load() >= int64(want) }
		size = func() int { return int(min(pods.n.Load(), metas.n.Load())) }
		return synced, size, nil, func() {
			if err := stopManager(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
