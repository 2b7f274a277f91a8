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
// returns its HasSynced, its cache size and its stop.
func coldStart(b *testing.B, start func(ctx context.Context) (synced func() bool, size func() int, stop func())) {
	b.ReportAllocs()
	var heap float64
	var n int
	for b.Loop() {
		b.StopTimer()
		before := heapInUse()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		b.StartTimer()
		synced, size, stop := start(ctx)
		for !synced() {
			if ctx.Err() != nil {
				b.Fatal("the informer did not sync within 5 minutes")
			}
			time.Sleep(time.Millisecond) // the same polling for both implementations
		}
		b.StopTimer()
		objects := size()
		if objects < coldStartPods {
			b.Fatalf("synced with %d Pods, want at least %d", objects, coldStartPods)
		}
		heap += float64(heapInUse()-before) / float64(objects)
		stop()
		cancel()
		n++
		b.StartTimer()
	}
	b.ReportMetric(heap/float64(n), "B/object")
}

// heapInUse returns the bytes of live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
