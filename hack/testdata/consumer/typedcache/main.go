// Command typedcache is a program on the controllerruntime module that hack/consumer-check.sh
// builds in a module outside the repository, after `go get
// github.com/typedkube/informer/controllerruntime@VERSION` alone.
package main

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/typedkube/informer/controllerruntime/typedcache"
)

func main() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		NewCache: typedcache.New, // the one line
	})
	if err != nil {
		os.Exit(1)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		os.Exit(1)
	}
}
