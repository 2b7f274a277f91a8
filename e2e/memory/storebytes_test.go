package memory

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"github.com/typedkube/informer/e2e/internal/widget"
	"github.com/typedkube/informer/internal/testobj"
	"github.com/typedkube/informer/wire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// objectsPerKind is how many objects of each kind the test caches: enough that what an informer
// holds per object dwarfs the noise of the heap's measurement, few enough to create in seconds.
const objectsPerKind = 2000

// bound is how far StoreBytes may be from the heap the cache holds: 15%, as the Stats
// documentation says, under the race detector too (0.95-1.00 under it, 0.95-1.02 without, on
// 2026-12-08; see hold for what the running informer holds besides).
const bound = 0.15

// widgetSlim is the Widget projection the test caches.
type widgetSlim struct {
	wire.Meta[widgetSlim]
	Spec struct{ Color string }
}

// TestStoreBytesMatchesHeap starts informers of 2,000 Pods of about 1.5 KB, 2,000 realistic Pods
// of about 11 KB (managedFields written by the server) and 2,000 Widgets (a CRD, served in JSON),
// each in every mode: full objects, without managedFields, a projection and a compact store. For
// each it measures the heap the informer's cache holds once synced, per object, and checks that
// Stats.StoreBytes is within 15% of it.
//
// The heap is measured as the informer of a factory of its own holds it (see hold): live heap
// after two full collections, synced and then stopped with the informer still reachable, less
// the live heap once it is unreachable, less the same for an informer of the same mode over an
// empty namespace (what a factory, its client and decoder cost whatever it caches), over the
// objects' count; StoreBytes likewise, less the empty informer's. A first informer, not
// measured, warms what the process keeps once (client-go's transport cache, the HTTP/2
// connection). Nothing else runs in this process meanwhile: the package has this test alone.
func TestStoreBytesMatchesHeap(t *testing.T) {
	cfg := srv.AdminConfig()
	cfg.QPS = -1
	c, err := kubetest.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	empty := namespace(t, ctx, c)
	if err := widget.Install(ctx, c.Dynamic, empty, time.Minute); err != nil {
		t.Fatal(err)
	}
	pods, realistic, widgets := namespace(t, ctx, c), namespace(t, ctx, c), namespace(t, ctx, c)
	create(t, ctx, objectsPerKind, func(ctx context.Context, i int) error {
		p := testobj.BenchPod(i, 1)
		p.Namespace, p.UID, p.ResourceVersion, p.OwnerReferences = pods, "", "", nil
		_, err := c.Kube.CoreV1().Pods(pods).Create(ctx, p, metav1.CreateOptions{})
		return err
	})
	create(t, ctx, objectsPerKind, func(ctx context.Context, i int) error {
		return kubetest.CreateRealisticPod(ctx, c.Kube, realistic, i)
	})
	if err := widget.Install(ctx, c.Dynamic, widgets, time.Minute); err != nil {
		t.Fatal(err)
	}
	wc, err := widget.NewClient(cfg, widgets)
	if err != nil {
		t.Fatal(err)
	}
	create(t, ctx, objectsPerKind, func(ctx context.Context, i int) error {
		_, err := wc.Create(ctx, widget.Sample(i), metav1.CreateOptions{})
		return err
	})

	noAnnotations := wire.Options{Annotations: func(string) bool { return false }}
	type mode struct {
		name  string
		start func(ctx context.Context, ns string) (stats func() informer.Stats, stop func())
	}
	podModes := []mode{
		{"default", typed[*corev1.Pod](cfg, informer.FactoryOptions{})},
		{"dropmanagedfields", typed[*corev1.Pod](cfg, informer.FactoryOptions{Wire: wire.Options{DropManagedFields: true}})},
		{"projection", projected[kubetest.PodSlim, corev1.Pod](cfg, informer.FactoryOptions{Wire: noAnnotations})},
		{"compact", typed[*corev1.Pod](cfg, informer.FactoryOptions{Informer: informer.InformerOptions{Compact: true}})},
	}
	ws := widget.NewScheme()
	widgetModes := []mode{
		{"default", typed[*widget.Widget](cfg, informer.FactoryOptions{Scheme: ws})},
		{"dropmanagedfields", typed[*widget.Widget](cfg, informer.FactoryOptions{Scheme: ws, Wire: wire.Options{DropManagedFields: true}})},
		{"projection", projected[widgetSlim, widget.Widget](cfg, informer.FactoryOptions{Scheme: ws, Wire: noAnnotations})},
		{"compact", typed[*widget.Widget](cfg, informer.FactoryOptions{Scheme: ws, Informer: informer.InformerOptions{Compact: true}})},
	}
	for _, kind := range []struct {
		name  string
		ns    string
		modes []mode
	}{
		{"pods", pods, podModes},
		{"realistic", realistic, podModes},
		{"widgets", widgets, widgetModes},
	} {
		for _, m := range kind.modes {
			t.Run(kind.name+"/"+m.name, func(t *testing.T) {
				hold(t, ctx, m.start, empty, 0) // warm up, not measured
				h0 := measure(t, ctx, m.start, empty, 0)
				hN := measure(t, ctx, m.start, kind.ns, objectsPerKind)
				perObject := func(v0, vN int64) float64 { return float64(vN-v0) / objectsPerKind }
				running, cache, told := perObject(h0.running, hN.running), perObject(h0.cache, hN.cache), perObject(h0.store, hN.store)
				ratio := told / cache
				t.Logf("B/object %.0f held by the cache, %.0f by the running informer; store-B/object %.0f (%.3f of the cache's); empty informer: cache %d B, running %d B, StoreBytes %d B",
					cache, running, told, ratio, h0.cache, h0.running, h0.store)
				if ratio < 1-bound || ratio > 1+bound {
					t.Errorf("StoreBytes tells %.0f B/object, %.1f%% of the %.0f B/object the cache holds: want within %.0f%%", told, 100*ratio, cache, 100*bound)
				}
			})
		}
	}
}

// holds is how many times measure starts an informer.
const holds = 3

// measure returns the medians of what hold measures of an informer started with start over ns,
// over several informers, so that one measurement an event of the process skews (a connection's
// buffers, a collection's timing) does not decide the test.
func measure(t *testing.T, ctx context.Context, start func(ctx context.Context, ns string) (func() informer.Stats, func()), ns string, objects int) held {
	t.Helper()
	var running, cache, store []int64
	for range holds {
		h := hold(t, ctx, start, ns, objects)
		running, cache, store = append(running, h.running), append(cache, h.cache), append(store, h.store)
	}
	median := func(v []int64) int64 {
		slices.Sort(v)
		return v[len(v)/2]
	}
	return held{running: median(running), cache: median(cache), store: median(store)}
}

// held is what hold measures of one informer: the live heap it holds while it runs (running),
// the live heap its cache holds (cache: once it has stopped, its streams and goroutines ended
// and the informer still reachable), and its Stats.StoreBytes, taken while it runs.
type held struct{ running, cache, store int64 }

// hold starts an informer with start over ns, waits until it has synced with the namespace's
// objects (want of them), and measures it (see held). Each heap is a live heap less the live
// heap once the informer has stopped and is unreachable: both are taken with the process in the
// same state but for the informer, whereas a heap taken before the start would also count what
// the process changed meanwhile (an HTTP/2 connection opened or closed, the buffers of an
// earlier request).
//
// What the informer holds while it runs and its cache does not are its streams' buffers and its
// goroutines': the inflater of a compressed watch-list stream (about 145 KB, kept while the
// stream lasts, for objects of 4 KiB or more on the wire), the HTTP/2 framer's and the frame
// reader's buffers, and, for an informer with handlers (these have none), the processing
// goroutine's notifications, kept between batches up to 2,048. None grows with the objects
// cached once past those sizes, and none is the cache's: over 2,000 realistic Pods in a
// projection they were about 140 B a Pod, 13% of what the informer held, until its informer
// stopped making notifications for no handler, and 86 B since (2026-12-08).
func hold(t *testing.T, ctx context.Context, start func(ctx context.Context, ns string) (func() informer.Stats, func()), ns string, want int) held {
	t.Helper()
	var h held
	stats, stop := start(ctx, ns)
	deadline := time.Now().Add(2 * time.Minute)
	for st := stats(); !st.Synced || st.Objects != want; st = stats() {
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("the informer over %s has not synced with its %d objects within 2 minutes: synced %v, %d objects", ns, want, st.Synced, st.Objects)
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.running = liveHeap()
	h.store = stats().StoreBytes
	stop()
	h.cache = liveHeap()
	if st := stats(); st.Objects != want { // stats reaches the informer: it is live until here
		t.Fatalf("the informer over %s holds %d objects once stopped, want %d", ns, st.Objects, want)
	}
	stats, stop = nil, nil // the informer and its factory are unreachable now
	gone := liveHeap()
	h.running -= gone
	h.cache -= gone
	return h
}

// liveHeap returns the bytes of live heap after two full collections (the second frees what
// the first's finalizers released).
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// typed returns a start of For[T] in a factory of its own made with opts.
func typed[T informer.Object](cfg *rest.Config, opts informer.FactoryOptions) func(ctx context.Context, ns string) (func() informer.Stats, func()) {
	return func(ctx context.Context, ns string) (func() informer.Stats, func()) {
		opts.Namespace = ns
		f, err := informer.NewFactory(cfg, opts)
		if err != nil {
			panic(err)
		}
		inf, err := informer.For[T](f)
		if err != nil {
			panic(err)
		}
		f.Start(ctx)
		return inf.Stats, f.Shutdown
	}
}

// projected returns a start of ForProjection[P, T] in a factory of its own made with opts.
func projected[P, T any, PP interface {
	*P
	informer.Object
}, TP interface {
	*T
	informer.Object
}](cfg *rest.Config, opts informer.FactoryOptions) func(ctx context.Context, ns string) (func() informer.Stats, func()) {
	return func(ctx context.Context, ns string) (func() informer.Stats, func()) {
		opts.Namespace = ns
		f, err := informer.NewFactory(cfg, opts)
		if err != nil {
			panic(err)
		}
		inf, err := informer.ForProjection[P, T, PP, TP](f)
		if err != nil {
			panic(err)
		}
		f.Start(ctx)
		return inf.Stats, f.Shutdown
	}
}

// namespace creates a namespace for the test.
func namespace(t *testing.T, ctx context.Context, c *kubetest.Clients) string {
	t.Helper()
	ns, err := kubetest.NewNamespace(ctx, c.Kube, "memory")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// create runs do for 0 to n-1, 16 at a time.
func create(t *testing.T, ctx context.Context, n int, do func(ctx context.Context, i int) error) {
	t.Helper()
	if err := kubetest.Parallel(ctx, n, 16, do); err != nil {
		t.Fatal(err)
	}
}
