// Package controller is the Fleet controller, shaped as kubebuilder lays a project out: a
// reconciler and its SetupWithManager. It reads nothing but controller-runtime's client and
// cache; that the cache is typedcache's is main's choice (cmd/main.go).
package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1 "github.com/typedkube/informer/examples/manager/api/v1alpha1"
)

const (
	// SecretField indexes Fleets by the Secret they name.
	SecretField = ".spec.configSecret"
	// ControllerField indexes ConfigMaps by the Fleet that controls them.
	ControllerField = ".metadata.controller"
	// PausedLabel on a Namespace pauses the Fleets in it: the controller leaves them as they are.
	PausedLabel = "example.typedkube.io/paused"
)

// FleetReconciler keeps each Fleet's ConfigMaps and status.
type FleetReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// Reconcile brings the ConfigMaps of the Fleet req names, and its status, up to date. A Fleet
// that is gone needs nothing: the API server's garbage collector deletes what it controlled.
func (r *FleetReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var fleet fleetv1.Fleet
	if err := r.Get(ctx, req.NamespacedName, &fleet); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// The Namespace's labels come from a metadata-only cache (SetupWithManager): the controller
	// never holds whole Namespaces.
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Get(ctx, client.ObjectKey{Name: fleet.Namespace}, ns); err != nil {
		return reconcile.Result{}, err
	}
	if ns.GetLabels()[PausedLabel] == "true" {
		return reconcile.Result{}, nil
	}

	config := ""
	if name := fleet.Spec.ConfigSecret; name != "" {
		var secret corev1.Secret
		err := r.Get(ctx, types.NamespacedName{Namespace: fleet.Namespace, Name: name}, &secret)
		switch {
		case err == nil:
			config = string(secret.Data["config"])
		case !apierrors.IsNotFound(err):
			return reconcile.Result{}, err
		} // a Secret that does not exist yet: the Secret watch reconciles again when it comes
	}

	var children corev1.ConfigMapList
	if err := r.List(ctx, &children, client.InNamespace(fleet.Namespace), client.MatchingFields{ControllerField: fleet.Name}); err != nil {
		return reconcile.Result{}, err
	}
	want := make(map[string]bool, fleet.Spec.Replicas)
	for i := range fleet.Spec.Replicas {
		want[childName(&fleet, i)] = true
	}
	for i := range children.Items {
		child := &children.Items[i]
		switch {
		case !want[child.Name] || !metav1.IsControlledBy(child, &fleet):
			if err := r.Delete(ctx, child); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, err
			}
		case child.Data["config"] != config:
			child.Data = map[string]string{"config": config}
			if err := r.Update(ctx, child); err != nil {
				return reconcile.Result{}, err
			}
		}
		delete(want, child.Name)
	}
	for name := range want {
		child := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: fleet.Namespace, Name: name},
			Data:       map[string]string{"config": config},
		}
		if err := controllerutil.SetControllerReference(&fleet, child, r.Scheme); err != nil {
			return reconcile.Result{}, err
		}
		if err := r.Create(ctx, child); err != nil {
			return reconcile.Result{}, err
		}
	}

	status := fleetv1.FleetStatus{Replicas: fleet.Spec.Replicas, ObservedGeneration: fleet.Generation, Config: config}
	if fleet.Status != status {
		fleet.Status = status
		if err := r.Status().Update(ctx, &fleet); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

func childName(f *fleetv1.Fleet, i int32) string { return fmt.Sprintf("%s-%d", f.Name, i) }

// FleetSecret is the SecretField index function.
func FleetSecret(o client.Object) []string {
	if s := o.(*fleetv1.Fleet).Spec.ConfigSecret; s != "" {
		return []string{s}
	}
	return nil
}

// ControllingFleet is the ControllerField index function.
func ControllingFleet(o client.Object) []string {
	owner := metav1.GetControllerOf(o)
	if owner == nil || owner.APIVersion != fleetv1.GroupVersion.String() || owner.Kind != "Fleet" {
		return nil
	}
	return []string{owner.Name}
}

// SetupWithManager registers the field indexes and the controller: it reconciles a Fleet when
// the Fleet changes (For), when a ConfigMap it controls does (Owns), when the Secret it names
// does (Watches, through the SecretField index), and when its Namespace's labels do (a
// metadata-only watch: OnlyMetadata).
func (r *FleetReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &fleetv1.Fleet{}, SecretField, FleetSecret); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.ConfigMap{}, ControllerField, ControllingFleet); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&fleetv1.Fleet{}).
		Owns(&corev1.ConfigMap{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.fleetsNamingSecret)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.fleetsInNamespace), builder.OnlyMetadata).
		Complete(r)
}

func (r *FleetReconciler) fleetsNamingSecret(ctx context.Context, secret client.Object) []reconcile.Request {
	return r.fleets(ctx, client.InNamespace(secret.GetNamespace()), client.MatchingFields{SecretField: secret.GetName()})
}

func (r *FleetReconciler) fleetsInNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	return r.fleets(ctx, client.InNamespace(ns.GetName()))
}

func (r *FleetReconciler) fleets(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	var fleets fleetv1.FleetList
	if err := r.List(ctx, &fleets, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Fleets to reconcile")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(fleets.Items))
	for _, f := range fleets.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: f.Namespace, Name: f.Name}})
	}
	return reqs
}
