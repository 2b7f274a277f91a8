package benchmarks

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"github.com/typedkube/informer/e2e/internal/widget"
	"github.com/typedkube/informer/internal/testobj"
	"github.com/typedkube/informer/wire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// BenchmarkColdStart starts an informer of every Pod of a namespace (10,000 of them, and 50,000
// unless -short, of about 1.5 KB, made once per binary) and waits until it has synced; it reports
// the time that takes and what the client process paid per Pod (see coldStart). Both use their
// defaults:
//   - impl=upstream: client-go's generated SharedInformerFactory
//     (informers.NewSharedInformerFactory(client, 0).Core().V1().Pods()), default feature
//     gates: protobuf (the typed client prefers it) and a watch-list stream (WatchListClient);
//   - impl=typed: informer.NewFactory and informer.For[*corev1.Pod]: protobuf and a watch-list
//     stream, decoded by package wire (the factory's default DecodeWire);
//   - impl=floor: the transport floor (floor_test.go): the same watch-list stream, read frame by
//     frame, nothing decoded;
//   - impl=floor-own-inflater: the floor with the stream inflated by the library's inflater
//     (internal/gunzip), as our informer's is, not by compress/gzip in the HTTP transport.
//
// pods=Nk/store=compact is the same beside our informer with a compact store
// (InformerOptions.Compact): it lists the Pods' protobuf and keeps each as it came, undecoded.
// pods=10k/realistic starts from 10,000 realistic Pods of about 11 KB (see coldStartRealistic), and
// pods=10k/harsh from 10,000 harsh ones (testobj.HarshPod: each one's managedFields differ from
// its siblings' in a few bytes), in every mode; pods=10k/realistic/tokens=own from 10,000
// realistic Pods written through a server that runs ServiceAccount admission, which gives each
// a token volume of its own as in a cluster (testobj.OwnTokenPod; the realistic Pods' create
// names it for the ReplicaSet), with either side's defaults and a compact store. With -short
// (CI's smoke run), these three start from 2,000 Pods each, as pods=2k/realistic, pods=2k/harsh
// and pods=2k/realistic/tokens=own (realisticCount).
//
// widgets=10k (2k with -short) starts from Widgets, a CRD served in JSON: client-go's
// cache.NewSharedIndexInformer over the Widget typed client, and our For[*widget.Widget].
//
// Both are polled for HasSynced every millisecond, so that the wait itself costs the same.
func BenchmarkColdStart(b *testing.B) {
	cfg := benchConfig()
	counts, realistic := podCounts(b), realisticCount()
	for _, n := range counts {
		ns := pods(b, n)
		b.Run(fmt.Sprintf("pods=%dk", n/1000), func(b *testing.B) {
			b.Run("impl=upstream", func(b *testing.B) {
				coldStart(b, n, upstreamPods(b, cfg, ns, nil))
			})
			b.Run("impl=typed", func(b *testing.B) {
				coldStart(b, n, typedPods(b, cfg, ns, informer.FactoryOptions{}))
			})
			b.Run("impl=floor", func(b *testing.B) { coldStart(b, n, floorPods(b, cfg, ns, n)) })
			// The floor inflating as our informer does: reported, not paired.
			b.Run("impl=floor-own-inflater", func(b *testing.B) { coldStart(b, n, floorPodsOwnInflater(b, cfg, ns, n)) })
			// Our informer with a compact store, beside client-go's with full objects.
			b.Run("store=compact", func(b *testing.B) {
				b.Run("impl=upstream", func(b *testing.B) {
					coldStart(b, n, upstreamPods(b, cfg, ns, nil))
				})
				b.Run("impl=typed", func(b *testing.B) {
					coldStart(b, n, typedPods(b, cfg, ns, informer.FactoryOptions{Informer: informer.InformerOptions{Compact: true}}))
				})
			})
			if n == realistic {
				coldStartRealisticSets(b, cfg, n)
			}
		})
	}
	if !slices.Contains(counts, realistic) {
		b.Run(fmt.Sprintf("pods=%dk", realistic/1000), func(b *testing.B) { coldStartRealisticSets(b, cfg, realistic) })
	}
	n := widgetCount()
	ns := widgets(b, n)
	b.Run(fmt.Sprintf("widgets=%dk", n/1000), func(b *testing.B) {
		b.Run("impl=upstream", func(b *testing.B) { coldStart(b, n, upstreamWidgets(b, cfg, ns)) })
		b.Run("impl=typed", func(b *testing.B) { coldStart(b, n, typedWidgets(b, cfg, ns)) })
	})
}

// coldStartRealisticSets is BenchmarkColdStart over n realistic Pods, n harsh ones and n
// realistic ones with tokens of their own (see coldStartRealistic).
func coldStartRealisticSets(b *testing.B, cfg *rest.Config, n int) {
	b.Run("realistic", func(b *testing.B) { coldStartRealistic(b, cfg, n, realisticPods(b, n), true) })
	b.Run("harsh", func(b *testing.B) { coldStartRealistic(b, cfg, n, harshPods(b, n), true) })
	b.Run("realistic/tokens=own", func(b *testing.B) { coldStartRealistic(b, cfg, n, ownTokenPods(b, n), false) })
}

// realisticCount is how many realistic, harsh and own-token Pods BenchmarkColdStart and
// BenchmarkPeakRSS start from: 10,000, or 2,000 with -short (CI's smoke run, where creating
// 10,000 of each kind took about four of its minutes and nothing is timed).
func realisticCount() int {
	if testing.Short() {
		return 2000
	}
	return coldStartPods
}

// widgetCount is how many Widgets BenchmarkColdStart starts from: 10,000, or 2,000 with -short.
func widgetCount() int {
	if testing.Short() {
		return 2000
	}
	return 10000
}

// upstreamWidgets starts client-go's informer of the Widgets of ns, as a CRD's generated
// informer does: cache.NewSharedIndexInformer over its typed client (JSON), with the namespace
// index.
func upstreamWidgets(b *testing.B, cfg *rest.Config, ns string) startFunc {
	client, err := widget.NewClient(cfg, ns)
	if err != nil {
		b.Fatal(err)
	}
	return func(ctx context.Context) (synced func() bool, size func() int, stats func() informer.Stats, stop func()) {
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) {
				return client.List(ctx, o)
			},
			WatchFuncWithContext: client.Watch,
		}
		inf := cache.NewSharedIndexInformer(lw, &widget.Widget{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); inf.RunWithContext(ctx) }()
		return inf.HasSynced, func() int { return len(inf.GetStore().ListKeys()) }, nil, func() { cancel(); <-done }
	}
}

// typedWidgets starts our informer of the Widgets of ns: For[*widget.Widget] with the Widget
// scheme, decoded from JSON by package wire.
func typedWidgets(b *testing.B, cfg *rest.Config, ns string) startFunc {
	return func(ctx context.Context) (synced func() bool, size func() int, stats func() informer.Stats, stop func()) {
		f, err := informer.NewFactory(cfg, informer.FactoryOptions{Namespace: ns, Scheme: widget.NewScheme()})
		if err != nil {
			b.Fatal(err)
		}
		inf, err := informer.For[*widget.Widget](f)
		if err != nil {
			b.Fatal(err)
		}
		f.Start(ctx)
		return inf.HasSynced, inf.GetIndexer().Len, inf.Stats, f.Shutdown
	}
}

// podCounts returns the sizes of the Pod namespaces BenchmarkColdStart starts from: 10,000 and
// 50,000, or 10,000 alone with -short; INFORMER_BENCH_PODS (such as "10000,50000") overrides
// both.
func podCounts(b *testing.B) []int {
	if env := os.Getenv("INFORMER_BENCH_PODS"); env != "" {
		var counts []int
		for _, f := range strings.Split(env, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1000 {
				b.Fatalf("INFORMER_BENCH_PODS=%q: want counts of at least 1000, separated by commas", env)
			}
			counts = append(counts, n)
		}
		return counts
	}
	if testing.Short() {
		return []int{10000}
	}
	return []int{10000, 50000}
}

// upstreamPods starts client-go's Pod informer over ns, with transform if it is set.
func upstreamPods(b fataler, cfg *rest.Config, ns string, transform cache.TransformFunc) startFunc {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return func(ctx context.Context) (synced func() bool, size func() int, stats func() informer.Stats, stop func()) {
		opts := []informers.SharedInformerOption{informers.WithNamespace(ns)}
		if transform != nil {
			opts = append(opts, informers.WithTransform(transform))
		}
		f := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
		inf := f.Core().V1().Pods().Informer()
		stopCh := make(chan struct{})
		f.Start(stopCh)
		return inf.HasSynced, func() int { return len(inf.GetStore().ListKeys()) }, nil, func() {
			close(stopCh)
			f.Shutdown()
		}
	}
}

// typedPods starts our Pod informer over ns.
func typedPods(b fataler, cfg *rest.Config, ns string, opts informer.FactoryOptions) startFunc {
	return func(ctx context.Context) (synced func() bool, size func() int, stats func() informer.Stats, stop func()) {
		opts.Namespace = ns
		f, err := informer.NewFactory(cfg, opts)
		if err != nil {
			b.Fatal(err)
		}
		inf, err := informer.For[*corev1.Pod](f)
		if err != nil {
			b.Fatal(err)
		}
		f.Start(ctx)
		return inf.HasSynced, inf.GetIndexer().Len, inf.Stats, f.Shutdown
	}
}

// slimPod is the transform a client-go user writes to keep the fields of kubetest.PodSlim.
func slimPod(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		return testobj.SlimPod(p), nil
	}
	return obj, nil
}

// coldStartRealistic is BenchmarkColdStart over the n realistic Pods of ns (testobj.RealisticPods, about
// 11 KB of protobuf, managedFields written by the API server for a controller's create and a
// kubelet's status update), with either side's defaults (impl=upstream, impl=typed), without
// managedFields (mode=nomanagedfields: client-go with a transform dropping them, ours with
// Wire.DropManagedFields), for a controller that needs a few fields (mode=projection, as
// BenchmarkColdStartProjection), and with a compact store, with and without managedFields; with
// modes false, either side's defaults, the floor and a compact store with managedFields alone.
func coldStartRealistic(b *testing.B, cfg *rest.Config, n int, ns string, modes bool) {
	b.Run("impl=upstream", func(b *testing.B) { coldStart(b, n, upstreamPods(b, cfg, ns, nil)) })
	b.Run("impl=typed", func(b *testing.B) { coldStart(b, n, typedPods(b, cfg, ns, informer.FactoryOptions{})) })
	b.Run("impl=floor", func(b *testing.B) { coldStart(b, n, floorPods(b, cfg, ns, n)) })
	if modes {
		b.Run("mode=nomanagedfields", func(b *testing.B) {
			b.Run("impl=upstream", func(b *testing.B) { coldStart(b, n, upstreamPods(b, cfg, ns, dropManagedFields)) })
			b.Run("impl=typed", func(b *testing.B) {
				coldStart(b, n, typedPods(b, cfg, ns, informer.FactoryOptions{Wire: wire.Options{DropManagedFields: true}}))
			})
		})
		b.Run("mode=projection", func(b *testing.B) {
			b.Run("impl=upstream", func(b *testing.B) { coldStart(b, n, upstreamPods(b, cfg, ns, slimPod)) })
			b.Run("impl=typed", func(b *testing.B) { coldStart(b, n, typedProjection(b, cfg, ns)) })
		})
	}
	b.Run("store=compact", func(b *testing.B) {
		b.Run("impl=upstream", func(b *testing.B) { coldStart(b, n, upstreamPods(b, cfg, ns, nil)) })
		b.Run("impl=typed", func(b *testing.B) {
			coldStart(b, n, typedPods(b, cfg, ns, informer.FactoryOptions{Informer: informer.InformerOptions{Compact: true}}))
		})
		if modes {
			b.Run("mode=nomanagedfields", func(b *testing.B) {
				b.Run("impl=upstream", func(b *testing.B) { coldStart(b, n, upstreamPods(b, cfg, ns, dropManagedFields)) })
				b.Run("impl=typed", func(b *testing.B) {
					coldStart(b, n, typedPods(b, cfg, ns, informer.FactoryOptions{Informer: informer.InformerOptions{Compact: true}, Wire: wire.Options{DropManagedFields: true}}))
				})
			})
		}
	})
}

// dropManagedFields is the transform a client-go user writes to drop managedFields, as
// controller-runtime's cache.TransformStripManagedFields does.
func dropManagedFields(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		p.ManagedFields = nil
	}
	return obj, nil
}

// typedProjection starts our informer of kubetest.PodSlim over ns, annotations dropped.
func typedProjection(b *testing.B, cfg *rest.Config, ns string) startFunc {
	return func(ctx context.Context) (synced func() bool, size func() int, stats func() informer.Stats, stop func()) {
		f, err := informer.NewFactory(cfg, informer.FactoryOptions{Namespace: ns, Wire: wire.Options{Annotations: func(string) bool { return false }}})
		if err != nil {
			b.Fatal(err)
		}
		inf, err := informer.ForProjection[kubetest.PodSlim, corev1.Pod](f)
		if err != nil {
			b.Fatal(err)
		}
		f.Start(ctx)
		return inf.HasSynced, inf.GetIndexer().Len, inf.Stats, f.Shutdown
	}
}

// BenchmarkColdStartProjection is BenchmarkColdStart over 10,000 Pods for a controller that
// needs only name, namespace, uid, resourceVersion, labels, ownerReferences, nodeName, phase and
// its containers' names and images:
//   - impl=upstream: client-go's informer with a transform keeping those fields (slimPod), as
//     users do today;
//   - impl=typed: informer.ForProjection[kubetest.PodSlim, corev1.Pod], decoding those fields straight
//     from the protobuf bytes (annotations dropped by FactoryOptions.Wire, as the transform does).
func BenchmarkColdStartProjection(b *testing.B) {
	cfg := benchConfig()
	ns := pods(b, coldStartPods)
	b.Run("impl=upstream", func(b *testing.B) {
		coldStart(b, coldStartPods, upstreamPods(b, cfg, ns, slimPod))
	})
	b.Run("impl=typed", func(b *testing.B) { coldStart(b, coldStartPods, typedProjection(b, cfg, ns)) })
}

// fataler is what the start functions need of a *testing.B: BenchmarkPeakRSS's child process,
// which has none, gives them one that panics (see childFatal).
type fataler interface{ Fatal(args ...any) }

// startFunc starts an informer and returns its HasSynced, its cache size, its Stats (nil for
// client-go's) and its stop.
type startFunc func(ctx context.Context) (synced func() bool, size func() int, stats func() informer.Stats, stop func())

// coldStart runs the loop of BenchmarkColdStart with start, which starts an informer and
// returns its HasSynced, its cache size, its Stats and its stop. Besides the time, it reports per
// cached object what the client process paid from the start until the sync (see processCost):
// cpu-ns/object, allocs/object and B-alloc/object; the live heap the informer holds after the
// sync and a full collection (B/object), and beside it, for ours, what the informer tells of it
// (Stats.StoreBytes, store-B/object: its cache alone, not its client; e2e/memory checks it
// against the heap); and peak/steady, the highest live heap seen during the
// sync (sampled every 2 ms, uncollected garbage included) over that steady heap, both above the
// baseline taken before the start. The peak comes from a start of its own, before the measured
// one in each round: the sampler's wakeups would otherwise count as the informer's CPU (on this
// 2-core VM, as much as a few µs per object for either implementation).
func coldStart(b *testing.B, want int, start startFunc) {
	b.ReportAllocs()
	var heap, storeHeap, peakRatio float64
	var told bool // the informer tells StoreBytes
	var paid perUnit
	// run starts an informer, waits for its sync and stops it, and returns what the process paid,
	// the cache size and the heap it holds once synced; with sample, it also samples the live
	// heap every 2 ms and returns its peak. Both heaps are above the one before the start. The
	// timer runs in the measured start.
	run := func(sample bool) (spent processCost, objects int, steady, peak, store int64) {
		before := heapInUse()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		var sampler *heapSampler
		if sample {
			sampler = startHeapSampler()
		}
		stopProfile := func() {}
		if !sample {
			stopProfile = profileWindow(b, b.Name())
		}
		cost := costNow()
		if !sample {
			b.StartTimer()
		}
		synced, size, stats, stop := start(ctx)
		defer stop()
		for !synced() {
			if ctx.Err() != nil {
				b.Fatal("the informer did not sync within 5 minutes")
			}
			// The same polling for both implementations, seldom enough that its wakeups cost
			// little: the CPU is measured, and an idle process pays for nothing but them.
			time.Sleep(20 * time.Millisecond)
		}
		if !sample {
			b.StopTimer()
		}
		spent = costNow().since(cost)
		stopProfile()
		if sample {
			peak = int64(sampler.Peak()) - before
		}
		objects = size()
		if objects < want {
			b.Fatalf("synced with %d Pods, want at least %d", objects, want)
		}
		steady = heapInUse() - before
		if told = stats != nil; told {
			store = stats().StoreBytes
		}
		return spent, objects, steady, peak, store
	}
	for b.Loop() {
		b.StopTimer()
		// The peak, from a start with the heap sampler; then the cost and the heap held, from a
		// second start without it, whose wakeups every 2 ms would count as CPU of the informer.
		// The first start also readies the process's memory for the second: the first start in
		// a process pays for heap pages the VM's host has not backed yet, several times the
		// system time of the same page faults later (1.7 against 0.4 s for client-go's 50k Pods),
		// and it would be client-go's start each time.
		_, _, _, peak, _ := run(true)
		spent, objects, steady, _, store := run(false)
		heap += float64(steady) / float64(objects)
		storeHeap += float64(store) / float64(objects)
		paid.add(spent, objects)
		peakRatio += float64(peak) / float64(steady)
		b.StartTimer()
	}
	n := float64(paid.rounds)
	b.ReportMetric(heap/n, "B/object")
	if told {
		b.ReportMetric(storeHeap/n, "store-B/object")
	}
	paid.report(b, "object")
	b.ReportMetric(peakRatio/n, "peak/steady")
}

// heapInUse returns the bytes of live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
