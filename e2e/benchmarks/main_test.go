// Package benchmarks measures informers against the real API server, ours beside client-go's,
// as sub-benchmarks named impl=upstream and impl=typed (see DESIGN.md, "Performance protocol"):
//
//   - BenchmarkColdStart: 10,000 Pods, from nothing until the cache has synced: time per
//     start, and the heap the informer holds after sync per object (B/object);
//   - BenchmarkWatchThroughput: 20,000 updates of 1,000 ConfigMaps applied by a writer while
//     both informers watch: events/s and the lag from write to handler (p50, p99).
//
// They need a server of their own and minutes of setup, so they run only with -bench:
//
//	cd e2e && go test -run '^$' -bench . -benchtime 3x -timeout 30m ./benchmarks
//
// Plain go test runs no server here.
package benchmarks

import (
	"flag"
	"os"
	"testing"

	"github.com/typedkube/informer/e2e/harness"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"go.uber.org/goleak"
)

var srv *harness.Server

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run()) // no benchmark asked for: no server
	}
	opts := harness.Options{LogDir: kubetest.LogDir("benchmarks")}
	goleak.VerifyTestMain(harness.Main(m, opts, func(s *harness.Server) { srv = s }))
}
