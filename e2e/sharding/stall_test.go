package sharding

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/typedkube/informer/e2e/internal/kubetest"
	"github.com/typedkube/informer/shard"
)

// heldElsewhere returns the adds, updates and deletes of replica that started at or after since
// while another replica's handler held the object: from the start of that replica's add or
// update until the end of its delete or release.
func (l *ledger) heldElsewhere(replica string, since time.Time) []entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	type span struct{ from, to time.Time } // to is zero while held
	spans := make(map[string][]span)       // key -> spans of other replicas
	open := make(map[[2]string]time.Time)  // {replica, key} -> start of the hold
	// A replica's calls are made one at a time, so its entries are in call order.
	for _, e := range l.history {
		if e.replica == replica {
			continue
		}
		k := [2]string{e.replica, e.key}
		from, holding := open[k]
		switch {
		case (e.kind == "add" || e.kind == "update") && !holding:
			open[k] = e.start
		case (e.kind == "delete" || e.kind == "release") && holding:
			spans[e.key] = append(spans[e.key], span{from, e.end})
			delete(open, k)
		}
	}
	for k, from := range open {
		spans[k[1]] = append(spans[k[1]], span{from: from})
	}
	var out []entry
	for _, e := range l.history {
		if e.replica != replica || e.start.Before(since) || e.kind == "release" {
			continue
		}
		for _, sp := range spans[e.key] {
			if !e.start.Before(sp.from) && (sp.to.IsZero() || e.start.Before(sp.to)) {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// TestShardedStall: a replica running as a process of its own, its handler held in a call with
// notifications queued behind it, is stopped (SIGSTOP) past its Lease's expiry while a writer
// changes objects of every bucket; the other two replicas take its buckets. When it resumes
// (SIGCONT), with notifications and watch events queued for objects they now hold, it delivers none
// of them: no add, update or delete of it starts while another replica holds the object (the call
// it was in when it was stopped started before). It gives its buckets up (OnRelease), claims its
// share again once the others have given it back, and the three settle with every object held by
// exactly one of them. Against the server with ShardedListAndWatch on; the bug does not depend on
// who filters.
func TestShardedStall(t *testing.T) {
	srv := gateOn
	admin, err := kubetest.NewClients(srv.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ns, err := kubetest.NewNamespace(t.Context(), admin.Kube, "stall")
	if err != nil {
		t.Fatal(err)
	}
	n := min(objectCount(), 2000)
	populate(t, admin, ns, n)
	l := newLedger()
	a, b := startReplica(t, srv, ns, "a", l), startReplica(t, srv, ns, "b", l)
	s := startReplicaProcess(t, srv, ns, "s", l)
	settle(t, admin, ns, []*replica{a, b}, l, "a, b and the process s", s)

	ctx, stopWriter := context.WithCancel(t.Context())
	var writer sync.WaitGroup
	var writes atomic.Int64
	next := n
	writer.Go(func() { write(ctx, t, admin, ns, n, &next, &writes) })
	defer func() { stopWriter(); writer.Wait() }() // also when a check fails
	waitUntil(t, "the writer's first 20 changes", time.Minute, func() bool { return writes.Load() >= 20 })
	// s's handler is held in a call, as a busy controller's would be, while notifications queue
	// behind it.
	s.hold(t, true)
	waitUntil(t, "50 notifications queued in s", time.Minute, func() bool {
		st := s.status.Load()
		return st != nil && st.Pending >= 50
	})

	s.signal(t, syscall.SIGSTOP)
	stopped := time.Now()
	want := shard.Assign([]string{"a", "b"}, buckets)
	waitUntil(t, "a and b to take s's buckets", leaseDuration+30*time.Second, func() bool {
		return a.inf.Status().Owned.Equal(want["a"]) && b.inf.Status().Owned.Equal(want["b"]) && a.inf.HasSynced() && b.inf.HasSynced()
	})
	tookOver := time.Since(stopped)
	mark := writes.Load()
	waitUntil(t, "100 more changes while s is stopped", time.Minute, func() bool { return writes.Load() >= mark+100 })
	s.signal(t, syscall.SIGCONT)
	resumed := time.Now()
	s.hold(t, false)
	t.Logf("s stopped for %v; a and b had its buckets after %v", resumed.Sub(stopped).Round(time.Millisecond), tookOver.Round(time.Millisecond))

	want = shard.Assign([]string{"a", "b", "s"}, buckets)
	waitUntil(t, "s to own its share again", leaseDuration+30*time.Second, func() bool {
		st := s.status.Load()
		return st != nil && st.Synced && st.Owned == want["s"].String() && a.inf.Status().Owned.Equal(want["a"]) && b.inf.Status().Owned.Equal(want["b"])
	})
	t.Logf("s had its share again %v after it resumed", time.Since(resumed).Round(time.Millisecond))
	stopWriter()
	writer.Wait()
	settle(t, admin, ns, []*replica{a, b}, l, "after the stall", s)

	if bad := l.heldElsewhere("s", stopped); len(bad) > 0 {
		t.Errorf("s delivered %d calls for objects another replica held, such as %v", len(bad), bad[:min(3, len(bad))])
	}
	if o := l.overlapsExcept(); len(o) > 0 {
		t.Errorf("%d calls of a and b overlapped, such as %v", len(o), o[:min(3, len(o))])
	}
	if got := l.count("s", "release"); got == 0 {
		t.Errorf("s released nothing when it resumed")
	}
	l.mu.Lock()
	t.Logf("%d writes; calls per replica: %v", writes.Load(), l.calls)
	l.mu.Unlock()
}

// waitUntil waits until cond holds, for at most timeout (kubetest.WaitFor), failing t if it
// does not.
func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	if err := kubetest.WaitFor(t.Context(), timeout, what, cond); err != nil {
		t.Fatal(err)
	}
}
