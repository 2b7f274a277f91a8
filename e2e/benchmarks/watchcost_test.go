package benchmarks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// writerEnv, when set in the environment of this test binary, makes it the writer process of
// BenchmarkWatchCost: it applies the updates described by the variable's JSON and exits.
// costUpdates is how many updates a round of BenchmarkWatchCost applies.
const costUpdates = 5000

const writerEnv = "INFORMER_BENCH_WRITER"

// writerJob is what the writer process is told.
type writerJob struct {
	Host, Token string
	CA          []byte
	Namespace   string
	Updates     int
	Round       int
	// Writes is what the writer does (see podWrites); "" patches ConfigMaps.
	Writes string
}

// runWriter applies job's updates to the ConfigMaps cm-0000.., writeWorkers at a time.
func runWriter(job writerJob) error {
	cfg := &rest.Config{Host: job.Host, BearerToken: job.Token, TLSClientConfig: rest.TLSClientConfig{CAData: job.CA}, QPS: -1}
	c, err := kubetest.NewClients(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if job.Writes != "" {
		return runPodWriter(ctx, c, job)
	}
	return kubetest.Parallel(ctx, job.Updates, writeWorkers, func(ctx context.Context, i int) error {
		patch := fmt.Appendf(nil, `{"data":{"round":"%d-%d"}}`, job.Round, i)
		_, err := c.Kube.CoreV1().ConfigMaps(job.Namespace).Patch(ctx, fmt.Sprintf("cm-%04d", i%watchedConfigs), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

// costRound is one round of BenchmarkWatchCost: done closes when the update count reaches target.
type costRound struct {
	target int64
	done   chan struct{}
}

// BenchmarkWatchCost measures what the client process pays per watch event in steady state:
// one informer of the implementation named watches 1,000 ConfigMaps while a writer in a child
// process (whose CPU and memory getrusage(RUSAGE_SELF) does not count) applies 5,000 updates.
// It reports, from the start of the writes until the handler has seen them all, cpu-ns/event,
// allocs/event and B-alloc/event. Unlike BenchmarkWatchThroughput, each round runs one
// implementation alone, so that the process's cost is that implementation's. The benchmark waits
// on a channel the handler closes at the last update, not by polling, so that the window holds
// the informer's work (and starting the writer), not the wait's own timer wakeups.
func BenchmarkWatchCost(b *testing.B) {
	ns := configMaps(b)
	cfg := benchConfig()
	for _, impl := range []string{"upstream", "typed", "floor"} {
		b.Run("impl="+impl, func(b *testing.B) { watchCost(b, cfg, ns, impl, informer.FactoryOptions{}) })
	}
	// store=compact: our informer keeps a compact store (FactoryOptions.Informer.Compact); client-go
	// keeps full objects, as always.
	b.Run("store=compact", func(b *testing.B) {
		for _, impl := range []string{"upstream", "typed"} {
			b.Run("impl="+impl, func(b *testing.B) {
				watchCost(b, cfg, ns, impl, informer.FactoryOptions{Informer: informer.InformerOptions{Compact: true}})
			})
		}
	})
	// transport=http1: the watches over HTTP/1.1 (see http1Config); ours with
	// FactoryOptions.WatchHTTP1, client-go's informer and the floor with every request over it.
	b.Run("transport=http1", func(b *testing.B) {
		for _, impl := range []string{"upstream", "typed", "floor"} {
			b.Run("impl="+impl, func(b *testing.B) {
				if impl == "typed" {
					watchCost(b, cfg, ns, impl, informer.FactoryOptions{WatchHTTP1: true})
					return
				}
				watchCost(b, http1Config(cfg), ns, impl, informer.FactoryOptions{})
			})
		}
	})
}

// http1Config is cfg with HTTP/1.1 as its only protocol: a program built on client-go can have
// its watches over HTTP/1.1 only so, with every other request of the client.
func http1Config(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.TLSClientConfig.NextProtos = []string{"http/1.1"}
	return c
}

// watchCost runs one implementation of BenchmarkWatchCost: client-go's informer (impl upstream),
// ours, made with opts (impl typed), or the transport floor (impl floor: the same list and watch,
// frames read, nothing decoded; see floor_test.go).
func watchCost(b *testing.B, cfg *rest.Config, ns, impl string, opts informer.FactoryOptions) {
	b.ReportAllocs()
	// seen counts updates; the handler closes the round's channel
	// when the count reaches its target, so that the wait costs
	// no polling in the measured window.
	var seen atomic.Int64
	var round atomic.Pointer[costRound]
	onUpdate := func() {
		n := seen.Add(1)
		if r := round.Load(); r != nil && n == r.target {
			close(r.done)
		}
	}
	var stop func()
	var synced func() bool
	switch impl {
	case "floor":
		var err error
		modified := func(typ []byte) bool { return string(typ) == "MODIFIED" }
		if stop, err = floorWatcher(context.Background(), cfg, "configmaps", ns, modified, onUpdate); err != nil {
			b.Fatal(err)
		}
		synced = func() bool { return true } // it watches from the list's version
	case "upstream":
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
		inf := f.Core().V1().ConfigMaps().Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ any) { onUpdate() }}); err != nil {
			b.Fatal(err)
		}
		stopCh := make(chan struct{})
		f.Start(stopCh)
		synced, stop = inf.HasSynced, func() { close(stopCh); f.Shutdown() }
	default:
		opts.Namespace = ns
		f, err := informer.NewFactory(cfg, opts)
		if err != nil {
			b.Fatal(err)
		}
		inf, err := informer.For[*corev1.ConfigMap](f)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := inf.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.ConfigMap]{UpdateFunc: func(_, _ *corev1.ConfigMap) { onUpdate() }}); err != nil {
			b.Fatal(err)
		}
		f.Start(context.Background())
		synced, stop = inf.HasSynced, f.Shutdown
	}
	defer stop()
	waitSynced(b, synced)
	costRounds(b, cfg, writerJob{Namespace: ns, Updates: costUpdates}, costUpdates, &seen, &round)
}

// waitSynced waits, a minute at most, until synced says so.
func waitSynced(b *testing.B, synced func() bool) {
	deadline := time.Now().Add(time.Minute)
	for !synced() {
		if time.Now().After(deadline) {
			b.Fatal("the informer did not sync")
		}
		time.Sleep(time.Millisecond)
	}
}

// writerRounds numbers the writers' rounds of the process.
var writerRounds atomic.Int64

// costRounds runs the rounds of a watch cost benchmark: in each, a writer process does job (its
// round numbered) while the informer's handler counts the events in seen and closes the round's
// channel at the events-th; it reports what the process paid per event, and per minute of churn
// at the rate the writer and the server reach (churnCost).
func costRounds(b *testing.B, cfg *rest.Config, job writerJob, events int, seen *atomic.Int64, round *atomic.Pointer[costRound]) {
	var paid perUnit
	var churn churnCost
	var calls syscallsPerEvent
	for b.Loop() {
		b.StopTimer()
		// The round is numbered across the process, so that no round writes what one before it
		// wrote (an update that changes nothing makes no event, and the round would wait for it).
		job.Host, job.Token, job.CA, job.Round = cfg.Host, cfg.BearerToken, cfg.CAData, int(writerRounds.Add(1))
		spec, err := json.Marshal(job)
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), writerEnv+"="+string(spec))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		r := &costRound{target: seen.Load() + int64(events), done: make(chan struct{})}
		round.Store(r)
		mark := r.target - int64(events)
		stopProfile := profileWindow(b, b.Name())
		calls.start(b)
		cost, gc, began := costNow(), gcCPU(), time.Now()
		b.StartTimer()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		waitErr := make(chan error, 1)
		go func() { waitErr <- cmd.Wait() }()
		timeout := time.NewTimer(10 * time.Minute)
	wait:
		for {
			select {
			case <-r.done:
				break wait
			case err := <-waitErr:
				if err != nil {
					b.Fatalf("writer: %v", err)
				}
				waitErr = nil
			case <-timeout.C:
				b.Fatalf("saw %d of %d events", seen.Load()-mark, events)
			}
		}
		timeout.Stop()
		b.StopTimer()
		spent := costNow().since(cost)
		calls.stop(b, events)
		stopProfile()
		churn.add(spent.cpu, gcCPU()-gc, time.Since(began), events)
		if waitErr != nil {
			if err := <-waitErr; err != nil {
				b.Fatalf("writer: %v", err)
			}
		}
		paid.add(spent, events)
		b.StartTimer()
	}
	paid.report(b, "event")
	churn.report(b)
	calls.report(b)
}
