package informer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedkube/informer/internal/deque"
	"github.com/typedkube/informer/internal/testobj"
)

// addPods adds n Pods named p0, p1, ... to src.
func addPods(src *fakeSource, n int) {
	for i := range n {
		src.Add(testobj.Pod("ns", "p"+itoa(i), ""))
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// After RemoveEventHandler, a handler with a backlog gets at most the call
// it is in: its waiting notifications are dropped. Before the fix it got all
// 1,000.
func TestLifecycleRemoveDropsBacklog(t *testing.T) {
	forEachQueue(t, func(t *testing.T, mode QueueMode) {
		synctest.Test(t, func(t *testing.T) {
			src := newFakeSource()
			inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{Queue: mode})
			slow := &recorder{block: make(chan struct{})}
			reg, _ := inf.AddEventHandler(slow)
			startInformer(t, inf)
			synctest.Wait()
			addPods(src, 1000)
			synctest.Wait() // the handler is in its first call, the rest wait
			if err := inf.RemoveEventHandler(reg); err != nil {
				t.Fatal(err)
			}
			close(slow.block)
			<-reg.Done()
			if got := len(slow.take()); got > 1 {
				t.Errorf("the removed handler got %d calls after RemoveEventHandler; want at most the one in progress", got)
			}
			if p := reg.Pending(); p != 0 {
				t.Errorf("Pending() = %d after removal, want 0", p)
			}
		})
	})
}

// Stopping the informer: handlers get at most the call in progress, and Run
// returns without delivering their backlogs.
func TestLifecycleStopDropsBacklog(t *testing.T) {
	forEachQueue(t, func(t *testing.T, mode QueueMode) {
		synctest.Test(t, func(t *testing.T) {
			src := newFakeSource()
			inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{Queue: mode})
			slow := &recorder{block: make(chan struct{})}
			reg, _ := inf.AddEventHandler(slow)
			stop := startInformer(t, inf)
			synctest.Wait()
			addPods(src, 1000)
			synctest.Wait()
			stopped := make(chan struct{})
			go func() { stop(); close(stopped) }()
			synctest.Wait()
			close(slow.block)
			<-stopped
			<-reg.Done()
			if got := len(slow.take()); got > 1 {
				t.Errorf("the handler got %d calls after Run's context ended; want at most the one in progress", got)
			}
		})
	})
}

// A handler added while the informer runs, and removed at once, does not
// get the replay of the cache.
func TestLifecycleRemoveDropsReplay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		addPods(src, 1000)
		inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
		startInformer(t, inf)
		synctest.Wait()
		late := &recorder{block: make(chan struct{})}
		reg, _ := inf.AddEventHandler(late)
		synctest.Wait()
		if err := inf.RemoveEventHandler(reg); err != nil {
			t.Fatal(err)
		}
		close(late.block)
		<-reg.Done()
		if got := len(late.take()); got > 1 {
			t.Errorf("the late handler got %d replayed calls after removal; want at most 1", got)
		}
	})
}

// Cancelling Run stops applying queued changes: with 1,000 changes queued
// behind a slow index function, Run returns after the one being applied,
// and handlers get none of the rest. Before the fix all 1,000 were applied.
func TestLifecycleStopStopsApplying(t *testing.T) {
	forEachQueue(t, func(t *testing.T, mode QueueMode) {
		synctest.Test(t, func(t *testing.T) {
			src := newFakeSource()
			gate, started := make(chan struct{}), make(chan struct{})
			var indexed atomic.Int64
			slowIndex := func(p *corev1.Pod) ([]string, error) {
				if p.Name != "" && p.Name[0] == 'p' {
					if indexed.Add(1) == 1 {
						close(started)
					}
					<-gate
				}
				return []string{p.Spec.NodeName}, nil
			}
			inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{
				Queue:    mode,
				Indexers: Indexers[*corev1.Pod]{"node": slowIndex},
			})
			rec := &recorder{}
			reg, _ := inf.AddEventHandler(rec)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- inf.Run(ctx) }()
			if err := WaitForCacheSync(ctx, inf, reg); err != nil {
				t.Fatal(err)
			}
			if mode == QueueInOrder {
				// The queue takes every change while the first is applied.
				addPods(src, 1000)
				synctest.Wait()
			} else {
				// A DeltaFIFO is locked while a change is applied: the
				// Reflector waits to queue the others.
				go addPods(src, 1000)
			}
			<-started // applying the first change, blocked in the index function
			before := len(rec.take())
			cancel()
			close(gate)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if n := indexed.Load(); n > 2 {
				t.Errorf("the index function ran for %d changes after Run's context ended; want at most the one in progress", n-1)
			}
			if got := len(rec.take()); got > 1 {
				t.Errorf("handlers got %d calls after Run's context ended (%d before)", got, before)
			}
			src.DropWatches()
			synctest.Wait()
		})
	})
}

// Invalid Reflector options are refused by the constructor, not by Run.
// Before, Run failed at once and a registration made before it never ended.
func TestLifecycleInvalidReflectorOptions(t *testing.T) {
	src := newFakeSource()
	for name, r := range map[string]ReflectorOptions{
		"watch timeout": {MinWatchTimeout: 500 * time.Millisecond},
		"factor":        {Backoff: Backoff{Factor: 0.5}},
		"retry window":  {InternalErrorRetry: -time.Second},
	} {
		if _, err := NewSharedIndexInformer(src.Typed(), SharedIndexInformerOptions[*corev1.Pod]{Reflector: r}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: NewSharedIndexInformer = %v, want ErrInvalidOptions", name, err)
		}
	}
}

// When Run ends for any reason, every registration ends: Done closes and
// RemoveEventHandlerAndWait returns.
func TestLifecycleRunEndsRegistrations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
		before, _ := inf.AddEventHandler(&recorder{})
		stop := startInformer(t, inf)
		synctest.Wait()
		after, _ := inf.AddEventHandler(&recorder{})
		synctest.Wait()
		stop()
		for _, reg := range []*Registration[*corev1.Pod]{before, after} {
			select {
			case <-reg.Done():
			default:
				t.Errorf("%s: Done not closed after Run returned", reg.Name())
			}
			if err := inf.RemoveEventHandlerAndWait(t.Context(), reg); err != nil {
				t.Errorf("RemoveEventHandlerAndWait after Run: %v", err)
			}
		}
	})
}

// A stalled coalescing handler holds memory for the objects with pending
// changes only: add+delete pairs that cancel out leave nothing behind,
// whether for 40,000 distinct long names or one name again and again.
// Before, each pair left a key in the coalescer's order for ever.
func TestCoalesceBoundedUnderChurn(t *testing.T) {
	long := strings.Repeat("x", 200)
	for name, nameOf := range map[string]func(i int) string{
		"distinct names": func(i int) string { return long + itoa(i) },
		"one name":       func(int) string { return long },
	} {
		t.Run(name, func(t *testing.T) {
			l := newListener[*corev1.Pod](&recorder{}, HandlerOptions{Coalesce: true}, nil)
			l.push([]notification[*corev1.Pod]{{kind: nAdd, key: "ns/kept", new: testobj.Pod("ns", "kept", "1")}})
			maxSize := 0
			for i := range 40_000 {
				p := testobj.Pod("ns", nameOf(i), "1")
				key := "ns/" + p.Name
				l.push([]notification[*corev1.Pod]{{kind: nAdd, key: key, new: p}, {kind: nDelete, key: key, old: p}})
				maxSize = max(maxSize, l.merged.size())
			}
			if maxSize > 200 {
				t.Errorf("the coalescer grew to %d entries with 1 object pending", maxSize)
			}
			if got := l.depth.Load(); got != 1 {
				t.Errorf("depth %d, want 1", got)
			}
			var out deque.Deque[notification[*corev1.Pod]]
			l.merged.drainTo(&out)
			if out.Len() != 1 || out.At(0).key != "ns/kept" {
				t.Errorf("drained %d notifications, want the one for ns/kept", out.Len())
			}
		})
	}
}

// A key whose pending state cancelled out and came back is delivered at
// its new place in the order, not its first.
func TestCoalesceOrderAfterCancel(t *testing.T) {
	c := newCoalescer[*corev1.Pod]()
	l := newListener[*corev1.Pod](&recorder{}, HandlerOptions{}, nil)
	a, b := testobj.Pod("ns", "a", "1"), testobj.Pod("ns", "b", "1")
	for _, n := range []notification[*corev1.Pod]{
		{kind: nAdd, key: "ns/a", new: a}, {kind: nDelete, key: "ns/a", old: a},
		{kind: nAdd, key: "ns/b", new: b}, {kind: nAdd, key: "ns/a", new: a},
	} {
		c.add(&n, l)
	}
	var out deque.Deque[notification[*corev1.Pod]]
	c.drainTo(&out)
	var keys []string
	for n := range out.All {
		keys = append(keys, n.key)
	}
	if want := []string{"ns/b", "ns/a"}; !slices.Equal(keys, want) {
		t.Errorf("order %v, want %v", keys, want)
	}
}
