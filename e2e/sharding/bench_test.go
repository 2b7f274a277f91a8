package sharding

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"github.com/typedkube/informer/shard"
)

// BenchmarkShardedReplicas measures what one replica of a group of 1, 2 or 4 pays for its share of
// the Pods of a namespace (10k, 2k with -short), beside one unsharded informer of them all in the
// same round, against the server with ShardedListAndWatch on. The other replicas of the group
// are Members without informers, which hold their buckets but cache nothing, so the process's
// heap and CPU are the measured replica's. It reports the replica's live heap after it settled
// (heap-B), its CPU from start to settled (cpu-ns: Lease membership and handover included), the
// same for the unsharded informer, and their ratios with the goal of 1/N + 10%. Both factories
// map Pods without discovery. Then a member joins the group and leaves it, and it reports the
// calls a handler of the replica got per move (calls/move), of them the updates that changed
// nothing (echoes/move: no Pod changes meanwhile), and the calls the moves need (moved/move: a
// release for each Pod given up, an initial add for each Pod taken).
func BenchmarkShardedReplicas(b *testing.B) {
	n := objectCount()
	admin, err := kubetest.NewClients(gateOn.AdminConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	ns, uids := benchPods(b, admin, n)
	for _, replicas := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			var unshardedHeap, unshardedCPU, shardedHeap, shardedCPU float64
			var moves moveCalls
			rounds := 0
			for b.Loop() {
				h, c := measure(b, func(ctx context.Context) func() bool {
					f, err := informer.NewFactory(admin.Config, informer.FactoryOptions{Namespace: ns, RESTMapper: podMapper()})
					if err != nil {
						b.Fatal(err)
					}
					inf, err := informer.For[*corev1.Pod](f)
					if err != nil {
						b.Fatal(err)
					}
					f.Start(ctx)
					context.AfterFunc(ctx, f.Shutdown)
					return func() bool { return inf.HasSynced() && inf.GetIndexer().Len() == n }
				}, nil)
				unshardedHeap += h
				unshardedCPU += c
				var g *group
				h, c = measure(b, func(ctx context.Context) func() bool {
					g = startGroup(b, ctx, admin, ns, uids, replicas)
					return g.settled
				}, func(context.Context) { moves.add(g.moveTwice(b)) })
				shardedHeap += h
				shardedCPU += c
				rounds++
			}
			r := float64(rounds)
			b.ReportMetric(shardedHeap/r, "heap-B")
			b.ReportMetric(shardedCPU/r, "cpu-ns")
			b.ReportMetric(unshardedHeap/r, "unsharded-heap-B")
			b.ReportMetric(unshardedCPU/r, "unsharded-cpu-ns")
			b.ReportMetric(shardedHeap/unshardedHeap, "heap-share")
			b.ReportMetric(shardedCPU/unshardedCPU, "cpu-share")
			b.ReportMetric(1/float64(replicas)+0.1, "goal-share")
			b.ReportMetric(float64(moves.calls)/float64(moves.moves), "calls/move")
			b.ReportMetric(float64(moves.echoes)/float64(moves.moves), "echoes/move")
			b.ReportMetric(float64(moves.moved)/float64(moves.moves), "moved/move")
		})
	}
}

// group is a measured replica and the Members of the rest of its group.
type group struct {
	b         *testing.B
	uids      []string
	names     []string // the group's members; names[0] is the measured replica
	newMember func(name string) (*shard.Member, context.CancelFunc)
	inf       *shard.Informer[*corev1.Pod]
	logged    bool
}

// startGroup starts replicas-1 Members without informers, then the measured replica, and returns
// the group.
func startGroup(b *testing.B, ctx context.Context, admin *kubetest.Clients, ns string, uids []string, replicas int) *group {
	g := &group{b: b, uids: uids}
	groupName := fmt.Sprintf("bench-%d-%d", replicas, time.Now().UnixNano())
	for i := range replicas {
		g.names = append(g.names, fmt.Sprintf("r%d", i))
	}
	g.newMember = func(name string) (*shard.Member, context.CancelFunc) {
		m, err := shard.NewMember(shard.Options{Leases: admin.Kube.CoordinationV1(), Namespace: ns, Group: groupName, Identity: name,
			LeaseDuration: leaseDuration, RenewInterval: renewInterval, Buckets: buckets})
		if err != nil {
			b.Fatal(err)
		}
		mctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { _ = m.Run(mctx) })
		context.AfterFunc(ctx, wg.Wait)
		return m, func() { cancel(); wg.Wait() }
	}
	for _, name := range g.names[1:] {
		m, _ := g.newMember(name)
		<-m.Ready()
	}
	m, _ := g.newMember(g.names[0])
	f, err := informer.NewFactory(admin.Config, informer.FactoryOptions{Namespace: ns, RESTMapper: podMapper()})
	if err != nil {
		b.Fatal(err)
	}
	if g.inf, err = shard.For[*corev1.Pod](f, m); err != nil {
		b.Fatal(err)
	}
	f.Start(ctx)
	context.AfterFunc(ctx, f.Shutdown)
	return g
}

// share is the number of Pods in the buckets Assign gives the measured replica among members.
func (g *group) share(members []string) (shard.Buckets, int) {
	want := shard.Assign(members, buckets)[g.names[0]]
	n := 0
	for _, uid := range g.uids {
		if want.HasHash(shard.Hash(uid)) {
			n++
		}
	}
	return want, n
}

// settled reports whether the measured replica has settled: its share owned, synced, and its
// cache that share of the Pods.
func (g *group) settled() bool {
	want, n := g.share(g.names)
	st := g.inf.Status()
	done := st.Owned.Equal(want) && g.inf.HasSynced() && st.Objects == n
	if done && !g.logged {
		g.logged = true
		g.b.Logf("replicas=%d: %d of %d Pods, mode %v, received %d, dropped %d", len(g.names), st.Objects, len(g.uids), st.Mode, st.Received, st.Dropped)
	}
	return done
}

// moveCalls counts the handler calls of moves.
type moveCalls struct {
	moves, calls, echoes, moved int
}

func (m *moveCalls) add(o moveCalls) {
	m.moves, m.calls, m.echoes, m.moved = m.moves+o.moves, m.calls+o.calls, m.echoes+o.echoes, m.moved+o.moved
}

// moveTwice registers a handler on the measured replica, then has a member join the group (the
// replica gives buckets up) and leave it (it takes them back), and counts the handler's calls
// during the two moves: all of them, the updates that changed nothing (no Pod changes meanwhile),
// and the calls the moves need (a release for each Pod given up, an initial add for each taken).
func (g *group) moveTwice(b *testing.B) moveCalls {
	h := &countingHandler{}
	if _, err := g.inf.AddEventHandler(h); err != nil {
		b.Fatal(err)
	}
	waitFor := func(what string, members []string) {
		want, n := g.share(members)
		deadline := time.Now().Add(2 * time.Minute)
		for {
			st := g.inf.Status()
			if st.Owned.Equal(want) && g.inf.HasSynced() && st.Objects == n && h.held() == n {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s: the replica owns %d buckets (want %d), caches %d Pods and its handler holds %d (want %d)", what, st.Owned.Len(), want.Len(), st.Objects, h.held(), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("the handler's initial adds", g.names)
	before := h.snapshot()
	joined := append(slices.Clone(g.names), "extra")
	_, cancel := g.newMember("extra")
	waitFor("a member joined", joined)
	cancel()
	waitFor("the member left", g.names)
	d := h.snapshot().minus(before)
	// Each move releases the Pods of the buckets given up and adds those of the buckets taken:
	// the join and the leave move the same ones, each way.
	was, is := shard.Assign(g.names, buckets)[g.names[0]], shard.Assign(joined, buckets)[g.names[0]]
	moved := 0
	for _, uid := range g.uids {
		if h := shard.Hash(uid); was.HasHash(h) != is.HasHash(h) {
			moved++
		}
	}
	return moveCalls{moves: 2, calls: d.calls(), echoes: d.echoes, moved: 2 * moved}
}

// countingHandler counts its calls; it implements shard.Releaser.
type countingHandler struct {
	mu     sync.Mutex
	counts handlerCounts
}

type handlerCounts struct{ adds, updates, echoes, deletes, releases int }

func (c handlerCounts) calls() int { return c.adds + c.updates + c.deletes + c.releases }

func (c handlerCounts) minus(o handlerCounts) handlerCounts {
	return handlerCounts{c.adds - o.adds, c.updates - o.updates, c.echoes - o.echoes, c.deletes - o.deletes, c.releases - o.releases}
}

func (h *countingHandler) snapshot() handlerCounts {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts
}

// held is how many Pods the handler holds: added, and neither deleted nor released since.
func (h *countingHandler) held() int {
	c := h.snapshot()
	return c.adds - c.deletes - c.releases
}

func (h *countingHandler) OnAdd(*corev1.Pod, bool) { h.mu.Lock(); h.counts.adds++; h.mu.Unlock() }
func (h *countingHandler) OnUpdate(old, obj *corev1.Pod) {
	h.mu.Lock()
	h.counts.updates++
	if old.ResourceVersion == obj.ResourceVersion {
		h.counts.echoes++
	}
	h.mu.Unlock()
}
func (h *countingHandler) OnDelete(informer.DeletedObject[*corev1.Pod]) {
	h.mu.Lock()
	h.counts.deletes++
	h.mu.Unlock()
}
func (h *countingHandler) OnRelease(*corev1.Pod) { h.mu.Lock(); h.counts.releases++; h.mu.Unlock() }

// podMapper maps Pods without discovery, so that neither side's CPU counts it.
func podMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	return m
}

// measure starts something with start, waits until it says it has settled, and returns the live
// heap it added (after a GC, against the heap before it started) and the process CPU it took.
// Then it calls after, if not nil, with what start began still running. Everything start began
// is stopped before it returns.
func measure(b *testing.B, start func(ctx context.Context) func() bool, after func(ctx context.Context)) (heap, cpu float64) {
	b.Helper()
	runtime.GC()
	before, cpuBefore := kubetest.LiveHeap(), kubetest.ProcessCPU()
	ctx, cancel := context.WithCancel(context.Background())
	settled := start(ctx)
	deadline := time.Now().Add(2 * time.Minute)
	for !settled() {
		if time.Now().After(deadline) {
			cancel()
			b.Fatal("not settled in 2 minutes")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cpu = float64(kubetest.ProcessCPU() - cpuBefore)
	time.Sleep(100 * time.Millisecond) // let the last relist's garbage become garbage
	runtime.GC()
	heap = float64(kubetest.LiveHeap()) - float64(before)
	if after != nil {
		after(ctx)
	}
	cancel()
	time.Sleep(200 * time.Millisecond) // members leave, factories stop
	return heap, cpu
}

// benchPods creates n Pods of about 1.5 KB in a new namespace, and returns it and their UIDs.
func benchPods(b *testing.B, admin *kubetest.Clients, n int) (string, []string) {
	b.Helper()
	ctx := context.Background()
	ns, err := kubetest.NewNamespace(ctx, admin.Kube, "bench-sharded")
	if err != nil {
		b.Fatal(err)
	}
	err = kubetest.Parallel(ctx, n, 32, func(ctx context.Context, i int) error {
		_, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:        fmt.Sprintf("pod-%05d", i),
				Labels:      map[string]string{"app": "bench", "tier": []string{"web", "api", "db"}[i%3]},
				Annotations: map[string]string{"bench.typedkube.io/note": strings.Repeat("x", 300)},
			},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "main", Image: "registry.k8s.io/pause:3.10",
				Args: []string{"--listen=:8080", fmt.Sprintf("--id=%d", i)},
				Env:  []corev1.EnvVar{{Name: "POD_INDEX", Value: fmt.Sprint(i)}, {Name: "MODE", Value: "benchmark"}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
			}}},
		}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	list, err := admin.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	uids := make([]string, len(list.Items))
	for i := range list.Items {
		uids[i] = string(list.Items[i].UID)
	}
	return ns, uids
}
