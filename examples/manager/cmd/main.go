// Command manager runs the Fleet controller in a controller-runtime manager whose cache is
// typedcache's: kubebuilder's main.go with one line changed (NewCache), and the library's
// options beside it.
//
//	kubectl apply -f config/crd/
//	go run ./cmd -kubeconfig ~/.kube/config
package main

import (
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/typedkube/informer/controllerruntime/typedcache"
	fleetv1 "github.com/typedkube/informer/examples/manager/api/v1alpha1"
	"github.com/typedkube/informer/examples/manager/internal/controller"
)

func main() {
	metricsAddr := flag.String("metrics-bind-address", "0", "`address` of the metrics endpoint (0: off)")
	flag.Parse() // also -kubeconfig, which ctrl.GetConfigOrDie reads
	ctrl.SetLogger(klog.NewKlogr())
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(fleetv1.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), Options(scheme, *metricsAddr))
	if err != nil {
		log.Error(err, "unable to start manager")
		os.Exit(1)
	}
	ctx := ctrl.SetupSignalHandler()
	r := &controller.FleetReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		log.Error(err, "unable to set up the Fleet controller")
		os.Exit(1)
	}
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}

// Options are the manager's options: kubebuilder's, with typedcache's cache and client.
func Options(scheme *runtime.Scheme, metricsAddr string) ctrl.Options {
	return ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: metricsAddr},
		// The one line: the manager's cache, its client's reads and every watch are the
		// library's informers. NewWith adds the library's options: Fleets are decoded by
		// package wire (a CRD's Go type the cache would otherwise hand to client-go's codecs),
		// and managedFields are dropped while decoding.
		NewCache: typedcache.NewWith(typedcache.Options{
			Types:             []typedcache.Typed{typedcache.For[*fleetv1.Fleet]()},
			DropManagedFields: true,
		}),
		// Read-your-writes: a read after a write waits until the cache has seen the write,
		// so a reconcile that follows its own create never creates twice.
		NewClient: typedcache.NewClient,
		Client:    client.Options{Cache: &client.CacheOptions{EnableReadYourWritesConsistency: ptr.To(true)}},
	}
}
