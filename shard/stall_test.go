package shard

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
)

// freezer freezes a Member's loop, as SIGSTOP or a paused VM would: the
// loop blocks before its next step until thaw.
type freezer struct {
	mu     sync.Mutex
	frozen chan struct{} // closed when the loop is frozen; nil when not armed
	thawed chan struct{}
}

// gate is the Member's beforeStep.
func (f *freezer) gate() {
	f.mu.Lock()
	frozen, thawed := f.frozen, f.thawed
	f.mu.Unlock()
	if frozen == nil {
		return
	}
	select {
	case <-frozen:
	default:
		close(frozen)
	}
	<-thawed
}

// freeze arms the freezer and returns once the loop is frozen.
func (f *freezer) freeze() {
	f.mu.Lock()
	frozen := make(chan struct{})
	f.frozen, f.thawed = frozen, make(chan struct{})
	f.mu.Unlock()
	<-frozen
}

func (f *freezer) thaw() {
	f.mu.Lock()
	thawed := f.thawed
	f.frozen, f.thawed = nil, nil
	f.mu.Unlock()
	close(thawed)
}

// TestStalledReplicaDeliversNothing: a replica whose Member loop is frozen
// past its Lease's expiry (its process stopped, say) while its informer
// still receives events delivers none of them once it runs again; the
// other replica has taken its buckets meanwhile. When its loop thaws, the
// renewal succeeds, yet it gives every bucket up (OnRelease) and delivers
// nothing until it has claimed buckets again, which the other gives back:
// no add, update or delete of it starts while the other holds the object.
// The replica used to deliver every queued and new event at once (the
// wrapper checked the buckets only) and, as the renewal succeeded, go on
// handling buckets the other held until the other gave them back.
//
// It runs in a synctest bubble: time moves only while every goroutine
// waits, so the stall lasts exactly as long as the test says.
func TestStalledReplicaDeliversNothing(t *testing.T) {
	for _, events := range []string{"during the stall", "after it"} {
		t.Run("events "+events, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := informertest.NewSource(configMaps(100)...)
				leases := fake.NewClientset()
				l := newLog()
				l.callTime = 0
				f := &freezer{}
				am := newTestMember(t, leases, "a", KeyUID)
				am.beforeStep = f.gate
				a := runReplica(t, am, src, l, "a")
				b := startReplica(t, leases, src, l, "b")
				waitConverged(t, []*replica{a, b}, src)

				f.freeze()
				stalled := time.Now()
				// b takes a's buckets once a's Lease has expired.
				time.Sleep(a.member.opts.LeaseDuration)
				waitFor(t, "b to own every bucket", func() bool { return b.member.Status().Owned.Len() == 64 })
				update := func(round int) {
					for _, o := range src.Objects() {
						u := o.DeepCopy()
						u.Data = map[string]string{"round": fmt.Sprint(round)}
						if _, err := src.Update(u); err != nil {
							t.Fatal(err)
						}
					}
				}
				if events == "during the stall" {
					update(1)
					synctest.Wait() // every notification handled or dropped
					if calls := l.deliveries("a", stalled); len(calls) > 0 {
						t.Errorf("a, stalled past its fencing point, delivered %d calls, such as %v", len(calls), calls[0])
					}
				}
				f.thaw()
				if events == "after it" {
					update(2)
				}
				waitConverged(t, []*replica{a, b}, src)
				checkOwners(t, l, []*replica{a, b}, src)
				if bad := l.deliveredWhileHeldElsewhere("a", stalled); len(bad) > 0 {
					t.Errorf("a delivered %d calls for objects b held, such as %v", len(bad), bad[:min(3, len(bad))])
				}
				if n := l.count("a", "release", stalled); n == 0 {
					t.Errorf("a released nothing after the stall")
				}
				if st := a.member.Status(); st.Fenced || st.Owned.Empty() {
					t.Errorf("a after the stall: %+v", st)
				}
			})
		})
	}
}

// waitFor polls cond (in a synctest bubble, fake time passes) for up to 30s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runReplica makes m's informer over src with l's handler and runs both.
func runReplica(t *testing.T, m *Member, src *informertest.Source[*corev1.ConfigMap], l *log, name string) *replica {
	t.Helper()
	inf, err := NewInformer[*corev1.ConfigMap](m, src, informer.SharedIndexInformerOptions[*corev1.ConfigMap]{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(l.handlerFor(name)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{name: name, member: m, inf: inf, cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := m.Run(ctx); err != nil {
			t.Errorf("%s: Member.Run: %v", name, err)
		}
	})
	wg.Go(func() { _ = inf.Run(ctx) })
	go func() { wg.Wait(); close(r.done) }()
	t.Cleanup(r.stop)
	return r
}
