// Package controllerruntime runs controller-runtime on the typedcache module against the real
// kube-apiserver: a differential test of its cache against controller-runtime's own, a
// kubebuilder-style controller run by a manager through the fault suite's faults, and
// read-your-writes.
package controllerruntime

import (
	"testing"

	"github.com/go-logr/logr"
	"github.com/typedkube/informer/e2e/harness"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"go.uber.org/goleak"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

var srv *harness.Server

func TestMain(m *testing.M) {
	// controller-runtime logs through a logger set once per process; without one it warns.
	ctrllog.SetLogger(logr.Discard())
	opts := harness.Options{LogDir: kubetest.LogDir("controllerruntime")}
	goleak.VerifyTestMain(harness.Main(m, opts, func(s *harness.Server) { srv = s }),
		// controller-runtime's own cache (the differential test's reference) wraps the watches
		// of its metadata informers in apimachinery's watch.Filter, whose goroutine stays
		// blocked on a send when the informer stops with an event in flight.
		goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop"))
}
