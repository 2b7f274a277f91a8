// Package faults is the fault suite: informers of several kinds run against a real API server
// while a writer changes their objects and the test restarts the server, compacts etcd, drops
// connections and throttles the informers' identity. After every fault each cache, and the state
// each informer's handler rebuilt from its notifications, must equal a fresh LIST.
package faults

import (
	"testing"

	"github.com/typedkube/informer/e2e/harness"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"go.uber.org/goleak"
)

// srv is the API server of the suite. Its faults would disturb other tests, so the suite is a
// package of its own, with a server of its own.
var srv *harness.Server

func TestMain(m *testing.M) {
	opts := harness.Options{LogDir: kubetest.LogDir("faults")}
	goleak.VerifyTestMain(harness.Main(m, opts, func(s *harness.Server) { srv = s }))
}
