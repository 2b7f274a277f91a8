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
	opts := harness.Options{
		LogDir: kubetest.LogDir("faults"),
		// On SIGTERM kube-apiserver shuts its HTTP server down with a timeout of
		// --request-timeout (60 s), which an open watch uses up: the harness then kills it
		// after 30 s. With --shutdown-send-retry-after the timeout is 2 s, once the requests
		// in flight (not watches) have drained, and a restart takes seconds. Requests that
		// come meanwhile get 429 with Retry-After.
		APIServerArgs: []string{"--shutdown-send-retry-after=true"},
	}
	goleak.VerifyTestMain(harness.Main(m, opts, func(s *harness.Server) { srv = s }))
}
