package informer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/typedkube/informer/internal/testobj"
)

// recorder is a handler that writes down every call, as "add ns/a@1 initial",
// "update ns/a@1 -> ns/a@2", "delete ns/a@2" or "delete ns/a@2 unknown".
type recorder struct {
	mu    sync.Mutex
	calls []string
	// block, if set, is received from before each call: a stalled handler.
	block chan struct{}
	// panicOn makes a call panic when its line has this prefix.
	panicOn string
}

func (r *recorder) record(line string) {
	if r.block != nil {
		<-r.block
	}
	r.mu.Lock()
	r.calls = append(r.calls, line)
	r.mu.Unlock()
	if r.panicOn != "" && strings.HasPrefix(line, r.panicOn) {
		panic("recorder: " + line)
	}
}

func (r *recorder) OnAdd(p *corev1.Pod, initial bool) {
	line := "add " + podString(p)
	if initial {
		line += " initial"
	}
	r.record(line)
}

func (r *recorder) OnUpdate(old, new *corev1.Pod) {
	r.record("update " + podString(old) + " -> " + podString(new))
}

func (r *recorder) OnDelete(d DeletedObject[*corev1.Pod]) {
	line := "delete " + podString(d.Obj)
	if d.Key != mustKeyOrEmpty(d.Obj) {
		line += " key=" + d.Key
	}
	if d.FinalStateUnknown {
		line += " unknown"
	}
	r.record(line)
}

func mustKeyOrEmpty(p *corev1.Pod) string {
	if p == nil {
		return ""
	}
	return mustKey(p)
}

// take returns the calls recorded so far and forgets them.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

func checkCalls(t *testing.T, r *recorder, want ...string) {
	t.Helper()
	if got := r.take(); !slices.Equal(got, want) {
		t.Fatalf("handler calls:\n  got  %q\n  want %q", got, want)
	}
}

// startInformer runs inf until the test ends, and checks that Run returns.
func startInformer[T Object](t *testing.T, inf *SharedIndexInformer[T]) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v", err)
		}
		if !inf.IsStopped() {
			t.Error("IsStopped is false after Run returned")
		}
	}
	t.Cleanup(stop)
	return stop
}

func newPodInformer(t *testing.T, src *fakeSource, opts SharedIndexInformerOptions[*corev1.Pod]) *SharedIndexInformer[*corev1.Pod] {
	t.Helper()
	opts.Reflector.WatchList = WatchListOff // the fake serves no watch-list
	if opts.Reflector.WatchErrorHandler == nil {
		opts.Reflector.WatchErrorHandler = func(_ context.Context, err error) { t.Logf("watch error: %v", err) }
	}
	inf, err := NewSharedIndexInformer(src.Typed(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return inf
}

// forEachQueue runs a test once per queue mode.
func forEachQueue(t *testing.T, test func(t *testing.T, mode QueueMode)) {
	for _, mode := range []QueueMode{QueueInOrder, QueueDeltaFIFO} {
		t.Run(fmt.Sprint("queue=", mode), func(t *testing.T) { test(t, mode) })
	}
}

func (m QueueMode) String() string {
	if m == QueueDeltaFIFO {
		return "DeltaFIFO"
	}
	return "InOrder"
}

func TestInformerDeliversChangesInOrder(t *testing.T) {
	forEachQueue(t, func(t *testing.T, mode QueueMode) {
		synctest.Test(t, func(t *testing.T) {
			src := newFakeSource()
			src.Add(testobj.Pod("ns", "a", ""))
			src.Add(testobj.Pod("ns", "b", ""))
			inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{Queue: mode})
			rec := &recorder{}
			reg, err := inf.AddEventHandler(rec)
			if err != nil {
				t.Fatal(err)
			}
			startInformer(t, inf)
			synctest.Wait()
			checkCalls(t, rec, "add ns/a@2 initial", "add ns/b@3 initial")
			if !inf.HasSynced() || !reg.HasSynced() {
				t.Fatalf("HasSynced: informer %v, handler %v", inf.HasSynced(), reg.HasSynced())
			}
			if err := WaitForCacheSync(t.Context(), inf, reg); err != nil {
				t.Fatal(err)
			}
			// The in-order queue keeps the order across keys whatever the
			// timing; a DeltaFIFO appends a change to its key's queued deltas,
			// so the test lets each change through before the next.
			pause := func() {
				if mode == QueueDeltaFIFO {
					synctest.Wait()
				}
			}
			src.Modify(testobj.Pod("ns", "a", ""))
			pause()
			src.Add(testobj.Pod("other", "c", ""))
			pause()
			src.Modify(testobj.Pod("ns", "b", ""))
			pause()
			src.Delete(testobj.Pod("ns", "a", ""))
			synctest.Wait()
			want := []string{"update ns/a@2 -> ns/a@4", "add other/c@5", "update ns/b@3 -> ns/b@6", "delete ns/a@7"}
			checkCalls(t, rec, want...)
			checkCacheMatches(t, inf, src)
			if rv := inf.LastSyncResourceVersion(); rv != "7" {
				t.Errorf("LastSyncResourceVersion = %q, want 7", rv)
			}
		})
	})
}

// checkCacheMatches compares the informer's cache with the source.
func checkCacheMatches(t *testing.T, inf *SharedIndexInformer[*corev1.Pod], src *fakeSource) {
	t.Helper()
	if got, want := podsString(inf.GetIndexer().List()), podsString(src.Pods()); got != want {
		t.Fatalf("cache %q, source %q", got, want)
	}
}

// TestInformerRelist checks that a relist is applied at once and that the
// objects deleted while the watch was down are delivered as deletions with
// an unknown final state.
func TestInformerRelist(t *testing.T) {
	forEachQueue(t, func(t *testing.T, mode QueueMode) {
		synctest.Test(t, func(t *testing.T) {
			src := newFakeSource()
			src.Add(testobj.Pod("ns", "a", ""))
			src.Add(testobj.Pod("ns", "b", ""))
			src.Add(testobj.Pod("ns", "c", ""))
			inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{Queue: mode})
			rec := &recorder{}
			inf.AddEventHandler(rec)
			startInformer(t, inf)
			synctest.Wait()
			rec.take()

			// While the source is down: b is deleted, c changes, d appears;
			// then its history is compacted, so the informer must relist.
			src.Offline()
			synctest.Wait() // the informer meets the outage and backs off
			src.Delete(testobj.Pod("ns", "b", ""))
			src.Modify(testobj.Pod("ns", "c", ""))
			src.Add(testobj.Pod("ns", "d", ""))
			src.Compact()
			src.Online()
			time.Sleep(time.Minute) // past the Reflector's backoff
			synctest.Wait()
			got := rec.take()
			// As in client-go, a handler without resync is told about the
			// unchanged a too.
			want := []string{"delete ns/b@3 unknown", "update ns/a@2 -> ns/a@2", "update ns/c@4 -> ns/c@6", "add ns/d@7"}
			if mode == QueueDeltaFIFO {
				// A DeltaFIFO queues the tombstone after the listed objects.
				want = []string{"update ns/a@2 -> ns/a@2", "update ns/c@4 -> ns/c@6", "add ns/d@7", "delete ns/b@3 unknown"}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("handler calls after relist:\n  got  %q\n  want %q", got, want)
			}
			checkCacheMatches(t, inf, src)
		})
	})
}

// TestInformerLateHandler checks that a handler added while the informer
// runs gets the cache replayed, then the later changes, while a stalled
// handler beside it holds nothing up.
func TestInformerLateHandler(t *testing.T) {
	forEachQueue(t, func(t *testing.T, mode QueueMode) {
		synctest.Test(t, func(t *testing.T) {
			src := newFakeSource()
			for i := range 3 {
				src.Add(testobj.Pod("ns", fmt.Sprint("p", i), ""))
			}
			inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{Queue: mode})
			stalled := &recorder{block: make(chan struct{})}
			stalledReg, _ := inf.AddEventHandler(stalled)
			startInformer(t, inf)
			synctest.Wait()
			if !inf.HasSynced() || stalledReg.HasSynced() {
				t.Fatalf("informer synced %v, stalled handler synced %v; want true, false", inf.HasSynced(), stalledReg.HasSynced())
			}

			late := &recorder{}
			lateReg, err := inf.AddEventHandler(late)
			if err != nil {
				t.Fatal(err)
			}
			src.Modify(testobj.Pod("ns", "p1", ""))
			synctest.Wait()
			got := late.take()
			slices.Sort(got[:3]) // the replay comes in cache order
			if want := []string{"add ns/p0@2 initial", "add ns/p1@3 initial", "add ns/p2@4 initial", "update ns/p1@3 -> ns/p1@5"}; !slices.Equal(got, want) {
				t.Fatalf("late handler calls:\n  got  %q\n  want %q", got, want)
			}
			if !lateReg.HasSynced() {
				t.Fatal("the late handler has not synced after its replay")
			}
			if n := stalledReg.Pending(); n != 4 {
				t.Fatalf("stalled handler has %d pending notifications, want 4", n)
			}
			close(stalled.block) // let it go
			synctest.Wait()
			if got := len(stalled.take()); got != 4 || !stalledReg.HasSynced() {
				t.Fatalf("stalled handler got %d calls, synced %v", got, stalledReg.HasSynced())
			}
		})
	})
}

// TestInformerResyncRouting checks per-handler resync periods: resync
// updates go only to handlers whose period is due.
func TestInformerResyncRouting(t *testing.T) {
	forEachQueue(t, func(t *testing.T, mode QueueMode) {
		synctest.Test(t, func(t *testing.T) {
			src := newFakeSource()
			src.Add(testobj.Pod("ns", "a", ""))
			inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{Queue: mode, DefaultResyncPeriod: time.Hour})
			fast, slow, never := &recorder{}, &recorder{}, &recorder{}
			inf.AddEventHandler(fast, HandlerOptions{ResyncPeriod: 10 * time.Second})
			inf.AddEventHandler(slow, HandlerOptions{ResyncPeriod: 30 * time.Second})
			inf.AddEventHandler(never, HandlerOptions{ResyncPeriod: -1})
			startInformer(t, inf)
			synctest.Wait()
			for _, r := range []*recorder{fast, slow, never} {
				r.take()
			}
			time.Sleep(35 * time.Second)
			synctest.Wait()
			resync := "update ns/a@2 -> ns/a@2"
			checkCalls(t, fast, resync, resync, resync)
			checkCalls(t, slow, resync)
			checkCalls(t, never)
		})
	})
}

func TestInformerResyncPeriods(t *testing.T) {
	src := newFakeSource()
	inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{DefaultResyncPeriod: time.Minute})
	a, _ := inf.AddEventHandler(&recorder{}, HandlerOptions{ResyncPeriod: 100 * time.Millisecond})
	b, _ := inf.AddEventHandler(&recorder{})
	c, _ := inf.AddEventHandler(&recorder{}, HandlerOptions{ResyncPeriod: -1})
	d, _ := inf.AddEventHandler(&recorder{}, HandlerOptions{ResyncPeriod: 5 * time.Second})
	// Below the floor a period is raised to a second, which also becomes the
	// check period because the informer has not started.
	for _, tt := range []struct {
		reg  *Registration[*corev1.Pod]
		want time.Duration
	}{{a, time.Second}, {b, time.Minute}, {c, 0}, {d, 5 * time.Second}} {
		if tt.reg.l.resync != tt.want {
			t.Errorf("%s: resync %v, want %v", tt.reg.Name(), tt.reg.l.resync, tt.want)
		}
	}
	if inf.checkPeriod != time.Second {
		t.Errorf("check period %v, want 1s", inf.checkPeriod)
	}
	// Without a default period nothing resyncs, as in client-go, and a
	// handler's period is refused rather than silently ignored.
	none := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
	if _, err := none.AddEventHandler(&recorder{}, HandlerOptions{ResyncPeriod: 5 * time.Second}); !errors.Is(err, ErrResyncUnsupported) {
		t.Errorf("without DefaultResyncPeriod: AddEventHandler with a resync = %v, want ErrResyncUnsupported", err)
	}
	e, err := none.AddEventHandler(&recorder{}, HandlerOptions{ResyncPeriod: -1})
	if err != nil || e.l.resync != 0 || none.checkPeriod != 0 {
		t.Errorf("without DefaultResyncPeriod: %v, resync %v, check period %v; want 0, 0", err, e.l.resync, none.checkPeriod)
	}
}

func TestInformerRemoveHandler(t *testing.T) {
	forEachQueue(t, func(t *testing.T, mode QueueMode) {
		synctest.Test(t, func(t *testing.T) {
			src := newFakeSource()
			inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{Queue: mode})
			kept, removed, drained := &recorder{}, &recorder{}, &recorder{block: make(chan struct{})}
			inf.AddEventHandler(kept)
			rreg, _ := inf.AddEventHandler(removed)
			dreg, _ := inf.AddEventHandler(drained)
			startInformer(t, inf)
			synctest.Wait()
			src.Add(testobj.Pod("ns", "a", ""))
			synctest.Wait()
			if err := inf.RemoveEventHandler(rreg); err != nil {
				t.Fatal(err)
			}
			<-rreg.Done()
			// RemoveEventHandlerAndWait delivers what is pending, then returns.
			waited := make(chan error, 1)
			go func() { waited <- inf.RemoveEventHandlerAndWait(t.Context(), dreg) }()
			synctest.Wait()
			select {
			case <-waited:
				t.Fatal("RemoveEventHandlerAndWait returned while the handler had work pending")
			default:
			}
			close(drained.block)
			if err := <-waited; err != nil {
				t.Fatal(err)
			}
			src.Add(testobj.Pod("ns", "b", ""))
			synctest.Wait()
			checkCalls(t, kept, "add ns/a@2", "add ns/b@3")
			checkCalls(t, removed, "add ns/a@2")
			checkCalls(t, drained, "add ns/a@2")
			if err := inf.RemoveEventHandler(rreg); err != nil {
				t.Fatalf("removing twice: %v", err)
			}
		})
	})
}

func TestInformerHandlerPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		var mu sync.Mutex
		var reported []string
		inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{
			HandlerPanic: func(_ context.Context, handler string, r any) {
				mu.Lock()
				defer mu.Unlock()
				reported = append(reported, fmt.Sprint(handler, ": ", r))
			},
		})
		bad := &recorder{panicOn: "add ns/a"}
		reg, _ := inf.AddEventHandler(bad, HandlerOptions{Name: "bad"})
		startInformer(t, inf)
		synctest.Wait()
		src.Add(testobj.Pod("ns", "a", ""))
		src.Add(testobj.Pod("ns", "b", ""))
		synctest.Wait()
		checkCalls(t, bad, "add ns/a@2", "add ns/b@3")
		if reg.Panics() != 1 || len(reported) != 1 || reported[0] != "bad: recorder: add ns/a@2" {
			t.Fatalf("panics %d, reported %q", reg.Panics(), reported)
		}
	})
}

// TestInformerCoalesceBoundsMemory stalls a handler in Coalesce mode while
// many changes to few objects go by: what it holds is bounded by the number
// of objects, and it then sees each object's latest state.
func TestInformerCoalesceBoundsMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		for i := range 10 {
			src.Add(testobj.Pod("ns", fmt.Sprint("p", i), ""))
		}
		inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
		bounded := &recorder{block: make(chan struct{})}
		unbounded := &recorder{block: make(chan struct{})}
		breg, _ := inf.AddEventHandler(bounded, HandlerOptions{Coalesce: true})
		ureg, _ := inf.AddEventHandler(unbounded)
		startInformer(t, inf)
		synctest.Wait()
		// Both handlers were given the initial list as one batch; they
		// handle its first add and stall.
		bounded.block <- struct{}{}
		unbounded.block <- struct{}{}
		synctest.Wait()
		for range 100 {
			for i := range 10 {
				src.Modify(testobj.Pod("ns", fmt.Sprint("p", i), ""))
			}
		}
		src.Delete(testobj.Pod("ns", "p5", ""))
		src.Add(testobj.Pod("ns", "new", ""))
		src.Delete(testobj.Pod("ns", "new", ""))
		synctest.Wait()
		// At most the batch it was given before it stalled (the ten adds)
		// and one pending state per object.
		if n := breg.Pending(); n > 20 {
			t.Fatalf("coalescing handler holds %d notifications for 10 objects", n)
		}
		if n := ureg.Pending(); n < 1000 {
			t.Fatalf("non-coalescing handler holds %d notifications, want every one", n)
		}
		close(bounded.block)
		close(unbounded.block)
		synctest.Wait()
		// The ten adds it was given before it stalled, then one update per
		// object from the state it saw to the latest, p5's deletion, and
		// nothing about "new", which came and went meanwhile.
		var want []string
		for i := range 10 {
			want = append(want, fmt.Sprintf("add ns/p%d@%d initial", i, i+2))
		}
		for i := range 10 {
			if i == 5 {
				want = append(want, "delete ns/p5@1012")
				continue
			}
			want = append(want, fmt.Sprintf("update ns/p%d@%d -> ns/p%d@%d", i, i+2, i, 1002+i))
		}
		checkCalls(t, bounded, want...)
		if last := podsString(inf.GetIndexer().List()); !strings.Contains(last, "ns/p9@1011") {
			t.Fatalf("cache %s", last)
		}
		if !breg.HasSynced() || len(unbounded.take()) != 1013 {
			t.Fatal("handlers did not catch up")
		}
	})
}

func TestInformerTransform(t *testing.T) {
	forEachQueue(t, func(t *testing.T, mode QueueMode) {
		synctest.Test(t, func(t *testing.T) {
			src := newFakeSource()
			src.Add(testobj.BenchPod(1, 1))
			inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{Queue: mode})
			strip := func(p *corev1.Pod) (*corev1.Pod, error) {
				q := p.DeepCopy()
				q.Spec, q.Status, q.ManagedFields = corev1.PodSpec{}, corev1.PodStatus{}, nil
				return q, nil
			}
			if err := inf.SetTransform(strip); err != nil {
				t.Fatal(err)
			}
			var seen []*corev1.Pod
			var mu sync.Mutex
			inf.AddEventHandler(ResourceEventHandlerFuncs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, _ bool) {
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, p)
			}})
			startInformer(t, inf)
			synctest.Wait()
			if err := inf.SetTransform(strip); !errors.Is(err, ErrStarted) {
				t.Fatalf("SetTransform after start: %v", err)
			}
			cached := inf.GetIndexer().List()
			if len(cached) != 1 || len(cached[0].Spec.Containers) != 0 || len(seen) != 1 || seen[0] != cached[0] {
				t.Fatal("the handler or the cache did not get the transformed object")
			}
		})
	})
}

func TestInformerLister(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		src.Add(testobj.Pod("a", "web", "", "app=web"))
		src.Add(testobj.Pod("a", "db", "", "app=db"))
		src.Add(testobj.Pod("b", "web", "", "app=web"))
		src.Add(testobj.Pod("", "node-pod", "", "app=web"))
		inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
		startInformer(t, inf)
		synctest.Wait()
		l := inf.Lister()
		web := labels.SelectorFromSet(labels.Set{"app": "web"})
		all, _ := l.List(nil)
		webs, _ := l.List(web)
		inA, _ := l.ByNamespace("a").List(labels.Everything())
		webInA, _ := l.ByNamespace("a").List(web)
		for _, tt := range []struct {
			name string
			got  []*corev1.Pod
			want string
		}{
			{"List(nil)", all, "a/db@3 a/web@2 b/web@4 node-pod@5"},
			{"List(app=web)", webs, "a/web@2 b/web@4 node-pod@5"},
			{"ByNamespace(a).List(everything)", inA, "a/db@3 a/web@2"},
			{"ByNamespace(a).List(app=web)", webInA, "a/web@2"},
		} {
			if got := podsString(tt.got); got != tt.want {
				t.Errorf("%s = %s, want %s", tt.name, got, tt.want)
			}
		}
		if p, err := l.ByNamespace("b").Get("web"); err != nil || p.Namespace != "b" {
			t.Errorf("Get(b/web) = %v, %v", p, err)
		}
		if p, err := l.Get("node-pod"); err != nil || p.Name != "node-pod" {
			t.Errorf("Get(node-pod) = %v, %v", p, err)
		}
		if _, err := l.ByNamespace("b").Get("db"); !apierrors.IsNotFound(err) {
			t.Errorf("Get of a missing object: %v, want NotFound", err)
		}
	})
}

func TestWaitForCacheSyncTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		src.SetListError(errListFailed)
		inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{Name: "pods"})
		var watchErrs []error
		var mu sync.Mutex
		inf.SetWatchErrorHandler(func(_ context.Context, err error) {
			mu.Lock()
			defer mu.Unlock()
			watchErrs = append(watchErrs, err)
		})
		startInformer(t, inf)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		err := WaitForCacheSync(ctx, inf, SyncFunc(func() bool { return true }))
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "pods") {
			t.Fatalf("WaitForCacheSync = %v, want a deadline error naming the informer", err)
		}
		mu.Lock()
		defer mu.Unlock()
		// Backoff from 800ms doubling: a handful of lists in 10s, not a hot loop.
		if n := len(watchErrs); n < 2 || n > 6 {
			t.Fatalf("%d list errors reported in 10s", n)
		}
		if !errors.Is(watchErrs[0], errListFailed) {
			t.Fatalf("reported %v", watchErrs[0])
		}
	})
}

func TestInformerAddIndexersWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		src.Add(testobj.Pod("ns", "a", "", "app=x"))
		inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
		stop := startInformer(t, inf)
		synctest.Wait()
		if err := inf.AddIndexers(Indexers[*corev1.Pod]{"app": appIndex}); err != nil {
			t.Fatal(err)
		}
		src.Add(testobj.Pod("ns", "b", "", "app=x"))
		synctest.Wait()
		if keys, _ := inf.GetIndexer().IndexKeys("app", "x"); !slices.Equal(keys, []string{"ns/a", "ns/b"}) {
			t.Fatalf("app index = %v", keys)
		}
		stop()
		if err := inf.AddIndexers(Indexers[*corev1.Pod]{"other": appIndex}); !errors.Is(err, ErrStopped) {
			t.Fatalf("AddIndexers after stop: %v", err)
		}
		if _, err := inf.AddEventHandler(&recorder{}); !errors.Is(err, ErrStopped) {
			t.Fatalf("AddEventHandler after stop: %v", err)
		}
		if err := inf.Run(t.Context()); !errors.Is(err, ErrStarted) {
			t.Fatalf("second Run: %v", err)
		}
	})
}

func TestNewSharedIndexInformerOptions(t *testing.T) {
	src := newFakeSource()
	for name, opts := range map[string]SharedIndexInformerOptions[*corev1.Pod]{
		"queue":          {Queue: 7},
		"negative":       {DefaultResyncPeriod: -time.Second},
		"reflector":      {Reflector: ReflectorOptions{ResyncPeriod: time.Second}},
		"nil index func": {Indexers: Indexers[*corev1.Pod]{"x": nil}},
	} {
		if _, err := NewSharedIndexInformer(src.Typed(), opts); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := NewSharedIndexInformer[*corev1.Pod](nil, SharedIndexInformerOptions[*corev1.Pod]{}); err == nil {
		t.Error("nil ListerWatcher: no error")
	}
}

// TestInformerSyncsEmptyList checks that an informer whose first list is
// empty syncs without waiting for an event (in DeltaFIFO mode the queue then
// has nothing to pop).
func TestInformerSyncsEmptyList(t *testing.T) {
	forEachQueue(t, func(t *testing.T, mode QueueMode) {
		synctest.Test(t, func(t *testing.T) {
			src := newFakeSource()
			inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{Queue: mode})
			reg, err := inf.AddEventHandler(&recorder{})
			if err != nil {
				t.Fatal(err)
			}
			startInformer(t, inf)
			synctest.Wait()
			if !inf.HasSynced() || !reg.HasSynced() {
				t.Fatalf("HasSynced after an empty list: informer %v, handler %v", inf.HasSynced(), reg.HasSynced())
			}
		})
	})
}

// TestCoalescerAccountsInitialAdds checks that every initial-list add the
// coalescer drops or replaces counts as handled, so the handler still syncs.
func TestCoalescerAccountsInitialAdds(t *testing.T) {
	l := newListener[*corev1.Pod](&recorder{}, HandlerOptions{Coalesce: true}, nil)
	a, b := testobj.Pod("ns", "a", "1"), testobj.Pod("ns", "b", "1")
	l.push([]notification[*corev1.Pod]{
		{kind: nAdd, key: "ns/a", new: a, initial: true},
		{kind: nAdd, key: "ns/a", new: a, initial: true}, // replaces the first
		{kind: nAdd, key: "ns/b", new: b, initial: true},
		{kind: nDelete, key: "ns/b", old: b}, // cancels the add of b
	})
	if n := l.initialPending.Load(); n != 1 {
		t.Fatalf("%d initial adds pending, want 1 (the second add of a)", n)
	}
	if n := l.depth.Load(); n != 1 {
		t.Fatalf("depth %d, want 1", n)
	}
}

// TestListenerSyncedImpliesNothingPending checks the order in which a
// listener accounts for a handled initial add: it stops counting as
// pending before the handler counts as synced, so that whoever waited for
// the sync reads Pending() == 0, not the add that has just returned.
func TestListenerSyncedImpliesNothingPending(t *testing.T) {
	for _, coalesce := range []bool{false, true} {
		t.Run(fmt.Sprint("coalesce=", coalesce), func(t *testing.T) {
			l := newListener[*corev1.Pod](&recorder{}, HandlerOptions{Coalesce: coalesce}, nil)
			l.push([]notification[*corev1.Pod]{
				{kind: nAdd, key: "ns/a", new: testobj.Pod("ns", "a", "1"), initial: true},
				{kind: nAdd, key: "ns/b", new: testobj.Pod("ns", "b", "2"), initial: true},
			})
			l.informerHasSynced()
			batch, _, _ := l.take()
			if batch == nil || batch.Len() != 2 {
				t.Fatalf("batch %v, want the two initial adds", batch)
			}
			for i := range batch.Len() {
				l.call(t.Context(), batch.At(i))
				reg := &Registration[*corev1.Pod]{l: l}
				if synced, pending := reg.HasSynced(), reg.Pending(); synced && pending != 0 {
					t.Fatalf("after call %d: synced with %d notifications pending", i, pending)
				}
			}
			if reg := (&Registration[*corev1.Pod]{l: l}); !reg.HasSynced() || reg.Pending() != 0 {
				t.Fatalf("after the batch: synced %v, pending %d", reg.HasSynced(), reg.Pending())
			}
		})
	}
}
