package informer

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// The benchmarks of the informer, beside client-go's SharedIndexInformer
// with its default feature gates except WatchListClient, which the fake
// below cannot serve (it sends no initial-events-end bookmark); ours runs
// with WatchListOff for the same reason. Both get the same pre-built Pods
// from benchLW.

// benchLW serves a fixed list and, per watch, the events of a channel the
// benchmark feeds. It serves both our ListerWatcher and client-go's.
type benchLW struct {
	pods   []*corev1.Pod
	list   *corev1.PodList // the same Pods, as client-go lists them
	events chan watch.Event
}

func newBenchLW(pods []*corev1.Pod) *benchLW {
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
	l.Items = make([]corev1.Pod, len(pods))
	for i, p := range pods {
		l.Items[i] = *p
	}
	return &benchLW{pods: pods, list: l, events: make(chan watch.Event, 1024)}
}

func (l *benchLW) List(context.Context, metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
	return &ListPage[*corev1.Pod]{Items: slices.Clone(l.pods), ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
}

func (l *benchLW) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewProxyWatcher(l.events), nil
}

func (l *benchLW) upstream() cache.ListerWatcher {
	return &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (apiruntime.Object, error) {
			return l.list, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewProxyWatcher(l.events), nil
		},
	}
}

// countingHandler counts notifications and closes done when it has seen
// want of them.
type countingHandler struct {
	n    atomic.Int64
	want int64
	done chan struct{}
}

func newCountingHandler(want int) *countingHandler {
	return &countingHandler{want: int64(want), done: make(chan struct{})}
}

func (h *countingHandler) count() {
	if h.n.Add(1) == h.want {
		close(h.done)
	}
}

func (h *countingHandler) OnAdd(*corev1.Pod, bool)             { h.count() }
func (h *countingHandler) OnUpdate(_, _ *corev1.Pod)           { h.count() }
func (h *countingHandler) OnDelete(DeletedObject[*corev1.Pod]) { h.count() }
func (h *countingHandler) upstreamHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { h.count() },
		UpdateFunc: func(_, _ any) { h.count() },
		DeleteFunc: func(any) { h.count() },
	}
}

// informerRun is one informer of either implementation, running.
type informerRun struct {
	stop func()
}

func runTypedInformer(b *testing.B, lw *benchLW, handlers ...ResourceEventHandler[*corev1.Pod]) informerRun {
	inf, err := NewSharedIndexInformer(ListerWatcher[*corev1.Pod](lw), SharedIndexInformerOptions[*corev1.Pod]{
		Reflector: ReflectorOptions{WatchList: WatchListOff},
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, h := range handlers {
		inf.AddEventHandler(h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { inf.Run(ctx) })
	return informerRun{stop: func() { cancel(); wg.Wait() }}
}

func runUpstreamInformer(b *testing.B, lw *benchLW, handlers ...cache.ResourceEventHandler) informerRun {
	inf := cache.NewSharedIndexInformer(lw.upstream(), &corev1.Pod{}, 0, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
	})
	for _, h := range handlers {
		inf.AddEventHandler(h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	return informerRun{stop: func() { cancel(); wg.Wait() }}
}

// impls runs f for both implementations as sub-benchmarks; start starts an
// informer on lw with n counting handlers, each expecting want
// notifications.
func impls(b *testing.B, f func(b *testing.B, start func(lw *benchLW, handlers []*countingHandler) informerRun)) {
	clientfeaturestesting.SetFeatureDuringTest(b, clientfeatures.WatchListClient, false)
	b.Run("impl=upstream", func(b *testing.B) {
		f(b, func(lw *benchLW, hs []*countingHandler) informerRun {
			var uhs []cache.ResourceEventHandler
			for _, h := range hs {
				uhs = append(uhs, h.upstreamHandler())
			}
			return runUpstreamInformer(b, lw, uhs...)
		})
	})
	b.Run("impl=typed", func(b *testing.B) {
		f(b, func(lw *benchLW, hs []*countingHandler) informerRun {
			var ths []ResourceEventHandler[*corev1.Pod]
			for _, h := range hs {
				ths = append(ths, h)
			}
			return runTypedInformer(b, lw, ths...)
		})
	})
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkInformerColdStart starts an informer on n pre-built Pods and
// waits until its handler has seen every add. B/object is the heap the
// informer holds after that, per Pod, the Pods themselves excluded.
func BenchmarkInformerColdStart(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		pods := benchPods()[:n]
		b.Run("pods="+count(n), func(b *testing.B) {
			impls(b, func(b *testing.B, start func(*benchLW, []*countingHandler) informerRun) {
				lw := newBenchLW(pods)
				b.ReportAllocs()
				var perObject float64
				for b.Loop() {
					b.StopTimer()
					before := heapInUse()
					h := newCountingHandler(n)
					b.StartTimer()
					run := start(lw, []*countingHandler{h})
					<-h.done
					b.StopTimer()
					perObject = float64(heapInUse()-before) / float64(n)
					run.stop()
					b.StartTimer()
				}
				b.ReportMetric(perObject, "B/object")
			})
		})
	}
}

// modifiedEvents returns n Modified events cycling over pods, each with a
// new resource version, pre-built so that the benchmark measures only the
// informer.
func modifiedEvents(pods []*corev1.Pod, n int) []watch.Event {
	out := make([]watch.Event, n)
	for i := range out {
		p := *pods[i%len(pods)]
		p.ResourceVersion = strconv.Itoa(2 + i)
		out[i] = watch.Event{Type: watch.Modified, Object: &p}
	}
	return out
}

// BenchmarkInformerWatch feeds 200k Modified events (over 10k Pods) to a
// synced informer and waits until each of its handlers has seen them all.
func BenchmarkInformerWatch(b *testing.B) {
	const objects, events = 10_000, 200_000
	pods := benchPods()[:objects]
	evs := modifiedEvents(pods, events)
	for _, handlers := range []int{1, 4} {
		b.Run(fmt.Sprintf("handlers=%d", handlers), func(b *testing.B) {
			impls(b, func(b *testing.B, start func(*benchLW, []*countingHandler) informerRun) {
				b.ReportAllocs()
				var elapsed time.Duration
				for b.Loop() {
					b.StopTimer()
					lw := newBenchLW(pods)
					hs := make([]*countingHandler, handlers)
					for i := range hs {
						hs[i] = newCountingHandler(objects + events)
					}
					run := start(lw, hs)
					for hs[0].n.Load() < objects {
						runtime.Gosched()
					}
					b.StartTimer()
					t0 := time.Now()
					for _, ev := range evs {
						lw.events <- ev
					}
					for _, h := range hs {
						<-h.done
					}
					elapsed += time.Since(t0)
					b.StopTimer()
					run.stop()
					b.StartTimer()
				}
				b.ReportMetric(float64(events*b.N)/elapsed.Seconds(), "events/s")
			})
		})
	}
}

// latencyHandler records, per event, the time from send to handler; the
// event's resource version minus two is its index in sent.
type latencyHandler struct {
	sent []atomic.Int64 // send times, UnixNano
	lat  []time.Duration
	n    atomic.Int64
	want int64
	done chan struct{}
}

func newLatencyHandler(events int, sent []atomic.Int64) *latencyHandler {
	return &latencyHandler{sent: sent, lat: make([]time.Duration, events), want: int64(events), done: make(chan struct{})}
}

func (h *latencyHandler) observe(p *corev1.Pod) {
	now := time.Now().UnixNano()
	i, err := strconv.Atoi(p.ResourceVersion)
	if err != nil || i < 2 || i-2 >= len(h.lat) {
		return // the initial list
	}
	h.lat[i-2] = time.Duration(now - h.sent[i-2].Load())
	if h.n.Add(1) == h.want {
		close(h.done)
	}
}

func (h *latencyHandler) OnAdd(p *corev1.Pod, _ bool)         { h.observe(p) }
func (h *latencyHandler) OnUpdate(_, p *corev1.Pod)           { h.observe(p) }
func (h *latencyHandler) OnDelete(DeletedObject[*corev1.Pod]) {}
func (h *latencyHandler) upstreamHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { h.observe(o.(*corev1.Pod)) },
		UpdateFunc: func(_, o any) { h.observe(o.(*corev1.Pod)) },
	}
}

func (h *latencyHandler) percentile(p float64) time.Duration {
	lat := slices.Clone(h.lat)
	slices.Sort(lat)
	return lat[int(p*float64(len(lat)-1))]
}

// sendPaced sends evs at rate events per second, in bursts every
// millisecond, writing each send time into sent just before the send.
func sendPaced(lw *benchLW, evs []watch.Event, rate int, sent []atomic.Int64) {
	perTick := max(rate/1000, 1)
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for i := 0; i < len(evs); {
		<-t.C
		for j := 0; j < perTick && i < len(evs); j, i = j+1, i+1 {
			sent[i].Store(time.Now().UnixNano())
			lw.events <- evs[i]
		}
	}
}

// startLatencyRun starts impl on lw with fast latency handlers; stalled, if
// set, is added too and blocks until released.
func startLatencyRun(b *testing.B, impl string, lw *benchLW, fast *latencyHandler, stalled chan struct{}, coalesce bool) informerRun {
	block := func() { <-stalled }
	switch impl {
	case "upstream":
		hs := []cache.ResourceEventHandler{fast.upstreamHandler()}
		if stalled != nil {
			hs = append(hs, cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ any) { block() }})
		}
		return runUpstreamInformer(b, lw, hs...)
	default:
		inf, err := NewSharedIndexInformer(ListerWatcher[*corev1.Pod](lw), SharedIndexInformerOptions[*corev1.Pod]{
			Reflector: ReflectorOptions{WatchList: WatchListOff},
		})
		if err != nil {
			b.Fatal(err)
		}
		inf.AddEventHandler(fast)
		if stalled != nil {
			inf.AddEventHandler(ResourceEventHandlerFuncs[*corev1.Pod]{UpdateFunc: func(_, _ *corev1.Pod) { block() }},
				HandlerOptions{Coalesce: coalesce})
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { inf.Run(ctx) })
		for !inf.HasSynced() {
			runtime.Gosched()
		}
		return informerRun{func() { cancel(); wg.Wait() }}
	}
}

// BenchmarkInformerLatency sends Modified events at 10k events/s to a
// synced informer over 10k Pods and reports the time from send to handler.
func BenchmarkInformerLatency(b *testing.B) {
	const objects, events, rate = 10_000, 10_000, 10_000
	pods := benchPods()[:objects]
	evs := modifiedEvents(pods, events)
	clientfeaturestesting.SetFeatureDuringTest(b, clientfeatures.WatchListClient, false)
	for _, impl := range []string{"upstream", "typed"} {
		b.Run("impl="+impl, func(b *testing.B) {
			var p50, p99 time.Duration
			for b.Loop() {
				sent := make([]atomic.Int64, events)
				lw := newBenchLW(pods)
				h := newLatencyHandler(events, sent)
				run := startLatencyRun(b, impl, lw, h, nil, false)
				time.Sleep(100 * time.Millisecond) // let the informer sync
				sendPaced(lw, evs, rate, sent)
				<-h.done
				run.stop()
				p50, p99 = h.percentile(0.5), h.percentile(0.99)
			}
			b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(p99.Nanoseconds()), "p99-ns")
		})
	}
}

// BenchmarkInformerStalledHandler runs a fast handler beside one that never
// returns while 100k Modified events over 10k Pods go by at 100k events/s.
// It reports the fast handler's latency and how much the heap grew while
// the stalled handler held its notifications: without bounds (both
// implementations), and with Coalesce (ours; client-go has no such mode,
// so its numbers are the unbounded ones again).
func BenchmarkInformerStalledHandler(b *testing.B) {
	const objects, events, rate = 10_000, 100_000, 100_000
	pods := benchPods()[:objects]
	evs := modifiedEvents(pods, events)
	clientfeaturestesting.SetFeatureDuringTest(b, clientfeatures.WatchListClient, false)
	for _, mode := range []string{"unbounded", "coalesce"} {
		b.Run("mode="+mode, func(b *testing.B) {
			for _, impl := range []string{"upstream", "typed"} {
				b.Run("impl="+impl, func(b *testing.B) {
					var p99 time.Duration
					var growth float64
					for b.Loop() {
						sent := make([]atomic.Int64, events)
						lw := newBenchLW(pods)
						fast := newLatencyHandler(events, sent)
						stalled := make(chan struct{})
						run := startLatencyRun(b, impl, lw, fast, stalled, mode == "coalesce")
						time.Sleep(100 * time.Millisecond)
						before := heapInUse()
						sendPaced(lw, evs, rate, sent)
						<-fast.done
						growth = float64(heapInUse()) - float64(before)
						close(stalled)
						run.stop()
						p99 = fast.percentile(0.99)
					}
					b.ReportMetric(float64(p99.Nanoseconds()), "fast-p99-ns")
					b.ReportMetric(growth, "stalled-heap-B")
				})
			}
		})
	}
}

// BenchmarkListerList lists, with a label selector, one namespace (1%) of
// 100k Pods: our Lister against client-go's generated Pod lister.
func BenchmarkListerList(b *testing.B) {
	pods := benchPods()
	up := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	ours := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]})
	for _, p := range pods {
		up.Add(p)
		ours.Add(p)
	}
	upLister := corelisters.NewPodLister(up)
	lister := Lister[*corev1.Pod]{indexer: ours}
	selector := labels.SelectorFromSet(labels.Set{"tier": "web"})
	n := 0
	run(b, "impl=upstream", func() { got, _ := upLister.Pods("ns-42").List(selector); n += len(got) })
	run(b, "impl=typed", func() { got, _ := lister.ByNamespace("ns-42").List(selector); n += len(got) })
	if n == 0 {
		b.Fatal("listed nothing")
	}
}

// BenchmarkIndexerByIndexUnderWrites reads one namespace (1% of 100k Pods)
// while another goroutine updates Pods as fast as it can.
func BenchmarkIndexerByIndexUnderWrites(b *testing.B) {
	pods, updated := benchPods(), benchPodsUpdated()
	up := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	typedUp := cache.NewTypedSharedIndexInformer[*corev1.Pod](up).GetTypedIndexer()
	ours := newTypedBenchIndexer()
	for _, p := range pods {
		up.GetIndexer().Add(p)
		ours.Add(p)
	}
	write := func(update func(*corev1.Pod)) (stop func()) {
		return inBackground(func(i int) {
			if i%2 == 0 {
				update(updated[i/2%len(pods)])
			} else {
				update(pods[i/2%len(pods)])
			}
		})
	}
	n := 0
	b.Run("impl=upstream", func(b *testing.B) {
		stop := write(func(p *corev1.Pod) { up.GetIndexer().Update(p) })
		defer stop()
		b.ReportAllocs()
		for b.Loop() {
			got, _ := typedUp.ByTypedIndex(cache.NamespaceIndex, "ns-42")
			n += len(got)
		}
	})
	b.Run("impl=typed", func(b *testing.B) {
		stop := write(func(p *corev1.Pod) { ours.Update(p) })
		defer stop()
		b.ReportAllocs()
		for b.Loop() {
			got, _ := ours.ByIndex(NamespaceIndex, "ns-42")
			n += len(got)
		}
	})
}
