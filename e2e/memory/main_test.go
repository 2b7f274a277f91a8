// Package memory checks, against the real API server, that what informers report of the bytes
// their caches hold (informer.Stats.StoreBytes) matches the heap they hold, measured in this
// process: its own package, so that no other test's informers or garbage share the heap.
package memory

import (
	"testing"

	"github.com/typedkube/informer/e2e/harness"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"go.uber.org/goleak"
)

// srv is the API server the tests of this package share; Main starts it once.
var srv *harness.Server

func TestMain(m *testing.M) {
	opts := harness.Options{LogDir: kubetest.LogDir("memory")}
	goleak.VerifyTestMain(harness.Main(m, opts, func(s *harness.Server) { srv = s }))
}
