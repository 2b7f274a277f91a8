package sharding

import (
	"context"
	"fmt"
	"runtime"
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
// map Pods without discovery.
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
				})
				unshardedHeap += h
				unshardedCPU += c
				h, c = measure(b, func(ctx context.Context) func() bool { return startGroup(b, ctx, admin, ns, uids, replicas) })
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
		})
	}
}

// startGroup starts replicas-1 Members without informers, then the measured replica, and returns
// whether it has settled: its share owned, synced, and its cache that share of the Pods.
func startGroup(b *testing.B, ctx context.Context, admin *kubetest.Clients, ns string, uids []string, replicas int) func() bool {
	group := fmt.Sprintf("bench-%d-%d", replicas, time.Now().UnixNano())
	var names []string
	for i := range replicas {
		names = append(names, fmt.Sprintf("r%d", i))
	}
	member := func(name string) *shard.Member {
		m, err := shard.NewMember(shard.Options{Leases: admin.Kube.CoordinationV1(), Namespace: ns, Group: group, Identity: name,
			LeaseDuration: leaseDuration, RenewInterval: renewInterval, Buckets: buckets})
		if err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { _ = m.Run(ctx) })
		context.AfterFunc(ctx, wg.Wait)
		return m
	}
	for _, name := range names[1:] {
		<-member(name).Ready()
	}
	m := member(names[0])
	f, err := informer.NewFactory(admin.Config, informer.FactoryOptions{Namespace: ns, RESTMapper: podMapper()})
	if err != nil {
		b.Fatal(err)
	}
	inf, err := shard.For[*corev1.Pod](f, m)
	if err != nil {
		b.Fatal(err)
	}
	f.Start(ctx)
	context.AfterFunc(ctx, f.Shutdown)
	want := shard.Assign(names, buckets)[names[0]]
	share := 0
	for _, uid := range uids {
		if want.HasHash(shard.Hash(uid)) {
			share++
		}
	}
	return func() bool {
		st := inf.Status()
		done := st.Owned.Equal(want) && inf.HasSynced() && st.Objects == share
		if done {
			b.Logf("replicas=%d: %d of %d Pods, mode %v, received %d, dropped %d", replicas, st.Objects, len(uids), st.Mode, st.Received, st.Dropped)
		}
		return done
	}
}

// podMapper maps Pods without discovery, so that neither side's CPU counts it.
func podMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	return m
}

// measure starts something with start, waits until it says it has settled, and returns the live
// heap it added (after a GC, against the heap before it started) and the process CPU it took.
// Everything start began is stopped before it returns.
func measure(b *testing.B, start func(ctx context.Context) func() bool) (heap, cpu float64) {
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
