package prometheus_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedkube/informer"
	informerprom "github.com/typedkube/informer/examples/prometheus"
	"github.com/typedkube/informer/informertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
}

// runPods runs an informer of two Pods, with one handler, until the test
// ends.
func runPods(t *testing.T) *informer.SharedIndexInformer[*corev1.Pod] {
	t.Helper()
	src := informertest.NewSource(pod("web-1"), pod("web-2"))
	inf, err := informer.NewSharedIndexInformer[*corev1.Pod](src, informer.SharedIndexInformerOptions[*corev1.Pod]{Name: "pods"})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := inf.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{}, informer.HandlerOptions{Name: "reconciler"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = inf.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if err := informer.WaitForCacheSync(ctx, inf, reg); err != nil {
		t.Fatal(err)
	}
	return inf
}

// The collector exports an informer's Stats under the documented names.
func TestCollector(t *testing.T) {
	inf := runPods(t)
	c := informerprom.NewCollector(inf)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	bytes := inf.Stats().StoreBytes // nothing changes the cache now
	if bytes <= 0 {
		t.Fatalf("Stats().StoreBytes = %d for two cached Pods, want more than 0", bytes)
	}
	want := `
# HELP informer_objects Objects in the cache.
# TYPE informer_objects gauge
informer_objects{name="pods"} 2
# HELP informer_store_bytes Heap bytes the cache holds, estimated: its objects, their keys and indexes, and what they share, once.
# TYPE informer_store_bytes gauge
informer_store_bytes{name="pods"} ` + strconv.FormatInt(bytes, 10) + `
# HELP informer_synced 1 once the informer has synced, 0 before.
# TYPE informer_synced gauge
informer_synced{name="pods"} 1
# HELP informer_lists_total LISTs and watch-list streams.
# TYPE informer_lists_total counter
informer_lists_total{name="pods"} 1
# HELP informer_relists_total Lists after the first, as after a 410 Gone.
# TYPE informer_relists_total counter
informer_relists_total{name="pods"} 0
# HELP informer_decode_errors_total Objects the informer could not use: undecodable, of the wrong type, or refused by a transform.
# TYPE informer_decode_errors_total counter
informer_decode_errors_total{name="pods"} 0
# HELP informer_shared_maps_written_total Maps cached objects share that were found written to, which objects handed out must never be: a bug in the program (see informer.Stats.SharedMapsWritten).
# TYPE informer_shared_maps_written_total counter
informer_shared_maps_written_total{name="pods"} 0
# HELP informer_handler_pending Notifications queued for a handler, not yet delivered.
# TYPE informer_handler_pending gauge
informer_handler_pending{handler="reconciler",name="pods"} 0
# HELP informer_handler_panics_total Calls of a handler that panicked.
# TYPE informer_handler_panics_total counter
informer_handler_panics_total{handler="reconciler",name="pods"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"informer_objects", "informer_store_bytes", "informer_synced", "informer_lists_total", "informer_relists_total",
		"informer_decode_errors_total", "informer_shared_maps_written_total", "informer_handler_pending", "informer_handler_panics_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(c); n != 15 {
		t.Errorf("%d metrics, want 15 (12 of the informer, 3 of its handler)", n)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(""), "informer_queued_items"); err == nil {
		t.Error("informer_queued_items is missing")
	}
	c.Remove(inf)
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("%d metrics after Remove, want 0", n)
	}
}

// The histograms are fed by the Metrics the Collector makes, and Remove
// drops them with the informer.
func TestCollectorMetrics(t *testing.T) {
	c := informerprom.NewCollector()
	src := informertest.NewSource(pod("web-1"), pod("web-2"))
	inf, err := informer.NewSharedIndexInformer[*corev1.Pod](src, informer.SharedIndexInformerOptions[*corev1.Pod]{
		Name:    "pods",
		Metrics: c.Metrics("pods"),
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Add(inf)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = inf.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := informer.WaitForCacheSync(ctx, inf); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Add(pod("web-3")); err != nil {
		t.Fatal(err)
	}
	if err := inf.WaitForResourceVersion(ctx, src.ResourceVersion()); err != nil {
		t.Fatal(err)
	}
	src.DropWatches() // ends a watch: observed

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	count := func(name string) uint64 {
		t.Helper()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == name {
				for _, m := range f.GetMetric() {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
		return 0
	}
	deadline := time.Now().Add(10 * time.Second)
	for count("informer_watch_duration_seconds") == 0 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	if n := count("informer_list_duration_seconds"); n != 1 {
		t.Errorf("informer_list_duration_seconds: %d lists, want 1", n)
	}
	if n := count("informer_watch_duration_seconds"); n < 1 {
		t.Errorf("informer_watch_duration_seconds: %d watches, want at least 1", n)
	}
	if n := count("informer_processing_latency_seconds"); n < 2 { // the list, the add
		t.Errorf("informer_processing_latency_seconds: %d batches, want at least 2", n)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
	c.Remove(inf)
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("%d metrics after Remove, want 0", n)
	}
}

// TestCollectorRepeatedNames: two handlers with the default name (their
// type) and two informers of one name each get a series of their own,
// the later ones with a suffix; the scrape used to fail on the duplicates.
func TestCollectorRepeatedNames(t *testing.T) {
	var infs []*informer.SharedIndexInformer[*corev1.Pod]
	for range 2 {
		inf, err := informer.NewSharedIndexInformer[*corev1.Pod](informertest.NewSource(pod("web-1")), informer.SharedIndexInformerOptions[*corev1.Pod]{Name: "pods"})
		if err != nil {
			t.Fatal(err)
		}
		infs = append(infs, inf)
	}
	for range 2 {
		if _, err := infs[0].AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{}); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(informerprom.NewCollector(infs[0], infs[1]))
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("scrape failed: %v", err)
	}
	got := map[string]bool{}
	for _, f := range families {
		if f.GetName() != "informer_handler_pending" && f.GetName() != "informer_objects" {
			continue
		}
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += " " + l.GetName() + "=" + l.GetValue()
			}
			got[key] = true
		}
	}
	handler := "informer.ResourceEventHandlerFuncs[*k8s.io/api/core/v1.Pod]"
	for _, want := range []string{
		"informer_objects name=pods", "informer_objects name=pods#2",
		"informer_handler_pending handler=" + handler + " name=pods",
		"informer_handler_pending handler=" + handler + "#2 name=pods",
	} {
		if !got[want] {
			t.Errorf("no series %q; got %v", want, got)
		}
	}
}
