package informer_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
)

// expireFirstStream answers the first watch-list request with a stream
// whose first event is a 410 ERROR.
type expireFirstStream struct {
	*informertest.Source[*corev1.Pod]
	done atomic.Bool
}

func (e *expireFirstStream) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	if o.SendInitialEvents != nil && *o.SendInitialEvents && e.done.CompareAndSwap(false, true) {
		w := watch.NewFakeWithChanSize(1, false)
		st := apierrors.NewResourceExpired("too old").Status()
		w.Error(&st)
		return w, nil
	}
	return e.Source.Watch(ctx, o)
}

func runCounted(t *testing.T, lw informer.ListerWatcher[*corev1.Pod], o informer.SharedIndexInformerOptions[*corev1.Pod]) *informer.SharedIndexInformer[*corev1.Pod] {
	t.Helper()
	inf, err := informer.NewSharedIndexInformer(lw, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = inf.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := informer.WaitForCacheSync(wctx, inf); err != nil {
		t.Fatal(err)
	}
	return inf
}

// TestListErrorsCountsFailedStream: a watch-list stream that fails after
// its request was accepted (a 410 ERROR event) is a failed list in Stats,
// as Metrics.ObserveList sees it (ListErrors used to stay 0).
func TestListErrorsCountsFailedStream(t *testing.T) {
	m := &recordingMetrics{}
	inf := runCounted(t, &expireFirstStream{Source: informertest.NewSource(pod("default", "a", ""))},
		informer.SharedIndexInformerOptions[*corev1.Pod]{Name: "pods", Metrics: m})
	st := inf.Stats()
	failed := len(m.calls("list", func(o observation) bool { return o.err != nil }))
	if st.ListErrors != 1 || failed != 1 {
		t.Errorf("ListErrors = %d, ObserveList saw %d failed lists; want 1 and 1 (Lists %d, Errors %d)", st.ListErrors, failed, st.Lists, st.Errors)
	}
}

// TestObserveWatchLeavesOutRefused: ObserveWatch's count leaves out the
// events whose object the transform refused, as its contract says (it
// counted them).
func TestObserveWatchLeavesOutRefused(t *testing.T) {
	src := informertest.NewSource(pod("default", "a", ""))
	m := &recordingMetrics{}
	inf := runCounted(t, src, informer.SharedIndexInformerOptions[*corev1.Pod]{Name: "pods", Metrics: m,
		Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			if p.Name == "bad" {
				return nil, errors.New("refused")
			}
			return p, nil
		},
		Reflector: informer.ReflectorOptions{WatchList: informer.WatchListOff}})
	if _, err := src.Add(pod("default", "bad", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Add(pod("default", "good", "")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := inf.WaitForResourceVersion(ctx, src.ResourceVersion()); err != nil {
		t.Fatal(err)
	}
	src.DropWatches()
	if w := m.waitFor(t, "the dropped watch's observation", "watch", func(observation) bool { return true }); w.n != 1 {
		t.Errorf("ObserveWatch events = %d, want 1: one of the two ADDED was refused (DecodeErrors %d)", w.n, inf.Stats().DecodeErrors)
	}
}
