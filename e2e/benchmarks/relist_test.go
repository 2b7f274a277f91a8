package benchmarks

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

const relistObjects = 10000

var (
	templatesOnce sync.Once
	templatesNS   string
	templatesErr  error
)

// podTemplates creates relistObjects PodTemplates of about 1.5 KB (benchPod's spec) in a
// namespace of their own, once per binary. PodTemplates bypass the API server's watch cache in
// the harness, so a compaction of etcd makes an informer that watches again get 410 Gone.
func podTemplates(b *testing.B) string {
	b.Helper()
	templatesOnce.Do(func() {
		templatesNS, templatesErr = populate(b, "bench-relist", relistObjects, func(ctx context.Context, c *kubetest.Clients, ns string, i int) error {
			_, err := c.Kube.CoreV1().PodTemplates(ns).Create(ctx, benchTemplate(i), metav1.CreateOptions{})
			return err
		})
	})
	if templatesErr != nil {
		b.Fatal(templatesErr)
	}
	return templatesNS
}

func benchTemplate(i int) *corev1.PodTemplate {
	p := benchPod(i)
	return &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("tpl-%05d", i), Labels: p.Labels, Annotations: p.Annotations},
		Template:   corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: p.Labels}, Spec: p.Spec},
	}
}

// relistInformer is an informer of PodTemplates that counts the updates its handler receives.
type relistInformer struct {
	updates atomic.Int64
	round   atomic.Pointer[costRound] // the relist being waited for, if any
	synced  func() bool
	stop    func()
}

// onUpdate counts an update and closes the round's channel at its target, so that the benchmark
// waits for the relist without polling in the measured window.
func (r *relistInformer) onUpdate() {
	n := r.updates.Add(1)
	if c := r.round.Load(); c != nil && n == c.target {
		close(c.done)
	}
}

// directConns dials the API server directly, not through the harness's TCP proxy, whose copying
// goroutines run in this process, so that getrusage would count their CPU as the informer's, and
// closes the connections it made on drop, as DropConnections closes those through the proxy.
type directConns struct {
	mu    sync.Mutex
	conns []net.Conn
}

// config returns a copy of cfg that connects to the API server directly through d.
func (d *directConns) config(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Host = srv.APIServerURL()
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			d.mu.Lock()
			d.conns = append(d.conns, c)
			d.mu.Unlock()
		}
		return c, err
	}
	return cfg
}

// drop closes every connection dialed so far: the informer's watch fails and it watches again.
func (d *directConns) drop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.Close()
	}
	d.conns = nil
}

// BenchmarkRelist measures what the client process pays for a relist of 10,000 PodTemplates
// after 410 Gone: etcd is compacted and the informer's connections closed (it dials the API
// server directly, not through the harness's in-process proxy, whose CPU would count as the
// client's), so the informer's watch from its old resource version is refused and it lists
// again. changed=10% first updates 1,000 of them while the informer cannot see them (its
// identity is throttled with 429 and its connections closed), so that the relist finds them
// changed. The wait for the relist's updates is on a channel the handler closes, not a poll. It reports, per object, from the moment the informer may list again until its
// handler has received the relist's 10,000 updates: cpu-ns/object, allocs/object,
// B-alloc/object, and peak/steady (the highest live heap during the relist over the heap held
// after the first sync, sampled every 2 ms in a relist of its own before the measured one in each
// round: the sampler's wakeups would count as the informer's CPU), plus
// first-B-alloc/object, what the initial sync allocated. impl=upstream
// is client-go's PodTemplate informer, impl=typed informer.For[*corev1.PodTemplate] with the
// factory's defaults; both use the same config.
func BenchmarkRelist(b *testing.B) {
	ns := podTemplates(b)
	throttled := srv.ThrottledConfig()
	throttled.QPS = -1
	admin, err := kubernetes.NewForConfig(benchConfig())
	if err != nil {
		b.Fatal(err)
	}
	for _, changed := range []int{0, 10} {
		b.Run(fmt.Sprintf("changed=%d%%", changed), func(b *testing.B) {
			b.Run("impl=upstream", func(b *testing.B) {
				var conns directConns
				cfg := conns.config(throttled)
				relist(b, admin, ns, changed, conns.drop, func() *relistInformer { return upstreamTemplates(b, cfg, ns) })
			})
			b.Run("impl=typed", func(b *testing.B) {
				var conns directConns
				cfg := conns.config(throttled)
				relist(b, admin, ns, changed, conns.drop, func() *relistInformer { return typedTemplates(b, cfg, ns) })
			})
		})
	}
}

func upstreamTemplates(b *testing.B, cfg *rest.Config, ns string) *relistInformer {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	r := &relistInformer{}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().PodTemplates().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ any) { r.onUpdate() }}); err != nil {
		b.Fatal(err)
	}
	stopCh := make(chan struct{})
	f.Start(stopCh)
	r.synced = inf.HasSynced
	r.stop = func() { close(stopCh); f.Shutdown() }
	return r
}

func typedTemplates(b *testing.B, cfg *rest.Config, ns string) *relistInformer {
	f, err := informer.NewFactory(cfg, informer.FactoryOptions{Namespace: ns})
	if err != nil {
		b.Fatal(err)
	}
	inf, err := informer.For[*corev1.PodTemplate](f)
	if err != nil {
		b.Fatal(err)
	}
	r := &relistInformer{}
	if _, err := inf.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.PodTemplate]{UpdateFunc: func(_, _ *corev1.PodTemplate) { r.onUpdate() }}); err != nil {
		b.Fatal(err)
	}
	f.Start(context.Background())
	r.synced = inf.HasSynced
	r.stop = f.Shutdown
	return r
}

func relist(b *testing.B, admin kubernetes.Interface, ns string, changed int, drop func(), start func() *relistInformer) {
	b.ReportAllocs()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	before := heapInUse()
	first := costNow()
	inf := start()
	defer inf.stop()
	for !inf.synced() {
		if ctx.Err() != nil {
			b.Fatal("the informer did not sync")
		}
		time.Sleep(time.Millisecond)
	}
	firstCost := costNow().since(first)
	steady := heapInUse() - before
	var peakRatio float64
	var paid perUnit
	round := 0
	// relistOnce forces one relist and returns what the process paid for it; with sample, it also
	// samples the live heap every 2 ms and returns its peak. The timer runs in the measured relist.
	relistOnce := func(sample bool) (spent processCost, peak uint64) {
		round++
		if changed > 0 {
			if err := srv.Throttle(ctx); err != nil {
				b.Fatal(err)
			}
			drop()
			k := relistObjects * changed / 100
			err := kubetest.Parallel(ctx, k, writeWorkers, func(ctx context.Context, i int) error {
				t := benchTemplate(i * relistObjects / k)
				t.Labels = map[string]string{"round": fmt.Sprint(round)}
				_, err := admin.CoreV1().PodTemplates(ns).Update(ctx, t, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		// A watch from rv starts at revision rv+1, which must be older than the compaction:
		// two writes elsewhere first.
		for range 2 {
			if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "anchor-"}}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := srv.CompactEtcd(ctx); err != nil {
			b.Fatal(err)
		}
		mark := inf.updates.Load()
		r := &costRound{target: mark + relistObjects, done: make(chan struct{})}
		inf.round.Store(r)
		var sampler *heapSampler
		if sample {
			sampler = startHeapSampler()
		}
		stopProfile := func() {}
		if !sample {
			stopProfile = profileWindow(b, b.Name())
		}
		cost := costNow()
		drop()
		if changed > 0 {
			if err := srv.Unthrottle(ctx); err != nil {
				b.Fatal(err)
			}
		}
		if !sample {
			b.StartTimer()
		}
		select {
		case <-r.done:
		case <-ctx.Done():
			b.Fatalf("the informer did not relist: %d updates", inf.updates.Load()-mark)
		}
		if !sample {
			b.StopTimer()
		}
		spent = costNow().since(cost)
		stopProfile()
		if sample {
			peak = sampler.Peak()
		}
		return spent, peak
	}
	for b.Loop() {
		b.StopTimer()
		// The peak, from a relist with the heap sampler; then the cost, from a second relist
		// without it, whose wakeups every 2 ms would cost both implementations as much CPU as a
		// third of our relist. The first also readies the memory a relist needs beyond the
		// sync's, as in coldStart: client-go's relist peaks at about three times its steady heap.
		_, peak := relistOnce(true)
		spent, _ := relistOnce(false)
		paid.add(spent, relistObjects)
		peakRatio += float64(int64(peak)-before) / float64(steady)
		b.StartTimer()
	}
	paid.report(b, "object")
	b.ReportMetric(peakRatio/float64(paid.rounds), "peak/steady")
	b.ReportMetric(float64(firstCost.bytes)/relistObjects, "first-B-alloc/object")
}
