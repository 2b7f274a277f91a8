package benchmarks

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/controllerruntime/typedcache"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// watchedPods is how many realistic Pods BenchmarkWatchCostPods watches.
const watchedPods = 1000

// podWrites are what BenchmarkWatchCostPods's writer does to the realistic Pods of its namespace
// in a round, as a cluster writes them, and how many watch events a round makes:
//   - status: the kubelet's status updates (a strategic merge patch of the status subresource,
//     field manager kubelet: the Ready condition flips and its transition time moves), 5,000;
//   - labels: label changes (a merge patch of metadata.labels by an operator), 5,000;
//   - rollout: a ReplicaSet's Pods replaced, 1,666 Pods each created (by
//     kube-controller-manager), given a status (by the kubelet) and deleted: an add, an update and
//     a delete each, 4,998 events.
var podWrites = []struct {
	name   string
	events int
}{{"status", costUpdates}, {"labels", costUpdates}, {"rollout", costUpdates / 3 * 3}}

// runPodWriter is the writer of BenchmarkWatchCostPods: job.Writes to the Pods of job.Namespace.
func runPodWriter(ctx context.Context, c *kubetest.Clients, job writerJob) error {
	pods := c.Kube.CoreV1().Pods(job.Namespace)
	switch job.Writes {
	case "status":
		return kubetest.Parallel(ctx, job.Updates, writeWorkers, func(ctx context.Context, i int) error {
			p := testobj.RealisticPodCreate(job.Namespace, i%watchedPods, kubetest.ReplicaSets)
			status := corev1.ConditionTrue
			if (job.Round+i/watchedPods)%2 == 1 {
				status = corev1.ConditionFalse
			}
			at := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC).Add(time.Duration(job.Round*job.Updates+i) * time.Second)
			patch := fmt.Appendf(nil, `{"status":{"conditions":[{"type":"Ready","status":%q,"lastTransitionTime":%q}]}}`, status, at.Format(time.RFC3339))
			_, err := pods.Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: "kubelet"}, "status")
			return err
		})
	case "labels":
		return kubetest.Parallel(ctx, job.Updates, writeWorkers, func(ctx context.Context, i int) error {
			p := testobj.RealisticPodCreate(job.Namespace, i%watchedPods, kubetest.ReplicaSets)
			patch := fmt.Appendf(nil, `{"metadata":{"labels":{"example.com/rollout":"r%d-%d"}}}`, job.Round, i/watchedPods)
			_, err := pods.Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "operator"})
			return err
		})
	case "rollout":
		n := job.Updates / 3
		return kubetest.Parallel(ctx, n, writeWorkers, func(ctx context.Context, i int) error {
			// Pods of their own, past the watched ones, named for the round.
			k := watchedPods + job.Round*n + i
			create := testobj.RealisticPodCreate(job.Namespace, k, kubetest.ReplicaSets)
			create.Name = fmt.Sprintf("%s-r%d-%d", create.GenerateName, job.Round, i)
			p, err := pods.Create(ctx, create, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
			if err != nil {
				return err
			}
			p.Status = testobj.RealisticPodStatus(k, kubetest.ReplicaSets)
			if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: "kubelet"}); err != nil {
				return err
			}
			return pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		})
	}
	return fmt.Errorf("no writes %q", job.Writes)
}

// BenchmarkWatchCostPods is BenchmarkWatchCost over realistic Pods (1,000 of them, as a cluster
// writes them) and the writes a cluster makes to Pods (see podWrites): what the client process
// pays per event (cpu-ns/event, allocs/event, B-alloc/event), for client-go's informer
// (impl=upstream), ours (impl=typed; store=compact: with a compact store), the transport floor
// (impl=floor), and a controller-runtime manager with a controller of Pods whose reconciler reads
// its Pod from the cache (program=manager: on controller-runtime's cache, impl=upstream, and on
// typedcache, impl=typed), each also with its events uncompressed, as after the first watch-list
// stream (stream=plain), and with its watches over HTTP/1.1 (transport=http1). Each
// handler counts every event. With -short, a fifth of the status
// updates only.
func BenchmarkWatchCostPods(b *testing.B) {
	ns := realisticPods(b, watchedPods)
	cfg := benchConfig()
	writes, updates := podWrites, costUpdates
	if testing.Short() {
		writes, updates = writes[:1], costUpdates/5 // CI's smoke run: a fifth of one workload
	}
	for _, w := range writes {
		events := w.events * updates / costUpdates
		job := writerJob{Namespace: ns, Updates: updates, Writes: w.name}
		b.Run("writes="+w.name, func(b *testing.B) {
			run := func(b *testing.B, start podWatchStart) { podWatchCost(b, cfg, ns, job, events, start) }
			b.Run("impl=upstream", func(b *testing.B) { run(b, upstreamPodWatch) })
			b.Run("impl=typed", func(b *testing.B) { run(b, typedPodWatch(informer.FactoryOptions{})) })
			b.Run("impl=floor", func(b *testing.B) { run(b, floorPodWatch) })
			b.Run("store=compact", func(b *testing.B) {
				b.Run("impl=upstream", func(b *testing.B) { run(b, upstreamPodWatch) })
				b.Run("impl=typed", func(b *testing.B) {
					run(b, typedPodWatch(informer.FactoryOptions{Informer: informer.InformerOptions{Compact: true}}))
				})
			})
			b.Run("program=manager", func(b *testing.B) {
				b.Run("impl=upstream", func(b *testing.B) { run(b, managerPodWatch(cache.New)) })
				b.Run("impl=typed", func(b *testing.B) { run(b, managerPodWatch(typedcache.New)) })
			})
			// stream=plain: every side's events uncompressed, as they come once the first
			// watch-list stream has ended (its timeout is 5 to 10 minutes): client-go's
			// reflector and ours then watch plainly, and the apiserver compresses only
			// watch-list streams. The rows above measure both libraries on that first
			// stream, which client-go reads on compressed, and ours too for large objects.
			b.Run("stream=plain", func(b *testing.B) {
				plain := rest.CopyConfig(cfg)
				plain.DisableCompression = true
				run := func(b *testing.B, start podWatchStart) { podWatchCost(b, plain, ns, job, events, start) }
				b.Run("impl=upstream", func(b *testing.B) { run(b, upstreamPodWatch) })
				b.Run("impl=typed", func(b *testing.B) { run(b, typedPodWatch(informer.FactoryOptions{})) })
				b.Run("program=manager", func(b *testing.B) {
					b.Run("impl=upstream", func(b *testing.B) { run(b, managerPodWatch(cache.New)) })
					b.Run("impl=typed", func(b *testing.B) { run(b, managerPodWatch(typedcache.New)) })
				})
			})
			// transport=http1: watches over HTTP/1.1 (see http1Config): client-go's informer,
			// controller-runtime's manager and the floor with every request over it, ours with
			// FactoryOptions.WatchHTTP1 or typedcache's Options.WatchHTTP1.
			b.Run("transport=http1", func(b *testing.B) {
				run := func(b *testing.B, start podWatchStart) { podWatchCost(b, http1Config(cfg), ns, job, events, start) }
				b.Run("impl=upstream", func(b *testing.B) { run(b, upstreamPodWatch) })
				b.Run("impl=typed", func(b *testing.B) {
					podWatchCost(b, cfg, ns, job, events, typedPodWatch(informer.FactoryOptions{WatchHTTP1: true}))
				})
				b.Run("impl=floor", func(b *testing.B) { run(b, floorPodWatch) })
				b.Run("program=manager", func(b *testing.B) {
					b.Run("impl=upstream", func(b *testing.B) { run(b, managerPodWatch(cache.New)) })
					b.Run("impl=typed", func(b *testing.B) {
						podWatchCost(b, cfg, ns, job, events, managerPodWatch(typedcache.NewWith(typedcache.Options{WatchHTTP1: true})))
					})
				})
			})
		})
	}
}

// podWatchStart starts a watcher of the Pods of ns that calls onEvent for each event, and
// returns its stop and its handler's HasSynced: true once the handler has been called for every
// object of the initial list, whose adds it counts too, so that a round's events are counted
// from there.
type podWatchStart func(b *testing.B, cfg *rest.Config, ns string, onEvent func()) (synced func() bool, stop func())

// podWatchCost runs the rounds of one implementation of BenchmarkWatchCostPods.
func podWatchCost(b *testing.B, cfg *rest.Config, ns string, job writerJob, events int, start podWatchStart) {
	b.ReportAllocs()
	var seen atomic.Int64
	var round atomic.Pointer[costRound]
	synced, stop := start(b, cfg, ns, func() {
		n := seen.Add(1)
		if r := round.Load(); r != nil && n == r.target {
			close(r.done)
		}
	})
	defer stop()
	waitSynced(b, synced)
	costRounds(b, cfg, job, events, &seen, &round)
}

func upstreamPodWatch(b *testing.B, cfg *rest.Config, ns string, onEvent func()) (func() bool, func()) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { onEvent() },
		UpdateFunc: func(_, _ any) { onEvent() },
		DeleteFunc: func(any) { onEvent() },
	})
	if err != nil {
		b.Fatal(err)
	}
	stopCh := make(chan struct{})
	f.Start(stopCh)
	return reg.HasSynced, func() { close(stopCh); f.Shutdown() }
}

func typedPodWatch(opts informer.FactoryOptions) podWatchStart {
	return func(b *testing.B, cfg *rest.Config, ns string, onEvent func()) (func() bool, func()) {
		opts.Namespace = ns
		f, err := informer.NewFactory(cfg, opts)
		if err != nil {
			b.Fatal(err)
		}
		inf, err := informer.For[*corev1.Pod](f)
		if err != nil {
			b.Fatal(err)
		}
		reg, err := inf.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
			AddFunc:    func(*corev1.Pod, bool) { onEvent() },
			UpdateFunc: func(_, _ *corev1.Pod) { onEvent() },
			DeleteFunc: func(informer.DeletedObject[*corev1.Pod]) { onEvent() },
		})
		if err != nil {
			b.Fatal(err)
		}
		f.Start(context.Background())
		return reg.HasSynced, f.Shutdown
	}
}

// floorPodWatch is the floor of BenchmarkWatchCostPods: the Pods listed, then watched from the
// list's version, every frame but bookmarks counted.
func floorPodWatch(b *testing.B, cfg *rest.Config, ns string, onEvent func()) (func() bool, func()) {
	stop, err := floorWatcher(context.Background(), cfg, "pods", ns, func(typ []byte) bool { return string(typ) != "BOOKMARK" }, onEvent)
	if err != nil {
		b.Fatal(err)
	}
	return func() bool { return true }, stop
}

// managerPodWatch starts a manager on newCache with a controller of the Pods of ns whose
// reconciler Gets its Pod from the cache, and a handler of the cache's Pod informer that counts
// the events.
func managerPodWatch(newCache cache.NewCacheFunc) podWatchStart {
	return func(b *testing.B, cfg *rest.Config, ns string, onEvent func()) (func() bool, func()) {
		mgr := newManager(b, cfg, newCache, cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}})
		reader := mgr.GetCache()
		err := ctrl.NewControllerManagedBy(mgr).
			Named(fmt.Sprintf("watch-%d", controllerSeq.Add(1))).
			For(&corev1.Pod{}).
			Complete(reconcile.Func(func(ctx context.Context, r reconcile.Request) (reconcile.Result, error) {
				var p corev1.Pod
				return reconcile.Result{}, client.IgnoreNotFound(reader.Get(ctx, r.NamespacedName, &p))
			}))
		if err != nil {
			b.Fatal(err)
		}
		inf, err := reader.GetInformer(context.Background(), &corev1.Pod{}, cache.BlockUntilSynced(false))
		if err != nil {
			b.Fatal(err)
		}
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { onEvent() },
			UpdateFunc: func(_, _ any) { onEvent() },
			DeleteFunc: func(any) { onEvent() },
		})
		if err != nil {
			b.Fatal(err)
		}
		stopManager := runManager(context.Background(), mgr)
		return reg.HasSynced, func() {
			if err := stopManager(); err != nil {
				b.Error(err)
			}
		}
	}
}
