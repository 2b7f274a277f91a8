package shard

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
)

// longLeases makes Leases of 10s renewed every second: a move test counts
// calls, which a member that fences itself (its renewals held up 1.6s on
// a busy machine, with the default test Leases) would add to.
func longLeases(o *Options) { o.LeaseDuration, o.RenewInterval = 10*time.Second, time.Second }

// startSteadyReplica is startReplica with longLeases.
func startSteadyReplica(t *testing.T, leases *fake.Clientset, src *informertest.Source[*corev1.ConfigMap], l *log, name string) *replica {
	t.Helper()
	return runReplica(t, newTestMember(t, leases, name, KeyUID, longLeases), src, l, name)
}

// twoSteadyReplicas starts replicas a and b over 300 objects and waits
// until they have split them and their handlers have heard of them all.
func twoSteadyReplicas(t *testing.T) (*informertest.Source[*corev1.ConfigMap], *fake.Clientset, *log, *replica, *replica) {
	t.Helper()
	src := informertest.NewSource(configMaps(300)...)
	leases := fake.NewClientset()
	l := newLog()
	a, b := startSteadyReplica(t, leases, src, l, "a"), startSteadyReplica(t, leases, src, l, "b")
	waitConverged(t, []*replica{a, b}, src)
	checkOwners(t, l, []*replica{a, b}, src)
	return src, leases, l, a, b
}

// callsSince returns the calls each replica got that started at or after
// since, by kind ("update(echo)" for an update that changed nothing).
func (l *log) callsSince(since time.Time) map[string]map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]map[string]int)
	for _, c := range l.calls {
		if c.start.Before(since) {
			continue
		}
		kind := c.kind
		switch {
		case c.echo:
			kind += "(echo)"
		case c.initial:
			kind += "(initial)"
		}
		if out[c.replica] == nil {
			out[c.replica] = make(map[string]int)
		}
		out[c.replica][kind]++
	}
	return out
}

// TestMoveCallsOnlyMovedObjects: when a replica joins and when it leaves,
// the replicas that keep buckets hear nothing of the objects they keep:
// only OnRelease for the objects they give up and OnAdd(obj, true) for
// those they take. Each move used to relist the whole share, and every
// kept object came back as OnUpdate(obj, obj).
func TestMoveCallsOnlyMovedObjects(t *testing.T) {
	src, leases, l, a, b := twoSteadyReplicas(t)

	check := func(what string, since time.Time, want int) {
		t.Helper()
		got := l.callsSince(since)
		total := 0
		for r, kinds := range got {
			for kind, n := range kinds {
				switch kind {
				case "release", "add(initial)":
					total += n
				default:
					t.Errorf("%s: %s got %d calls %s, want only releases and initial adds", what, r, n, kind)
				}
			}
		}
		if total != want {
			t.Errorf("%s: %d calls, want %d: %v", what, total, want, got)
		}
	}
	owned := func(rs ...*replica) map[string]Buckets {
		out := make(map[string]Buckets)
		for _, r := range rs {
			out[r.name] = r.inf.Status().Owned
		}
		return out
	}
	// calls counts the calls a move from before to after makes: for each
	// object whose owner changed, an initial add by the new owner and a
	// release by the old one, unless it left.
	calls := func(before, after map[string]Buckets, left string) int {
		ownerIn := func(m map[string]Buckets, h uint64) string {
			for name, b := range m {
				if b.HasHash(h) {
					return name
				}
			}
			return ""
		}
		n := 0
		for _, o := range src.Objects() {
			h := Hash(field(o, KeyUID))
			if from, to := ownerIn(before, h), ownerIn(after, h); from != to {
				n++
				if from != left {
					n++
				}
			}
		}
		return n
	}

	before := owned(a, b)
	since := time.Now()
	c := startSteadyReplica(t, leases, src, l, "c")
	waitConverged(t, []*replica{a, b, c}, src)
	checkOwners(t, l, []*replica{a, b, c}, src)
	after := owned(a, b, c)
	check("c joins", since, calls(before, after, ""))

	since = time.Now()
	c.stop()
	waitConverged(t, []*replica{a, b}, src)
	checkOwners(t, l, []*replica{a, b}, src)
	check("c leaves", since, calls(after, owned(a, b), "c"))
	if got := l.callsSince(since); got["c"] != nil {
		t.Errorf("c, leaving, got calls %v", got["c"])
	}
	if len(l.fails) > 0 {
		t.Errorf("overlapping calls: %v", l.fails)
	}
}

// TestMoveWhileWriting: buckets move while objects are created, updated
// and deleted; the caches end with every object at its latest version,
// each in one replica, and no update the handlers get is an echo.
func TestMoveWhileWriting(t *testing.T) {
	src, leases, l, a, b := twoSteadyReplicas(t)
	since := time.Now()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 300; ctx.Err() == nil; i++ {
			if _, err := src.Add(configMap(i)); err != nil {
				t.Error(err)
				return
			}
			u := configMap(i % 300)
			u.Data = map[string]string{"n": fmt.Sprint(i)}
			if _, err := src.Update(u); err != nil {
				t.Error(err)
				return
			}
			if i%5 == 0 {
				_, _ = src.Delete(configMap(i - 2))
			}
			time.Sleep(time.Millisecond)
		}
	}()
	c := startSteadyReplica(t, leases, src, l, "c")
	waitFor(t, "c to own its share", func() bool { return !c.inf.Status().Owned.Empty() && c.inf.HasSynced() })
	c.stop()
	d := startSteadyReplica(t, leases, src, l, "d")
	waitFor(t, "d to own its share", func() bool { return !d.inf.Status().Owned.Empty() && d.inf.HasSynced() })
	cancel()
	<-done
	rs := []*replica{a, b, d}
	waitConverged(t, rs, src)
	checkOwners(t, l, rs, src)
	for r, kinds := range l.callsSince(since) {
		if n := kinds["update(echo)"]; n > 0 {
			t.Errorf("%s got %d echoes (OnUpdate with an unchanged object)", r, n)
		}
	}
	if len(l.fails) > 0 {
		t.Errorf("overlapping calls: %v", l.fails)
	}
}

// TestMoveFallsBackToRelist: a move the source cannot make between two
// watches (the version the store reached is no longer served) asks the
// Reflector for a relist.
func TestMoveFallsBackToRelist(t *testing.T) {
	src := informertest.NewSource(configMaps(100)...)
	m := newTestMember(t, fake.NewClientset(), "a", KeyUID)
	inf, err := NewInformer[*corev1.ConfigMap](m, src, informer.SharedIndexInformerOptions[*corev1.ConfigMap]{})
	if err != nil {
		t.Fatal(err)
	}
	half, all := newBuckets(64), allBuckets(64)
	for b := range 32 {
		half = half.with(b)
	}
	inf.setActive(half)
	m.readyOnce.Do(func() { close(m.ready) })
	page, err := inf.src.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inf.activate(all.Minus(half), all)
	if _, err := src.Add(configMap(100)); err != nil { // the store has not seen it
		t.Fatal(err)
	}
	src.Expire()
	_, err = inf.src.Watch(t.Context(), metav1.ListOptions{ResourceVersion: page.ResourceVersion})
	if !errors.Is(err, informer.ErrRelist) {
		t.Errorf("Watch from an expired version after a gain = %v, want ErrRelist", err)
	}
}
