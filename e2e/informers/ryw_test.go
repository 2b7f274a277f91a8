package informers

import (
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/watch"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/typedkube/informer"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// slowWatch delivers the events of a watch each after a delay, as a slow network or a busy
// server would: the informer's cache lags behind the writes.
type slowWatch struct {
	w    watch.Interface
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func slowed(w watch.Interface, delay time.Duration) watch.Interface {
	s := &slowWatch{w: w, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(s.out)
		for ev := range w.ResultChan() {
			time.Sleep(delay)
			select {
			case s.out <- ev:
			case <-s.stop:
				return
			}
		}
	}()
	return s
}

func (s *slowWatch) ResultChan() <-chan watch.Event { return s.out }
func (s *slowWatch) Stop() {
	s.once.Do(func() {
		close(s.stop)
		s.w.Stop()
	})
}

// TestReadYourWrites runs a controller that gives each of 1,000 parent ConfigMaps one child
// ConfigMap, named by the server (generateName), creating it when its cache shows none, and that
// reconciles every parent twice in a row, as a requeue does. Its informer's watch is slowed (each
// event delivered 2 ms late). Without read-your-writes the second reconcile often reads a cache
// that lacks the child it just created, and creates another; with it (Lister.AtLeast the
// resourceVersion of its last create) it creates none. The test counts the children on the
// server after each run, and logs the duplicates made without waiting, what waiting cost, and
// the watch's lag (from a create's response to its object in the cache) to compare it with.
func TestReadYourWrites(t *testing.T) {
	verifyNoGoroutinesLeft(t)
	ctx := testContext(t, 3*time.Minute)
	c := adminClients(t)
	ns := newNamespace(t, c)
	const parents = 1000

	lw := informer.ListWatchFromClient[corev1.ConfigMap](c.Kube.CoreV1().ConfigMaps(ns), nil)
	cms, err := informer.NewSharedIndexInformer[*corev1.ConfigMap](informer.ListWatchFuncs[*corev1.ConfigMap]{
		ListFunc: lw.List,
		WatchFunc: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := lw.Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			return slowed(w, 2*time.Millisecond), nil
		},
	}, informer.SharedIndexInformerOptions[*corev1.ConfigMap]{Resource: corev1.Resource("configmaps")})
	if err != nil {
		t.Fatal(err)
	}
	var seenMu sync.Mutex
	seen := map[string]time.Time{} // when each child reached the cache
	if _, err := cms.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.ConfigMap]{AddFunc: func(cm *corev1.ConfigMap, _ bool) {
		seenMu.Lock()
		seen[cm.Name] = time.Now()
		seenMu.Unlock()
	}}); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cms.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if err := informer.WaitForCacheSync(ctx, cms); err != nil {
		t.Fatal(err)
	}
	created := map[string]time.Time{} // when each child's create returned

	run := func(round string, wait bool) (duplicates int, waits []time.Duration) {
		var lastRV string
		reconcile := func(parent string) {
			lister := cms.Lister()
			if wait && lastRV != "" {
				start := time.Now()
				l, err := lister.AtLeast(ctx, lastRV)
				if err != nil {
					t.Fatal(err)
				}
				waits = append(waits, time.Since(start))
				lister = l
			}
			sel := labels.SelectorFromSet(labels.Set{"round": round, "parent": parent})
			children, err := lister.ByNamespace(ns).List(sel)
			if err != nil {
				t.Fatal(err)
			}
			if len(children) > 0 {
				return
			}
			child, err := c.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				GenerateName: parent + "-child-",
				Labels:       map[string]string{"round": round, "parent": parent},
			}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			created[child.Name] = time.Now()
			lastRV = child.ResourceVersion
		}
		for i := range parents {
			parent := fmt.Sprintf("p%03d", i)
			reconcile(parent)
			reconcile(parent) // requeued at once
		}
		list, err := c.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "round=" + round})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items) - parents, waits
	}

	without, _ := run("without", false)
	with, waits := run("with", true)
	var lags []time.Duration
	seenMu.Lock()
	for name, at := range created {
		if s, ok := seen[name]; ok {
			lags = append(lags, s.Sub(at))
		}
	}
	seenMu.Unlock()
	pct := func(d []time.Duration, q int) time.Duration {
		slices.Sort(d)
		return d[(len(d)-1)*q/100].Round(time.Microsecond)
	}
	t.Logf("%d parents reconciled twice each, watch slowed by 2 ms per event: %d duplicate children without read-your-writes, %d with it; the wait took p50 %v, p99 %v, max %v; the watch's lag (create response to cache) p50 %v, p99 %v",
		parents, without, with, pct(waits, 50), pct(waits, 99), pct(waits, 100), pct(lags, 50), pct(lags, 99))
	if with != 0 {
		t.Errorf("with read-your-writes: %d duplicate children, want 0", with)
	}
}
