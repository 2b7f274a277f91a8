// Package benchmarks measures informers against the real API server, ours beside client-go's,
// as sub-benchmarks named impl=upstream and impl=typed (see DESIGN.md, "Performance protocol").
// What the client process pays is measured with getrusage of the process itself (the servers,
// and BenchmarkWatchCost's writer, are child processes) and the Go runtime's allocation counters:
//
//   - BenchmarkColdStart/pods=10k|50k: from nothing until the cache has synced: cpu-ns/object,
//     allocs/object, B-alloc/object, B/object (heap held after sync), store-B/object (what our
//     informer's Stats.StoreBytes tells of its cache) and peak/steady;
//   - BenchmarkColdStart/pods=10k/realistic: the same over realistic Pods of about 11 KB, with
//     managedFields written by the server, full, without managedFields and projected;
//   - BenchmarkColdStartProjection: the same over 10,000 Pods for a controller that needs a few
//     fields: ours caches a projection decoded from the wire, client-go's a transform's output;
//   - BenchmarkRelist/changed=0%|10%: a relist of 10,000 PodTemplates after 410 Gone;
//   - BenchmarkWatchCost: cpu-ns/event of one informer watching 5,000 updates;
//   - BenchmarkWatchThroughput: 20,000 updates of 1,000 ConfigMaps applied by a writer while
//     both informers watch: events/s and the lag from write to handler (p50, p99);
//   - BenchmarkManagerColdStart: a controller-runtime manager with a controller of 10,000 Pods,
//     on controller-runtime's cache (impl=upstream) and on typedcache (impl=typed), until every
//     Pod was reconciled once: the same metrics as BenchmarkColdStart;
//   - BenchmarkCacheList, BenchmarkCacheGet: the two caches' reads, with deep copies: 100 Pods
//     of 100,000 by a label selector, and one Pod;
//   - BenchmarkPeakRSS: the peak resident set (VmHWM) and heap of informers and managers, each
//     in a process of its own, over realistic and harsh Pods, with the options operators keep;
//   - BenchmarkBinarySize: the size of the same program on each side (no server).
//
// They need a server of their own and minutes of setup, so they run only with -bench:
//
//	cd e2e && go test -run '^$' -bench . -benchtime 3x -timeout 30m ./benchmarks
//
// Plain go test runs no server here.
package benchmarks

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"github.com/typedkube/informer/e2e/harness"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"go.uber.org/goleak"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

var srv *harness.Server

func TestMain(m *testing.M) {
	if spec := os.Getenv(writerEnv); spec != "" {
		var job writerJob
		if err := json.Unmarshal([]byte(spec), &job); err != nil {
			fmt.Fprintln(os.Stderr, "writer:", err)
			os.Exit(2)
		}
		if err := runWriter(job); err != nil {
			fmt.Fprintln(os.Stderr, "writer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if spec := os.Getenv(peakEnv); spec != "" {
		var job peakJob
		if err := json.Unmarshal([]byte(spec), &job); err != nil {
			fmt.Fprintln(os.Stderr, "peak:", err)
			os.Exit(2)
		}
		ctrllog.SetLogger(logr.Discard())
		if err := runPeak(job); err != nil {
			fmt.Fprintln(os.Stderr, "peak:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run()) // no benchmark asked for: no server
	}
	// controller-runtime logs through a logger set once per process; without one it warns.
	ctrllog.SetLogger(logr.Discard())
	opts := harness.Options{LogDir: kubetest.LogDir("benchmarks")}
	goleak.VerifyTestMain(harness.Main(m, opts, func(s *harness.Server) { srv = s }))
}
