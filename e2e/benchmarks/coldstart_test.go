package benchmarks

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/typedkube/informer"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkColdStart starts an informer of every Pod (10,000 of them, of about 1.5 KB, made
// once per binary) and waits until it has synced; it reports the time that takes and the heap
// the informer holds afterwards, per Pod (B/object). Both use their defaults:
//   - impl=upstream: client-go's generated SharedInformerFactory
//     (informers.NewSharedInformerFactory(client, 0).Core().V1().Pods()), default feature
//     gates: protobuf (the typed client prefers it) and a watch-list stream (WatchListClient);
//   - impl=typed: informer.NewFactory and informer.For[*corev1.Pod]: protobuf and a watch-list
//     stream.
//
// Both are polled for HasSynced every millisecond, so that the wait itself costs the same.
func BenchmarkColdStart(b *testing.B) {
	pods(b)
	cfg := benchConfig()
	b.Run("impl=upstream", func(b *testing.B) {
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		coldStart(b, func(ctx context.Context) (synced func() bool, size func() int, stop func()) {
			f := informers.NewSharedInformerFactory(client, 0)
			inf := f.Core().V1().Pods().Informer()
			stopCh := make(chan struct{})
			f.Start(stopCh)
			return inf.HasSynced, func() int { return len(inf.GetStore().ListKeys()) }, func() {
				close(stopCh)
				f.Shutdown()
			}
		})
	})
	b.Run("impl=typed", func(b *testing.B) {
		coldStart(b, func(ctx context.Context) (synced func() bool, size func() int, stop func()) {
			f, err := informer.NewFactory(cfg, informer.FactoryOptions{})
			if err != nil {
				b.Fatal(err)
			}
			inf, err := informer.For[*corev1.Pod](f)
			if err != nil {
				b.Fatal(err)
			}
			f.Start(ctx)
			return inf.HasSynced, inf.GetIndexer().Len, f.Shutdown
		})
	})
}

// coldStart runs the loop of BenchmarkColdStart with start, which starts an informer and
// returns its HasSynced, its cache size and its stop. Besides the time, it reports per cached
// object what the client process paid from the start until the sync (see processCost):
// cpu-ns/object, allocs/object and B-alloc/object; the live heap the informer holds after the
// sync and a full collection (B/object); and peak/steady, the highest live heap seen during the
// sync (sampled every 2 ms, uncollected garbage included) over that steady heap, both above the
// baseline taken before the start.
func coldStart(b *testing.B, start func(ctx context.Context) (synced func() bool, size func() int, stop func())) {
	b.ReportAllocs()
	var heap, cpu, allocs, bytes, peakRatio float64
	var n int
	for b.Loop() {
		b.StopTimer()
		before := heapInUse()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		sampler := startHeapSampler()
		cost := costNow()
		b.StartTimer()
		synced, size, stop := start(ctx)
		for !synced() {
			if ctx.Err() != nil {
				b.Fatal("the informer did not sync within 5 minutes")
			}
			time.Sleep(time.Millisecond) // the same polling for both implementations
		}
		b.StopTimer()
		spent := costNow().since(cost)
		peak := sampler.Peak()
		objects := size()
		if objects < coldStartPods {
			b.Fatalf("synced with %d Pods, want at least %d", objects, coldStartPods)
		}
		steady := heapInUse() - before
		heap += float64(steady) / float64(objects)
		cpu += float64(spent.cpu.Nanoseconds()) / float64(objects)
		allocs += float64(spent.allocs) / float64(objects)
		bytes += float64(spent.bytes) / float64(objects)
		peakRatio += float64(int64(peak)-before) / float64(steady)
		stop()
		cancel()
		n++
		b.StartTimer()
	}
	b.ReportMetric(heap/float64(n), "B/object")
	b.ReportMetric(cpu/float64(n), "cpu-ns/object")
	b.ReportMetric(allocs/float64(n), "allocs/object")
	b.ReportMetric(bytes/float64(n), "B-alloc/object")
	b.ReportMetric(peakRatio/float64(n), "peak/steady")
}

// heapInUse returns the bytes of live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
