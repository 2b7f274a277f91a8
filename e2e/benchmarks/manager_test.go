package benchmarks

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/controllerruntime/typedcache"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The controller-runtime benchmarks: a manager on controller-runtime's own cache (impl=upstream,
// cache.New, its default) beside the same manager on ours (impl=typed, typedcache.New), and the
// two caches' reads.

// newCacheFuncs are the two caches, by sub-benchmark name.
var newCacheFuncs = []struct {
	name string
	new  cache.NewCacheFunc
}{{"impl=upstream", cache.New}, {"impl=typed", typedcache.New}}

// controllerSeq names the benchmarks' controllers apart (a manager refuses two of one name in a
// process unless told not to check; each round makes one).
var controllerSeq atomic.Int64

// BenchmarkManagerColdStart starts a manager with one controller of Pods (For(&corev1.Pod{}),
// a reconciler that does nothing), caching the namespace of 10,000 Pods of about 1.5 KB, and
// waits until the controller has reconciled every Pod once: what a controller's start costs the
// client process, per Pod, as BenchmarkColdStart reports it (cpu-ns/object, allocs/object,
// B-alloc/object, B/object held, peak/steady). Both managers are made alike (the same
// rest.Config, scheme and options) but for NewCache. store=compact is the same beside our cache
// with a compact store (typedcache.Options.Informer.Compact), controller-runtime's with full
// objects.
func BenchmarkManagerColdStart(b *testing.B) {
	cfg := benchConfig()
	ns := pods(b, coldStartPods)
	for _, impl := range newCacheFuncs {
		b.Run(impl.name, func(b *testing.B) { managerColdStart(b, cfg, ns, impl.new) })
	}
	b.Run("store=compact", func(b *testing.B) {
		b.Run("impl=upstream", func(b *testing.B) { managerColdStart(b, cfg, ns, cache.New) })
		b.Run("impl=typed", func(b *testing.B) {
			managerColdStart(b, cfg, ns, typedcache.NewWith(typedcache.Options{Informer: informer.InformerOptions{Compact: true}}))
		})
	})
}

// managerColdStart runs BenchmarkManagerColdStart's rounds with a manager on newCache.
func managerColdStart(b *testing.B, cfg *rest.Config, ns string, newCache cache.NewCacheFunc) {
	coldStart(b, coldStartPods, startManager(b, cfg, ns, coldStartPods, newCache, nil))
}

// startManager starts a manager on newCache, caching ns (with transform as the cache's default
// transform, if set), with a controller of Pods whose reconciler does nothing; synced reports
// that it has reconciled want Pods.
func startManager(b fataler, cfg *rest.Config, ns string, want int, newCache cache.NewCacheFunc, transform toolscache.TransformFunc) startFunc {
	return func(ctx context.Context) (synced func() bool, size func() int, stats func() informer.Stats, stop func()) {
		var pods reconcileCounter
		mgr := newManager(b, cfg, newCache, cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}, DefaultTransform: transform})
		err := ctrl.NewControllerManagedBy(mgr).
			Named(fmt.Sprintf("bench-%d", controllerSeq.Add(1))).
			For(&corev1.Pod{}).
			Complete(reconcile.Func(func(_ context.Context, r reconcile.Request) (reconcile.Result, error) {
				pods.saw(r)
				return reconcile.Result{}, nil
			}))
		if err != nil {
			b.Fatal(err)
		}
		stopManager := runManager(ctx, mgr)
		return func() bool { return pods.n.Load() >= int64(want) }, func() int { return int(pods.n.Load()) }, nil, func() {
			if err := stopManager(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// newManager returns a manager over cfg on newCache with cacheOpts, as every benchmark makes
// one: no metrics server, and controller names not checked (a process makes one a round).
func newManager(b fataler, cfg *rest.Config, newCache cache.NewCacheFunc, cacheOpts cache.Options) ctrl.Manager {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		NewCache:   newCache,
		Cache:      cacheOpts,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		b.Fatal(err)
	}
	return mgr
}

// runManager starts mgr until ctx ends or stop is called; stop waits for Start to return and
// returns its error.
func runManager(ctx context.Context, mgr ctrl.Manager) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() error {
		cancel()
		return <-done
	}
}

// reconcileCounter counts the distinct objects a controller has reconciled.
type reconcileCounter struct {
	seen sync.Map
	n    atomic.Int64
}

func (c *reconcileCounter) saw(r reconcile.Request) {
	if _, dup := c.seen.LoadOrStore(r.NamespacedName, true); !dup {
		c.n.Add(1)
	}
}

// selectorPods is how many Pods BenchmarkCacheList selects among: 100,000, or 10,000 with
// -short; its selector matches 100 of them.
func selectorPods() int {
	if testing.Short() {
		return 10000
	}
	return 100000
}

// groupedPods creates n benchmark Pods, each labelled group=<i / 100> besides its usual labels,
// so that a group is 100 Pods, once per benchmark binary and n.
func groupedPods(b *testing.B, n int) string {
	b.Helper()
	return populatedOnce(b, groupedNS, n, func() (string, error) {
		return populate(b, fmt.Sprintf("bench-grouped-%dk", n/1000), n, func(ctx context.Context, c *kubetest.Clients, ns string, i int) error {
			p := benchPod(i)
			p.Labels["group"] = fmt.Sprint(i / 100)
			_, err := c.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			return err
		})
	})
}

var groupedNS = map[int]string{} // guarded by podsMu

// startedCache makes a cache of ns with newCache, starts it, and waits until its Pod informer
// has synced; stop stops it.
func startedCache(b *testing.B, newCache cache.NewCacheFunc, ns string) (c cache.Cache, stop func()) {
	b.Helper()
	c, err := newCache(benchConfig(), cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Minute)
	defer wcancel()
	if _, err := c.GetInformer(wctx, &corev1.Pod{}); err != nil {
		b.Fatal(err)
	}
	// GetInformer waits for the sync only once the cache has started, which the goroutine above
	// may not have done yet (either cache's rule, as controller-runtime's): without this wait a
	// benchmark's first read could wait for the initial list.
	if !c.WaitForCacheSync(wctx) {
		b.Fatal("the cache did not sync within 5 minutes")
	}
	return c, func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}
}

// BenchmarkCacheList lists, from a cache of 100,000 Pods (10,000 with -short) in one
// namespace, the 100 of one group (client.MatchingLabels{"group": ...}, client.InNamespace),
// with controller-runtime's default deep copy: ns/op, B/op and allocs/op of the List call.
// controller-runtime's cache tests every Pod of the namespace against the selector; ours reads
// the label index.
func BenchmarkCacheList(b *testing.B) {
	n := selectorPods()
	ns := groupedPods(b, n)
	for _, impl := range newCacheFuncs {
		b.Run(impl.name, func(b *testing.B) {
			c, stop := startedCache(b, impl.new, ns)
			defer stop()
			ctx := context.Background()
			var list corev1.PodList
			b.ReportAllocs()
			for b.Loop() {
				if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"group": "7"}); err != nil {
					b.Fatal(err)
				}
			}
			if len(list.Items) != 100 {
				b.Fatalf("listed %d Pods, want 100", len(list.Items))
			}
		})
	}
}

// BenchmarkCacheGet gets one Pod from a cache of the 10,000 Pods of BenchmarkColdStart, with
// controller-runtime's default deep copy: ns/op, B/op and allocs/op of the Get call.
// store=compact gets each of the 10,000 in turn, as a controller's start reconciles them, from our
// cache with a compact store (typedcache.Options.Informer.Compact: an object the store does not
// hold decoded is decoded for the reader, who owns it: no deep copy) beside controller-runtime's
// with full objects, which deep-copies each.
func BenchmarkCacheGet(b *testing.B) {
	ns := pods(b, coldStartPods)
	key := client.ObjectKey{Namespace: ns, Name: benchPod(4242).Name}
	for _, impl := range newCacheFuncs {
		b.Run(impl.name, func(b *testing.B) {
			c, stop := startedCache(b, impl.new, ns)
			defer stop()
			ctx := context.Background()
			var pod corev1.Pod
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Get(ctx, key, &pod); err != nil {
					b.Fatal(err)
				}
			}
			if pod.Name != key.Name {
				b.Fatalf("got %s", pod.Name)
			}
		})
	}
	keys := make([]client.ObjectKey, coldStartPods)
	for i := range keys {
		keys[i] = client.ObjectKey{Namespace: ns, Name: benchPod(i).Name}
	}
	compact := typedcache.NewWith(typedcache.Options{Informer: informer.InformerOptions{Compact: true}})
	b.Run("store=compact", func(b *testing.B) {
		for _, impl := range []struct {
			name string
			new  cache.NewCacheFunc
		}{{"impl=upstream", cache.New}, {"impl=typed", compact}} {
			b.Run(impl.name, func(b *testing.B) {
				c, stop := startedCache(b, impl.new, ns)
				defer stop()
				ctx := context.Background()
				i := 0
				b.ReportAllocs()
				for b.Loop() {
					var pod corev1.Pod // each read the reconciler's own, as in a reconciler
					if err := c.Get(ctx, keys[i%len(keys)], &pod); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	})
}
