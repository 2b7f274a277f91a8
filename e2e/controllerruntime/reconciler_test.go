package controllerruntime

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The test controller, written as kubebuilder's tutorials write one: a Fleet (the parent, like
// a Deployment) owns Replicas ConfigMaps named <fleet>-<i> (its children, like Pods), each
// carrying the data "config" of the Secret the Fleet names; the controller reports the replicas
// and the config it applied in the Fleet's status. It Owns the ConfigMaps (a change or delete
// of a child reconciles its Fleet), Watches the Secrets (a change reconciles the Fleets that
// name it, found through a field index), requeues a Fleet whose Secret does not exist yet, and
// lists a Fleet's children through a field index of their controller, as the CronJob tutorial
// does. There is no garbage collector in the harness: a Fleet that is gone has its children
// deleted by the controller.

const (
	ownerKey  = ".metadata.controller" // the field index of a child's controlling Fleet
	secretKey = ".spec.secretName"     // the field index of a Fleet's Secret
)

type fleetReconciler struct {
	client.Client
	scheme     *runtime.Scheme
	reconciles atomic.Int64
}

func childName(fleet string, i int64) string { return fmt.Sprintf("%s-%d", fleet, i) }

func (r *fleetReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.reconciles.Add(1)
	var fleet Fleet
	if err := r.Get(ctx, req.NamespacedName, &fleet); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, r.deleteChildren(ctx, req.Namespace, req.Name, func(corev1.ConfigMap) bool { return true })
		}
		return reconcile.Result{}, err
	}
	config, requeue := "", false
	if name := fleet.Spec.SecretName; name != "" {
		var s corev1.Secret
		switch err := r.Get(ctx, types.NamespacedName{Namespace: fleet.Namespace, Name: name}, &s); {
		case apierrors.IsNotFound(err):
			requeue = true // the Secret may come; Watches would tell too
		case err != nil:
			return reconcile.Result{}, err
		default:
			config = string(s.Data["config"])
		}
	}
	want := map[string]bool{}
	for i := range fleet.Spec.Replicas {
		want[childName(fleet.Name, i)] = true
	}
	// Children that should not be there go (as do those of an earlier Fleet of the same
	// name); the others are brought up to date or made.
	ours := func(cm corev1.ConfigMap) bool {
		owner := metav1.GetControllerOf(&cm)
		return owner != nil && owner.UID == fleet.UID
	}
	if err := r.deleteChildren(ctx, fleet.Namespace, fleet.Name, func(cm corev1.ConfigMap) bool { return !want[cm.Name] || !ours(cm) }); err != nil {
		return reconcile.Result{}, err
	}
	var children corev1.ConfigMapList
	if err := r.List(ctx, &children, client.InNamespace(fleet.Namespace), client.MatchingFields{ownerKey: fleet.Name}); err != nil {
		return reconcile.Result{}, err
	}
	have := map[string]corev1.ConfigMap{}
	for _, cm := range children.Items {
		if ours(cm) {
			have[cm.Name] = cm
		}
	}
	for name := range want {
		cm, ok := have[name]
		switch {
		case !ok:
			cm = corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: fleet.Namespace, Name: name, Labels: map[string]string{"fleet": fleet.Name}},
				Data:       map[string]string{"config": config},
			}
			if err := controllerutil.SetControllerReference(&fleet, &cm, r.scheme); err != nil {
				return reconcile.Result{}, err
			}
			if err := r.Create(ctx, &cm); err != nil {
				return reconcile.Result{}, err
			}
		case cm.Data["config"] != config:
			cm.Data = map[string]string{"config": config}
			if err := r.Update(ctx, &cm); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	status := FleetStatus{Replicas: fleet.Spec.Replicas, ObservedGeneration: fleet.Generation, Config: config}
	if fleet.Status != status {
		fleet.Status = status
		if err := r.Status().Update(ctx, &fleet); err != nil {
			return reconcile.Result{}, err
		}
	}
	if requeue {
		return reconcile.Result{RequeueAfter: 200 * time.Millisecond}, nil
	}
	return reconcile.Result{}, nil
}

// deleteChildren deletes the children of the Fleet name for which drop is true.
func (r *fleetReconciler) deleteChildren(ctx context.Context, ns, name string, drop func(corev1.ConfigMap) bool) error {
	var children corev1.ConfigMapList
	if err := r.List(ctx, &children, client.InNamespace(ns), client.MatchingFields{ownerKey: name}); err != nil {
		return err
	}
	for _, cm := range children.Items {
		if drop(cm) {
			if err := r.Delete(ctx, &cm); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

// setup registers the controller and its indexes with mgr.
func (r *fleetReconciler) setup(mgr ctrl.Manager, name string) error {
	ctx := context.Background()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.ConfigMap{}, ownerKey, func(o client.Object) []string {
		owner := metav1.GetControllerOf(o)
		if owner == nil || owner.APIVersion != fleetGV.String() || owner.Kind != "Fleet" {
			return nil
		}
		return []string{owner.Name}
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &Fleet{}, secretKey, func(o client.Object) []string {
		if s := o.(*Fleet).Spec.SecretName; s != "" {
			return []string{s}
		}
		return nil
	}); err != nil {
		return err
	}
	fleetsOfSecret := func(ctx context.Context, s client.Object) []reconcile.Request {
		var fleets FleetList
		if err := mgr.GetClient().List(ctx, &fleets, client.InNamespace(s.GetNamespace()), client.MatchingFields{secretKey: s.GetName()}); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, f := range fleets.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: f.Namespace, Name: f.Name}})
		}
		return out
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(&Fleet{}).
		Owns(&corev1.ConfigMap{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(fleetsOfSecret)).
		WithOptions(controller.Options{
			// Failures during faults back off up to 2 s, not client-go's 1,000 s.
			RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, 2*time.Second),
		}).
		Complete(r)
}

// converged compares what the server has in ns with what the controller should have made of
// it, and returns what differs ("" when nothing does).
func converged(ctx context.Context, c client.Client, ns string) (string, error) {
	var fleets FleetList
	if err := c.List(ctx, &fleets, client.InNamespace(ns)); err != nil {
		return "", err
	}
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.InNamespace(ns)); err != nil {
		return "", err
	}
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace(ns), client.HasLabels{"fleet"}); err != nil {
		return "", err
	}
	config := map[string]string{}
	for _, s := range secrets.Items {
		config[s.Name] = string(s.Data["config"])
	}
	want := map[string]string{} // child -> config
	var problems []string
	uids := map[types.UID]string{}
	for _, f := range fleets.Items {
		uids[f.UID] = f.Name
		cfg := config[f.Spec.SecretName]
		for i := range f.Spec.Replicas {
			want[childName(f.Name, i)] = cfg
		}
		st := FleetStatus{Replicas: f.Spec.Replicas, ObservedGeneration: f.Generation, Config: cfg}
		if f.Status != st {
			problems = append(problems, fmt.Sprintf("fleet %s status %+v, want %+v", f.Name, f.Status, st))
		}
	}
	got := map[string]string{}
	for _, cm := range cms.Items {
		got[cm.Name] = cm.Data["config"]
		owner := metav1.GetControllerOf(&cm)
		if owner == nil || uids[owner.UID] == "" {
			problems = append(problems, fmt.Sprintf("child %s has no live controller", cm.Name))
		}
	}
	for name, cfg := range want {
		if g, ok := got[name]; !ok {
			problems = append(problems, "missing child "+name)
		} else if g != cfg {
			problems = append(problems, fmt.Sprintf("child %s carries %q, want %q", name, g, cfg))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			problems = append(problems, "extra child "+name)
		}
	}
	slices.Sort(problems)
	return strings.Join(problems, "; "), nil
}

// waitConverged waits until converged says nothing differs, for at most within, and returns
// how long that took.
func waitConverged(ctx context.Context, c client.Client, ns string, within time.Duration) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(within)
	for {
		diff, err := converged(ctx, c, ns)
		if err == nil && diff == "" {
			return time.Since(start), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("not converged within %v: %s (%v)", within, diff, err)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
