// Command typedcache is one of the four programs whose binaries package binsize measures: the same
// program on the library and on client-go or controller-runtime (see binsize_test.go).
package main

import (
	"context"

	"github.com/typedkube/informer/controllerruntime/typedcache"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

type reconciler struct{ client.Client }

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var p corev1.Pod
	return reconcile.Result{}, client.IgnoreNotFound(r.Get(ctx, req.NamespacedName, &p))
}

func main() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{NewCache: typedcache.New})
	if err != nil {
		panic(err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).For(&corev1.Pod{}).Complete(&reconciler{mgr.GetClient()}); err != nil {
		panic(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		panic(err)
	}
}
