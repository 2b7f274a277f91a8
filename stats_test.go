package informer_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
)

// waitStats polls inf's Stats until ok accepts them.
func waitStats(t *testing.T, inf *informer.SharedIndexInformer[*corev1.Pod], what string, ok func(informer.Stats) bool) informer.Stats {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := inf.Stats()
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited for %s: stats %+v", what, st)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Stats counts lists, relists, watches, errors and objects the informer
// could not use, and reports each handler's backlog and lag.
func TestStats(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name}}
	}
	src := informertest.NewSource(pod("p1"), pod("p2"), pod("p3"))
	inf, err := informer.NewSharedIndexInformer[*corev1.Pod](src, informer.SharedIndexInformerOptions[*corev1.Pod]{
		Name: "pods",
		Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			if p.Name == "bad" {
				return nil, errors.New("refused")
			}
			return p, nil
		},
		Reflector: informer.ReflectorOptions{
			Backoff:           informer.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond},
			WatchErrorHandler: func(context.Context, error) {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	slow, err := inf.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, _ bool) {
			if p.Name == "slow" {
				<-release
			}
		},
	}, informer.HandlerOptions{Name: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{}, informer.HandlerOptions{Name: "fast"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = inf.Run(ctx) }()
	defer func() { unblock(); cancel(); <-done }()
	if err := informer.WaitForCacheSync(ctx, inf, slow); err != nil {
		t.Fatal(err)
	}

	st := inf.Stats()
	if st.Name != "pods" || !st.Synced || st.Objects != 3 || st.Lists != 1 || st.Relists != 0 || st.ListErrors != 0 ||
		len(st.Handlers) != 2 || st.Handlers[0].Name != "slow" || st.Handlers[1].Name != "fast" || st.ResourceVersion == "" {
		t.Errorf("after the sync: %+v", st)
	}

	// An object the transform refuses is counted, and skipped.
	if _, err := src.Add(pod("bad")); err != nil {
		t.Fatal(err)
	}
	waitStats(t, inf, "a decode error", func(st informer.Stats) bool { return st.DecodeErrors == 1 && st.Errors >= 1 })

	// A handler that blocks builds a backlog whose oldest entry ages.
	for _, name := range []string{"slow", "q1", "q2", "q3"} {
		if _, err := src.Add(pod(name)); err != nil {
			t.Fatal(err)
		}
	}
	st = waitStats(t, inf, "a backlog", func(st informer.Stats) bool {
		return st.Handlers[0].Pending >= 3 && st.Handlers[0].Lag > 0
	})
	if st.Handlers[1].Pending != 0 && st.Handlers[1].Lag == 0 {
		t.Errorf("the fast handler has %d pending and no lag", st.Handlers[1].Pending)
	}
	lag := st.Handlers[0].Lag
	st = waitStats(t, inf, "the lag to grow", func(st informer.Stats) bool { return st.Handlers[0].Lag > lag })
	unblock()
	waitStats(t, inf, "the backlog to drain", func(st informer.Stats) bool {
		return st.Handlers[0].Pending == 0 && st.Handlers[0].Lag == 0
	})

	// A 410 makes the informer list again.
	src.SetWatchError(apierrors.NewResourceExpired("too old"))
	src.DropWatches()
	st = waitStats(t, inf, "a relist", func(st informer.Stats) bool { return st.Relists >= 1 && st.Lists == st.Relists+1 })
	src.SetWatchError(nil)
	if err := inf.WaitForResourceVersion(ctx, src.ResourceVersion()); err != nil {
		t.Fatal(err)
	}
	st = waitStats(t, inf, "the queue to empty", func(st informer.Stats) bool { return st.QueueDepth == 0 })
	if got, want := st.Objects, len(src.Objects())-1; got != want {
		t.Errorf("Objects %d, want %d (the refused one is not cached)", got, want)
	}
}
