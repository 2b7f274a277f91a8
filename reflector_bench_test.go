package informer

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/typedkube/informer/internal/testobj"
)

// errBenchStop ends a benchmark's round after the list.
var errBenchStop = errors.New("benchmark: no watch")

// benchPages splits pods into pages of size, chained by continue tokens,
// as a server answers a paged list.
func benchPages(pods []*corev1.Pod, size int) []*corev1.PodList {
	var pages []*corev1.PodList
	for i := 0; i < len(pods); i += size {
		page := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "20000"}}
		end := min(i+size, len(pods))
		if end < len(pods) {
			page.Continue = strconv.Itoa(len(pages) + 1)
			rest := int64(len(pods) - end)
			page.RemainingItemCount = &rest
		}
		for _, p := range pods[i:end] {
			page.Items = append(page.Items, *p)
		}
		pages = append(pages, page)
	}
	return pages
}

// benchListClient is a typed client over pre-built list pages, whose Watch
// fails: a round of either reflector ends after its list.
type benchListClient struct {
	pages  []*corev1.PodList
	cancel context.CancelFunc // ends our Run when it watches
}

func (c *benchListClient) List(_ context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	i := 0
	if opts.Continue != "" {
		i, _ = strconv.Atoi(opts.Continue)
	}
	if opts.Limit != 500 {
		return nil, errors.New("benchmark: the list is not paged by 500")
	}
	return c.pages[i], nil
}

func (c *benchListClient) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	if c.cancel != nil {
		c.cancel()
	}
	return nil, errBenchStop
}

// IsWatchListSemanticsUnSupported makes both reflectors list.
func (c *benchListClient) IsWatchListSemanticsUnSupported() bool { return true }

// upstreamListClient serves benchListClient to client-go's Reflector.
type upstreamListClient struct{ *benchListClient }

func (c upstreamListClient) List(opts metav1.ListOptions) (runtime.Object, error) {
	return c.benchListClient.List(context.Background(), opts)
}

func (c upstreamListClient) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return c.benchListClient.Watch(context.Background(), opts)
}

// BenchmarkReflectorList lists 10k Pods through the pager, 500 a page,
// into an empty store: client-go's Reflector into cache.NewStore, ours into
// NewStore, from the same pre-built pages. Both copy each item out of its
// page (ExtractListWithAlloc, ListWatchFromClient).
func BenchmarkReflectorList(b *testing.B) {
	pages := benchPages(testobj.BenchPods(10_000, 10), 500)
	ctx := klog.NewContext(context.Background(), logr.Discard())
	b.Run("impl=upstream", func(b *testing.B) {
		lw := upstreamListClient{&benchListClient{pages: pages}}
		b.ReportAllocs()
		for b.Loop() {
			store := cache.NewStore(cache.MetaNamespaceKeyFunc)
			r := cache.NewReflectorWithOptions(lw, &corev1.Pod{}, store, cache.ReflectorOptions{Name: "bench"})
			if err := r.ListAndWatchWithContext(ctx); !errors.Is(err, errBenchStop) {
				b.Fatal(err)
			}
			if n := len(store.ListKeys()); n != 10_000 {
				b.Fatalf("store holds %d pods", n)
			}
		}
	})
	b.Run("impl=typed", func(b *testing.B) {
		client := &benchListClient{pages: pages}
		lw := ListWatchFromClient[corev1.Pod](client, nil)
		b.ReportAllocs()
		for b.Loop() {
			store := NewStore(MetaNamespaceKeyFunc[*corev1.Pod])
			r, err := NewReflector(lw, store, ReflectorOptions{Name: "bench", WatchErrorHandler: func(context.Context, error) {}})
			if err != nil {
				b.Fatal(err)
			}
			runCtx, cancel := context.WithCancel(ctx)
			client.cancel = cancel
			if err := r.Run(runCtx); err != nil {
				b.Fatal(err)
			}
			if n := store.Len(); n != 10_000 {
				b.Fatalf("store holds %d pods", n)
			}
		}
	})
}

// benchWatchLW lists a fixed page, then hands out the watches the
// benchmark gives it, one per Watch call, saying when it is called.
type benchWatchLW struct {
	list    *corev1.PodList
	waiting chan struct{}        // a Watch call is waiting for its watch
	next    chan watch.Interface // the benchmark's next watch
}

func (lw *benchWatchLW) List(context.Context, metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
	page := &ListPage[*corev1.Pod]{ListMeta: lw.list.ListMeta}
	for i := range lw.list.Items {
		page.Items = append(page.Items, &lw.list.Items[i])
	}
	return page, nil
}

func (lw *benchWatchLW) Watch(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	select {
	case lw.waiting <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case w := <-lw.next:
		return w, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (lw *benchWatchLW) IsWatchListSemanticsUnSupported() bool { return true }

func (lw *benchWatchLW) ListWithContext(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return lw.list, nil
}

func (lw *benchWatchLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return lw.Watch(ctx, opts)
}

// upstreamWatchLW serves benchWatchLW to client-go's Reflector.
type upstreamWatchLW struct{ *benchWatchLW }

func (lw upstreamWatchLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.list, nil
}

func (lw upstreamWatchLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.benchWatchLW.Watch(context.Background(), opts)
}

// closedWatch is a watch whose events are all buffered and whose channel
// is closed after them, as when a server sends events and ends the watch.
type closedWatch chan watch.Event

func (w closedWatch) ResultChan() <-chan watch.Event { return w }
func (w closedWatch) Stop()                          {}

const benchWatchEvents = 100_000

// BenchmarkReflectorWatch measures the watch event path: 100k MODIFIED
// events for 1,000 listed Pods, from the watch's channel to the store, for
// client-go's Reflector into cache.NewStore and ours into NewStore. Each
// round hands the running reflector a watch whose events are all buffered
// (filled with the timer stopped) and which then closes, and ends when the
// reflector asks for the next watch.
func BenchmarkReflectorWatch(b *testing.B) {
	pods := testobj.BenchPods(1000, 10)
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "999"}}
	for _, p := range pods {
		list.Items = append(list.Items, *p)
	}
	events := make([]watch.Event, benchWatchEvents)
	for i := range events {
		events[i] = watch.Event{Type: watch.Modified, Object: pods[i%len(pods)]}
	}
	run := func(b *testing.B, start func(ctx context.Context, lw *benchWatchLW) (wait func())) {
		lw := &benchWatchLW{list: list, waiting: make(chan struct{}), next: make(chan watch.Interface)}
		ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
		wait := start(ctx, lw)
		defer wait()
		defer cancel()
		<-lw.waiting // listed, and watching
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			w := make(closedWatch, len(events))
			for _, ev := range events {
				w <- ev
			}
			close(w)
			b.StartTimer()
			lw.next <- w
			<-lw.waiting
		}
		b.ReportMetric(float64(benchWatchEvents)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	}
	b.Run("impl=upstream", func(b *testing.B) {
		run(b, func(ctx context.Context, lw *benchWatchLW) func() {
			store := cache.NewStore(cache.MetaNamespaceKeyFunc)
			r := cache.NewReflectorWithOptions(upstreamWatchLW{lw}, &corev1.Pod{}, store, cache.ReflectorOptions{Name: "bench"})
			done := make(chan struct{})
			go func() { defer close(done); r.RunWithContext(ctx) }()
			return func() { <-done }
		})
	})
	b.Run("impl=typed", func(b *testing.B) {
		run(b, func(ctx context.Context, lw *benchWatchLW) func() {
			store := NewStore(MetaNamespaceKeyFunc[*corev1.Pod])
			r, err := NewReflector[*corev1.Pod](lw, store, ReflectorOptions{Name: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			done := make(chan struct{})
			go func() { defer close(done); _ = r.Run(ctx) }()
			return func() { <-done }
		})
	})
}
