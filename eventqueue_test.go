package informer

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedkube/informer/internal/testobj"
)

// TestEventQueueDirect: once synced, a change that finds the consumer
// waiting on an empty queue is applied by the producer (direct); with events
// queued, it is queued; an event queued while a
// direct apply runs is popped only after it, so the order holds.
func TestEventQueueDirect(t *testing.T) {
	q := newEventQueue(MetaNamespaceKeyFunc[*corev1.Pod], nil)
	var mu sync.Mutex
	var order []string
	record := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	release := make(chan struct{})
	var block atomic.Bool
	q.setDirect(func(e event[*corev1.Pod]) {
		record("direct " + e.key)
		if block.Load() {
			<-release
			record("direct done " + e.key)
		}
	})
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		var batch []event[*corev1.Pod]
		for {
			var ok bool
			batch, _, ok = q.pop(batch[:0], 16)
			if !ok {
				return
			}
			for _, e := range batch {
				switch e.kind {
				case evResync:
					record("popped resync")
				case evReplace:
					record("popped replace")
				default:
					record("popped " + e.key)
				}
			}
			q.processed(len(batch))
		}
	}()
	waitIdle := func() {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			q.mu.Lock()
			idle := q.idle && q.events.Len() == 0
			q.mu.Unlock()
			if idle {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the consumer never waited")
			}
			time.Sleep(time.Millisecond)
		}
	}

	waitIdle()
	if err := q.Add(testobj.Pod("ns", "early", "1")); err != nil { // a first write that is not a Replace syncs the queue
		t.Fatal(err)
	}
	if err := q.Replace(nil, "2"); err != nil {
		t.Fatal(err)
	}
	waitIdle()
	if err := q.Add(testobj.Pod("ns", "a", "3")); err != nil {
		t.Fatal(err)
	}
	block.Store(true)
	started := make(chan struct{})
	go func() {
		defer close(started)
		if err := q.Update(testobj.Pod("ns", "b", "4")); err != nil {
			t.Error(err)
		}
	}()
	for deadline := time.Now().Add(5 * time.Second); ; {
		mu.Lock()
		got := slices.Contains(order, "direct ns/b")
		seen := slices.Clone(order)
		mu.Unlock()
		if got {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the update was not applied directly: %q", seen)
		}
		time.Sleep(time.Millisecond)
	}
	if err := q.Resync(); err != nil { // queued while the direct apply runs
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the consumer must not take it yet
	close(release)
	<-started
	waitIdle()
	q.Close()
	<-consumed
	want := []string{"direct ns/early", "popped replace", "direct ns/a", "direct ns/b", "direct done ns/b", "popped resync"}
	if !slices.Equal(order, want) {
		t.Errorf("order %q\nwant  %q", order, want)
	}
}

// A change the producer says is followed by another already received (a
// burst) is queued for the consumer, even while it waits on an empty
// queue: a burst is applied in batches, not one event at a time in the
// producer's goroutine. A change with nothing behind it is applied at once.
func TestEventQueueBurstIsQueued(t *testing.T) {
	q := newEventQueue(MetaNamespaceKeyFunc[*corev1.Pod], nil)
	var direct []string
	q.setDirect(func(e event[*corev1.Pod]) { direct = append(direct, e.key) })
	q.mu.Lock()
	q.synced, q.idle = true, true // as a consumer waiting after the sync
	q.mu.Unlock()

	q.noteBurst(true)
	if err := q.Update(testobj.Pod("ns", "a", "2")); err != nil {
		t.Fatal(err)
	}
	if len(direct) != 0 || q.Len() != 1 {
		t.Fatalf("a change in a burst: applied at once %q, %d queued; want it queued", direct, q.Len())
	}
	batch, _, _ := q.pop(nil, 16)
	q.processed(len(batch))
	q.mu.Lock()
	q.idle = true
	q.mu.Unlock()

	q.noteBurst(false)
	if err := q.Update(testobj.Pod("ns", "b", "3")); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(direct, []string{"ns/b"}) || q.Len() != 0 {
		t.Fatalf("the last change of a burst: applied at once %q, %d queued; want ns/b applied at once", direct, q.Len())
	}
}

// TestEventQueueWaitApplied: waitApplied waits for the events queued
// before it, a relist included, whatever their resource versions, and not
// for those queued after it; a direct apply counts once it has returned;
// closing the queue ends a wait.
func TestEventQueueWaitApplied(t *testing.T) {
	q := newEventQueue(MetaNamespaceKeyFunc[*corev1.Pod], nil)
	pending := func(ctx context.Context) error {
		t.Helper()
		ctx, cancel := context.WithCancel(ctx)
		cancel() // a wait that cannot return nil at once reports the context's error
		return q.waitApplied(ctx)
	}
	if err := pending(t.Context()); err != nil {
		t.Fatalf("an empty queue: %v", err)
	}
	if err := q.Replace([]*corev1.Pod{testobj.Pod("ns", "a", "5")}, "5"); err != nil {
		t.Fatal(err)
	}
	if err := q.Replace([]*corev1.Pod{testobj.Pod("ns", "b", "5")}, "5"); err != nil { // the same version again
		t.Fatal(err)
	}
	var batch []event[*corev1.Pod]
	batch, _, _ = q.pop(batch[:0], 1)
	q.processed(len(batch))
	if err := pending(t.Context()); !errors.Is(err, context.Canceled) {
		t.Fatalf("a relist queued: got %v, want the context's error", err)
	}
	// The canceled waits of pending leave a wake channel behind; it is
	// closed and cleared first, so that the one the loop below sees is the
	// waiter's own, made after it took its target. (Seeing the one left
	// behind, the test could queue the add before the waiter took its
	// target, which then included the add: a wait that never ended.)
	q.mu.Lock()
	q.wakeAppliedLocked()
	q.mu.Unlock()
	waited := make(chan error, 1)
	go func() { waited <- q.waitApplied(t.Context()) }()
	for waiting := false; !waiting; { // the waiter has taken its target once it waits for a wake
		q.mu.Lock()
		waiting = q.appliedWake != nil
		q.mu.Unlock()
		runtime.Gosched()
	}
	if err := q.Add(testobj.Pod("ns", "c", "6")); err != nil { // queued after the wait began: not waited for
		t.Fatal(err)
	}
	batch, _, _ = q.pop(batch[:0], 1) // the second relist only
	q.processed(len(batch))
	if err := <-waited; err != nil {
		t.Fatalf("once the relist was applied: %v", err)
	}
	if err := pending(t.Context()); !errors.Is(err, context.Canceled) {
		t.Fatalf("an add queued: got %v, want the context's error", err)
	}
	batch, _, _ = q.pop(batch[:0], 16)
	q.processed(len(batch))
	if err := pending(t.Context()); err != nil {
		t.Fatalf("everything applied: %v", err)
	}

	// A direct apply: counted once applied.
	q.setDirect(func(event[*corev1.Pod]) {
		if err := pending(t.Context()); !errors.Is(err, context.Canceled) {
			t.Errorf("during a direct apply: got %v, want the context's error", err)
		}
	})
	q.mu.Lock()
	q.idle = true // as the consumer sets while it waits on an empty queue
	q.mu.Unlock()
	if err := q.Add(testobj.Pod("ns", "d", "7")); err != nil {
		t.Fatal(err)
	}
	if err := pending(t.Context()); err != nil {
		t.Fatalf("after a direct apply: %v", err)
	}
	q.mu.Lock()
	q.idle = false
	q.mu.Unlock()

	if err := q.Add(testobj.Pod("ns", "e", "8")); err != nil {
		t.Fatal(err)
	}
	go func() { waited <- q.waitApplied(t.Context()) }()
	q.Close()
	if err := <-waited; !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: got %v, want ErrClosed", err)
	}
}
