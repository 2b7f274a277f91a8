package informer

import (
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
