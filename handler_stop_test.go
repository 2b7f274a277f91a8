package informer

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedkube/informer/internal/testobj"
)

// TestRemovedListenersAreForgotten: handlers added and removed while the
// informer runs do not pile up in it (each ended listener, with its
// buffers and handler, used to be kept until Run returned).
func TestRemovedListenersAreForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		addPods(src, 10)
		inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
		startInformer(t, inf)
		synctest.Wait()
		for range 1000 {
			reg, err := inf.AddEventHandler(&recorder{})
			if err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			if err := inf.RemoveEventHandler(reg); err != nil {
				t.Fatal(err)
			}
			<-reg.Done()
		}
		synctest.Wait()
		inf.mu.Lock()
		n := len(inf.runningListeners)
		inf.mu.Unlock()
		if n != 0 {
			t.Errorf("after 1,000 handlers added and removed, the informer keeps %d listeners; none is registered", n)
		}
	})
}

// TestCoalescedLagAfterCancel: Lag is how long the oldest notification
// not yet delivered has waited. Notifications that a coalescing handler's
// queue merged away (an add, then a delete) leave no wait behind; the
// next one, queued an hour later, used to report an hour.
func TestCoalescedLagAfterCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
		h := &recorder{block: make(chan struct{})}
		if _, err := inf.AddEventHandler(h, HandlerOptions{Coalesce: true}); err != nil {
			t.Fatal(err)
		}
		startInformer(t, inf)
		synctest.Wait()
		src.Add(testobj.Pod("ns", "a", ""))
		synctest.Wait() // the handler waits to make OnAdd(a)
		src.Add(testobj.Pod("ns", "x", ""))
		synctest.Wait()
		src.Delete(testobj.Pod("ns", "x", "")) // the add of x is merged away
		synctest.Wait()
		h.block <- struct{}{} // OnAdd(a) returns; nothing is pending
		synctest.Wait()
		time.Sleep(time.Hour)
		src.Add(testobj.Pod("ns", "y", ""))
		synctest.Wait() // the handler waits to make OnAdd(y), queued just now
		lag := inf.Stats().Handlers[0].Lag
		close(h.block)
		if lag != 0 {
			t.Errorf("Lag = %v for a notification queued at this instant", lag)
		}
	})
}

// TestRemoveAfterDrainGaveUp: RemoveEventHandler after a
// RemoveEventHandlerAndWait whose context ended stops the handler at once
// (it used to do nothing, and the handler got its whole backlog).
func TestRemoveAfterDrainGaveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
		slow := &recorder{block: make(chan struct{})}
		reg, err := inf.AddEventHandler(slow)
		if err != nil {
			t.Fatal(err)
		}
		startInformer(t, inf)
		synctest.Wait()
		addPods(src, 100)
		synctest.Wait() // the handler is in its first call, 99 wait
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := inf.RemoveEventHandlerAndWait(ctx, reg); err == nil {
			t.Fatal("RemoveEventHandlerAndWait returned nil with a blocked handler")
		}
		if err := inf.RemoveEventHandler(reg); err != nil {
			t.Fatal(err)
		}
		close(slow.block)
		<-reg.Done()
		if got := len(slow.take()); got > 1 {
			t.Errorf("the handler got %d calls after RemoveEventHandler returned; want at most the one it was in", got)
		}
	})
}

// TestRunContextStopsHandlers: once Run's context ends a handler gets at
// most the call it is in, even while the informer's lock is held (here by
// AddIndexers indexing the cache), which keeps Run from stopping the
// handlers itself. They used to go through their backlog until it could.
// Real time: synctest cannot wait on a goroutine blocked on a mutex.
func TestRunContextStopsHandlers(t *testing.T) {
	src := newFakeSource()
	inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
	slow := &recorder{block: make(chan struct{})}
	reg, err := inf.AddEventHandler(slow)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- inf.Run(ctx) }()
	waitUntil(t, "the handler synced", reg.HasSynced)
	addPods(src, 100)
	waitUntil(t, "100 notifications pending", func() bool { return reg.Pending() == 100 })
	gate, indexing := make(chan struct{}), make(chan struct{})
	var once sync.Once
	indexed := make(chan error, 1)
	go func() {
		indexed <- inf.AddIndexers(Indexers[*corev1.Pod]{"slow": func(*corev1.Pod) ([]string, error) {
			once.Do(func() { close(indexing) })
			<-gate // a large cache takes a while to index
			return nil, nil
		}})
	}()
	<-indexing
	cancel()
	close(slow.block) // the call in progress returns
	select {
	case <-reg.Done():
	case <-time.After(10 * time.Second):
		t.Errorf("the handler is still being called 10s after Run's context ended (%d calls)", len(slow.take()))
	}
	got := len(slow.take())
	close(gate)
	<-indexed
	if err := <-ran; err != nil {
		t.Errorf("Run = %v", err)
	}
	if got > 1 {
		t.Errorf("the handler got %d calls after Run's context ended; want at most the one it was in", got)
	}
}

// waitUntil polls cond for up to 10 seconds, and fails saying what it
// waited for.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
	}
}
