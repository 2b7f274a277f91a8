package informers

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/typedkube/informer/e2e/harness"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"go.uber.org/goleak"
)

// srv is the API server the tests of this package share; Main starts it once.
var srv *harness.Server

func TestMain(m *testing.M) {
	opts := harness.Options{LogDir: kubetest.LogDir("informers")}
	goleak.VerifyTestMain(harness.Main(m, opts, func(s *harness.Server) { srv = s }))
}

// verifyNoGoroutinesLeft checks, when the test ends (after the cleanups registered later, which
// stop informers and close idle connections), that no goroutine started during the test is
// left, except those of HTTP connections that the transport keeps open for reuse, and the
// harness proxy's copies of them: a connection whose last stream was cancelled a moment ago may
// not count as idle yet. TestMain checks again after the servers have stopped, when every
// connection has closed, and allows nothing.
func verifyNoGoroutinesLeft(t *testing.T) {
	t.Helper()
	current := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		goleak.VerifyNone(t, current,
			goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
			goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreAnyFunction("github.com/typedkube/informer/e2e/harness.(*tcpProxy).forward"),
			goleak.IgnoreAnyFunction("github.com/typedkube/informer/e2e/harness.(*tcpProxy).forward.func1"),
			goleak.IgnoreAnyFunction("github.com/typedkube/informer/e2e/harness.(*tcpProxy).forward.func2"),
		)
	})
}

// testContext is a context that ends with the test or after d.
func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// adminClients returns clients for the admin identity, closed when the test ends.
func adminClients(t *testing.T) *kubetest.Clients {
	t.Helper()
	return clientsFor(t, srv.AdminConfig())
}

// clientsFor returns clients for cfg, closed when the test ends.
func clientsFor(t *testing.T, cfg *rest.Config) *kubetest.Clients {
	t.Helper()
	c, err := kubetest.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// newNamespace creates a namespace for the test.
func newNamespace(t *testing.T, c *kubetest.Clients) string {
	t.Helper()
	ns, err := kubetest.NewNamespace(t.Context(), c.Kube, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}
