package informer_test

import (
	"context"
	"sync"
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

// observation is one call of a recordingMetrics.
type observation struct {
	method string // "list", "watch" or "processing"
	n      int    // items, events or changes
	d      time.Duration
	err    error
}

// recordingMetrics is an informer.Metrics that writes down every call.
type recordingMetrics struct {
	mu  sync.Mutex
	obs []observation
}

func (m *recordingMetrics) add(o observation) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.obs = append(m.obs, o)
}

func (m *recordingMetrics) ObserveList(items int, d time.Duration, err error) {
	m.add(observation{"list", items, d, err})
}

func (m *recordingMetrics) ObserveWatch(events int, d time.Duration, err error) {
	m.add(observation{"watch", events, d, err})
}

func (m *recordingMetrics) ObserveProcessing(changes int, d time.Duration) {
	m.add(observation{"processing", changes, d, nil})
}

// calls returns the observations of method ("": any) that ok accepts
// (nil: all).
func (m *recordingMetrics) calls(method string, ok func(observation) bool) []observation {
	m.mu.Lock()
	defer m.mu.Unlock()
	var got []observation
	for _, o := range m.obs {
		if (method == "" || o.method == method) && (ok == nil || ok(o)) {
			got = append(got, o)
		}
	}
	return got
}

// waitFor polls m until method has a call that ok accepts.
func (m *recordingMetrics) waitFor(t *testing.T, what, method string, ok func(observation) bool) observation {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got := m.calls(method, ok); len(got) > 0 {
			return got[len(got)-1]
		}
		if time.Now().After(deadline) {
			m.mu.Lock()
			defer m.mu.Unlock()
			t.Fatalf("waited for %s; observations: %v", what, m.obs)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitIndexed waits until inf's cache holds n objects, or fails after 10s.
func waitIndexed(t *testing.T, inf *informer.SharedIndexInformer[*corev1.Pod], n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); inf.GetIndexer().Len() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the cache holds %d objects after 10s, want %d", inf.GetIndexer().Len(), n)
		}
	}
}

// failOnceSource is a Source whose next watch fails once with the error
// set in next, where Source.SetWatchError fails every watch until it is
// cleared: an informer may relist more than once before a test clears it.
type failOnceSource struct {
	*informertest.Source[*corev1.Pod]
	next atomic.Pointer[error]
}

func (s *failOnceSource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if err := s.next.Swap(nil); err != nil {
		return nil, *err
	}
	return s.Source.Watch(ctx, opts)
}

// Metrics is told of every list (with its items and the 410 that makes a
// relist), every watch that ends (with its events) and every batch of
// processing, in both queue modes and with and without watch-list.
func TestMetrics(t *testing.T) {
	for _, tc := range []struct {
		name      string
		queue     informer.QueueMode
		watchList informer.WatchListMode
	}{
		{"list/in-order", informer.QueueInOrder, informer.WatchListOff},
		{"watch-list/in-order", informer.QueueInOrder, informer.WatchListOn},
		{"list/delta-fifo", informer.QueueDeltaFIFO, informer.WatchListOff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := func(name string) *corev1.Pod {
				return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name}}
			}
			src := &failOnceSource{Source: informertest.NewSource(pod("p1"), pod("p2"), pod("p3"))}
			m := &recordingMetrics{}
			inf, err := informer.NewSharedIndexInformer[*corev1.Pod](src, informer.SharedIndexInformerOptions[*corev1.Pod]{
				Name:    "pods",
				Queue:   tc.queue,
				Metrics: m,
				Reflector: informer.ReflectorOptions{
					WatchList:         tc.watchList,
					Backoff:           informer.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond},
					WatchErrorHandler: func(context.Context, error) {},
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { defer close(done); _ = inf.Run(ctx) }()
			defer func() { cancel(); <-done }()
			if err := informer.WaitForCacheSync(ctx, inf); err != nil {
				t.Fatal(err)
			}

			// The first list, with its three objects.
			lists := m.calls("list", nil)
			if len(lists) != 1 || lists[0].n != 3 || lists[0].err != nil || lists[0].d < 0 {
				t.Errorf("after the sync, lists %+v, want one of 3 items without error", lists)
			}
			m.waitFor(t, "the processing of the list", "processing", func(o observation) bool { return o.n >= 1 && o.d >= 0 })

			// Two changes, then a dropped connection: the watch ends without
			// error, having brought both.
			for _, name := range []string{"p4", "p5"} {
				if _, err := src.Add(pod(name)); err != nil {
					t.Fatal(err)
				}
			}
			waitIndexed(t, inf, 5)
			src.DropWatches()
			m.waitFor(t, "the dropped watch", "watch", func(o observation) bool { return o.err == nil && o.n >= 2 })
			changes := 0
			for _, o := range m.calls("processing", nil) {
				changes += o.n
			}
			if changes < 3 { // the list (one change, or three Deltas) and the two adds
				t.Errorf("%d changes processed, want at least 3", changes)
			}

			// A 410: the informer is told of the expired resource version
			// and lists again, once, successfully. The watch it drops has
			// brought an event first (p6): one closed at once with none is a
			// "very short watch", which is an error and a relist of its own.
			if _, err := src.Add(pod("p6")); err != nil {
				t.Fatal(err)
			}
			waitIndexed(t, inf, 6)
			var expiredErr error = apierrors.NewResourceExpired("too old")
			src.next.Store(&expiredErr)
			src.DropWatches()
			expired := func(o observation) bool { return apierrors.IsResourceExpired(o.err) || apierrors.IsGone(o.err) }
			m.waitFor(t, "a 410", "", expired)
			m.waitFor(t, "the relist", "list", func(o observation) bool { return o.err == nil && o.n == 6 })
			if got := m.calls("list", func(o observation) bool { return o.err == nil }); len(got) != 2 {
				t.Errorf("successful lists %+v, want 2; watch errors %+v", got, m.calls("watch", func(o observation) bool { return o.err != nil }))
			}
		})
	}
}
