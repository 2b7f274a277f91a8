package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
	"github.com/typedkube/informer/shard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const buckets = 64

// pod i has a UID that looks random, as the API server's do: the UID places it.
func pod(i int) *corev1.Pod {
	h := sha256.Sum256(fmt.Appendf(nil, "pod-%d", i))
	uid := fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("pod-%03d", i), UID: types.UID(uid)}}
}

// reconcileLog records who reconciled each Pod last, and notes a reconcile that starts while
// another replica's of the same Pod is in progress.
type reconcileLog struct {
	mu       sync.Mutex
	last     map[string]string // key -> replica of the last reconcile
	busy     map[string]string // key -> replica reconciling it now
	overlaps []string
}

func (l *reconcileLog) reconcileFunc(replica string) ReconcileFunc {
	return func(ctx context.Context, key string, p *corev1.Pod) error {
		l.mu.Lock()
		if other, ok := l.busy[key]; ok {
			l.overlaps = append(l.overlaps, fmt.Sprintf("%s reconciled %s while %s was", replica, key, other))
		}
		l.busy[key] = replica
		l.mu.Unlock()
		time.Sleep(100 * time.Microsecond) // long enough for an overlap to show
		l.mu.Lock()
		delete(l.busy, key)
		l.last[key] = replica
		l.mu.Unlock()
		return nil
	}
}

type replica struct {
	name string
	c    *Controller
	stop func()
}

// startReplica runs one replica as main does: its own factory (over the shared in-memory
// server) and Member (over the shared fake Leases).
func startReplica(t *testing.T, srv *informertest.Server, leases *fake.Clientset, l *reconcileLog, name string) *replica {
	t.Helper()
	m, err := shard.NewMember(shard.Options{
		Leases: leases.CoordinationV1(), Namespace: "leases", Group: "pods", Identity: name,
		LeaseDuration: 2 * time.Second, RenewInterval: 200 * time.Millisecond, Buckets: buckets,
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := srv.NewFactory(informer.FactoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(f, m, l.reconcileFunc(name))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := m.Run(ctx); err != nil {
			t.Errorf("%s: member: %v", name, err)
		}
	})
	f.Start(ctx)
	wg.Go(func() {
		if err := c.Run(ctx, 2); err != nil && ctx.Err() == nil {
			t.Errorf("%s: %v", name, err)
		}
	})
	r := &replica{name: name, c: c}
	r.stop = sync.OnceFunc(func() {
		cancel()
		wg.Wait()
		f.Shutdown()
	})
	t.Cleanup(r.stop)
	return r
}

// settled says why the replicas have not settled yet ("" once they have): each owns the
// buckets Assign gives it, and each Pod was last reconciled by its owner.
func settled(l *reconcileLog, rs []*replica, n int) string {
	var names []string
	for _, r := range rs {
		names = append(names, r.name)
	}
	assigned := shard.Assign(names, buckets)
	for _, r := range rs {
		if st := r.c.Status(); !st.Owned.Equal(assigned[r.name]) {
			return fmt.Sprintf("%s owns %v, not yet %v", r.name, st.Owned, assigned[r.name])
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range n {
		p := pod(i)
		key := p.Namespace + "/" + p.Name
		for name, b := range assigned {
			if b.HasHash(shard.Hash(string(p.UID))) && l.last[key] != name {
				return fmt.Sprintf("%s was last reconciled by %q, not by its owner %s", key, l.last[key], name)
			}
		}
	}
	return ""
}

// waitSettled polls settled with a deadline, and says what it waited for.
func waitSettled(t *testing.T, l *reconcileLog, rs []*replica, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		why := settled(l, rs, n)
		if why == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("replicas not settled: %s", why)
		case <-tick.C:
		}
	}
}

// TestSharded: two replicas split the Pods, each reconciling its own; when one leaves, the
// other takes its Pods over. No Pod is ever reconciled by two replicas at once.
func TestSharded(t *testing.T) {
	const n = 200
	var objs []informer.Object
	for i := range n {
		objs = append(objs, pod(i))
	}
	srv := informertest.NewServer(nil, objs...)
	leases := fake.NewClientset()
	l := &reconcileLog{last: map[string]string{}, busy: map[string]string{}}

	a := startReplica(t, srv, leases, l, "a")
	b := startReplica(t, srv, leases, l, "b")
	waitSettled(t, l, []*replica{a, b}, n)
	for _, r := range []*replica{a, b} {
		if st := r.c.Status(); st.Objects == n || st.Objects == 0 {
			t.Errorf("%s caches %d of %d Pods: no split", r.name, st.Objects, n)
		}
	}

	b.stop() // b leaves: its Lease goes at once, and a takes every bucket
	waitSettled(t, l, []*replica{a}, n)

	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.overlaps) > 0 {
		t.Errorf("%d reconciles overlapped across replicas, such as %v", len(l.overlaps), l.overlaps[0])
	}
}
