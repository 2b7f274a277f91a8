package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// faultKind is a kind of fault the suite injects.
type faultKind string

const (
	restart  faultKind = "restart"  // the API server restarts on the same etcd
	compact  faultKind = "compact"  // etcd is compacted, then watches dropped: 410 Gone on re-watch
	drop     faultKind = "drop"     // every client connection is cut
	throttle faultKind = "throttle" // the informers' identity gets 429 Too Many Requests
)

// plan is how many faults of each kind a run injects (with -short, a tenth, at least one).
var plan = []struct {
	kind  faultKind
	count int
}{{restart, 10}, {compact, 20}, {drop, 30}, {throttle, 15}}

const (
	// convergeWithin bounds the time from the end of a fault until every cache equals the server.
	convergeWithin = 60 * time.Second
	// writeEvery paces each writer.
	writeEvery = 20 * time.Millisecond
	// writesAround is how many writes (of the three writers together) are made before a fault is
	// injected, and again once it is over, before the writers stop for the convergence check.
	writesAround = 30
)

var (
	podsGVR         = corev1.SchemeGroupVersion.WithResource("pods")
	configMapsGVR   = corev1.SchemeGroupVersion.WithResource("configmaps")
	podTemplatesGVR = corev1.SchemeGroupVersion.WithResource("podtemplates")
)

// TestFaults runs twelve informers (three with a compact store), all as the throttled identity
// through the harness's proxy, while writers change their objects, and injects the planned faults in a random order
// (the seed is logged). Writes go on during each fault. After each, every cache and every
// handler's rebuilt state must equal a fresh LIST within convergeWithin, and every handler must
// have seen a consistent sequence of notifications.
//
// The informers back off from 100 ms to at most 2 s between failed tries, and start again from
// 100 ms after 10 s without failure, where client-go's defaults (800 ms to 30 s, reset after two
// quiet minutes) would add up to a minute to each fault when faults come every few seconds; the
// defaults are checked by TestUnprivileged in ../informers.
func TestFaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	// The writers and the checks talk to the API server directly, so that DropConnections does
	// not cut them, as the admin identity, which is never throttled.
	direct := srv.AdminConfig()
	direct.Host = srv.APIServerURL()
	admin, err := kubetest.NewClients(direct)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ns, err := kubetest.NewNamespace(ctx, admin.Kube, "faults")
	if err != nil {
		t.Fatal(err)
	}

	var log kubetest.RequestLog
	thr, err := kubetest.NewClients(log.Wrap(srv.ThrottledConfig()))
	if err != nil {
		t.Fatal(err)
	}
	defer thr.Close()
	backoff := informer.Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second, ResetAfter: 10 * time.Second}
	reflector := func(mode informer.WatchListMode) informer.ReflectorOptions {
		return informer.ReflectorOptions{Backoff: backoff, WatchList: mode}
	}
	var subjects []*subject
	add := func(s *subject, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		subjects = append(subjects, s)
	}
	add(newSubject("pods", podsGVR,
		informer.ListWatchFromClient[corev1.Pod](thr.Kube.CoreV1().Pods(ns), nil),
		informer.SharedIndexInformerOptions[*corev1.Pod]{Reflector: reflector(informer.WatchListAuto)}))
	add(newSubject("configmaps-deltafifo-list", configMapsGVR,
		informer.ListWatchFromClient[corev1.ConfigMap](thr.Kube.CoreV1().ConfigMaps(ns), nil),
		informer.SharedIndexInformerOptions[*corev1.ConfigMap]{Queue: informer.QueueDeltaFIFO, Reflector: reflector(informer.WatchListOff)}))
	add(newSubject("podtemplates", podTemplatesGVR,
		informer.ListWatchFromClient[corev1.PodTemplate](thr.Kube.CoreV1().PodTemplates(ns), nil),
		informer.SharedIndexInformerOptions[*corev1.PodTemplate]{Reflector: reflector(informer.WatchListAuto)}))
	add(newSubject("pods-metadata", podsGVR,
		informer.ListWatchFromMetadata(thr.Metadata.Resource(podsGVR).Namespace(ns), nil),
		informer.SharedIndexInformerOptions[*metav1.PartialObjectMetadata]{Reflector: reflector(informer.WatchListAuto)}))
	add(newSubject("configmaps-unstructured", configMapsGVR,
		informer.ListWatchFromDynamic(thr.Dynamic.Resource(configMapsGVR).Namespace(ns), nil),
		informer.SharedIndexInformerOptions[*unstructured.Unstructured]{Reflector: reflector(informer.WatchListAuto)}))
	// And ConfigMaps from a Factory: protobuf, through the factory's own REST client.
	factoryErrs := &kubetest.WatchErrors{}
	f, err := informer.NewFactory(thr.Config, informer.FactoryOptions{
		Namespace: ns,
		Informer: informer.InformerOptions{Reflector: informer.ReflectorOptions{
			Backoff: backoff, WatchErrorHandler: factoryErrs.Handle,
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	factoryCMs, err := informer.For[*corev1.ConfigMap](f)
	if err != nil {
		t.Fatal(err)
	}
	add(subjectOf("configmaps-factory", configMapsGVR, factoryCMs, factoryRunner{f}, factoryErrs))
	// Pods projected from protobuf through the same factory's watch-list stream (the factory
	// runs it, so its runner is a no-op here).
	projPods, err := informer.ForProjection[podSlim, corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	add(subjectOf("pods-projection", podsGVR, projPods, idleRunner{}, factoryErrs))
	// And package wire's decoding of full objects and of projections, listing and watching, where
	// a relist reuses the cached objects that did not change.
	wireErrs := &kubetest.WatchErrors{}
	wf, err := informer.NewFactory(thr.Config, informer.FactoryOptions{
		Namespace: ns,
		Decoding:  informer.DecodeWire,
		Informer: informer.InformerOptions{Reflector: informer.ReflectorOptions{
			Backoff: backoff, WatchErrorHandler: wireErrs.Handle, WatchList: informer.WatchListOff,
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	wirePods, err := informer.For[*corev1.Pod](wf)
	if err != nil {
		t.Fatal(err)
	}
	add(subjectOf("pods-wire-list", podsGVR, wirePods, factoryRunner{wf}, wireErrs))
	projCMs, err := informer.ForProjection[configMapSlim, corev1.ConfigMap](wf)
	if err != nil {
		t.Fatal(err)
	}
	add(subjectOf("configmaps-projection-list", configMapsGVR, projCMs, idleRunner{}, wireErrs))
	// And compact stores: Pods streamed as records of their protobuf by a Factory (a watch-list
	// stream's initial events kept undecoded, streams asked for again reusing the records of
	// unchanged objects), unstructured ConfigMaps encoded in JSON,
	// and PodTemplates of a client's ListerWatcher in a DeltaFIFO, encoded in protobuf.
	compactErrs := &kubetest.WatchErrors{}
	cf, err := informer.NewFactory(thr.Config, informer.FactoryOptions{
		Namespace: ns,
		Informer: informer.InformerOptions{Compact: true, Reflector: informer.ReflectorOptions{
			Backoff: backoff, WatchErrorHandler: compactErrs.Handle,
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	compactPods, err := informer.For[*corev1.Pod](cf)
	if err != nil {
		t.Fatal(err)
	}
	add(subjectOf("pods-compact", podsGVR, compactPods, factoryRunner{cf}, compactErrs))
	compactCMs, err := informer.ForUnstructured(cf, configMapsGVR)
	if err != nil {
		t.Fatal(err)
	}
	add(subjectOf("configmaps-compact-unstructured", configMapsGVR, compactCMs, idleRunner{}, compactErrs))
	add(newSubject("podtemplates-compact-deltafifo", podTemplatesGVR,
		informer.ListWatchFromClient[corev1.PodTemplate](thr.Kube.CoreV1().PodTemplates(ns), nil),
		informer.SharedIndexInformerOptions[*corev1.PodTemplate]{Compact: true, Queue: informer.QueueDeltaFIFO, Reflector: reflector(informer.WatchListAuto)}))
	var caches []kubetest.Cache
	for _, s := range subjects {
		caches = append(caches, s.caches...)
	}

	writers := []*writer{
		newWriter(admin.Dynamic, podsGVR, ns, podObject, seed+1),
		newWriter(admin.Dynamic, configMapsGVR, ns, configMapObject, seed+2),
		newWriter(admin.Dynamic, podTemplatesGVR, ns, podTemplateObject, seed+3),
	}
	totalWrites := func() (n int) {
		for _, w := range writers {
			writes, _ := w.counts()
			n += writes
		}
		return n
	}

	// Objects exist before the informers start, so that their initial lists are not empty.
	// (An informer in QueueDeltaFIFO mode whose first list is empty never syncs: see
	// TestInformerSyncsEmptyList in the report of issue 5.)
	for _, w := range writers {
		for range w.min {
			if err := w.writeOne(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	stopSubjects, err := startSubjects(ctx, subjects, 60*time.Second)
	defer func() {
		if err := stopSubjects(); err != nil {
			t.Error(err)
		}
	}()
	if err != nil {
		t.Fatal(err)
	}

	var schedule []faultKind
	for _, p := range plan {
		n := p.count
		if testing.Short() {
			n = max(1, n/10)
		}
		for range n {
			schedule = append(schedule, p.kind)
		}
	}
	rng.Shuffle(len(schedule), func(i, j int) { schedule[i], schedule[j] = schedule[j], schedule[i] })

	anchor := func(ctx context.Context) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "anchor"}, Data: map[string]string{"at": time.Now().String()}}
		_, err := admin.Kube.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			_, err = admin.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		}
		return err
	}
	fl := &faulter{log: &log, subjects: subjects, anchor: anchor, podTemplates: writers[2]}
	stats := map[faultKind]*faultStats{}
	lister := kubetest.MetadataLister(admin.Metadata, ns)
	began := time.Now()
	for i, kind := range schedule {
		wctx, stopWriters := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for _, w := range writers {
			wg.Go(func() { w.run(wctx, writeEvery) })
		}
		// Writes are flowing before the fault, go on during it, and for a moment after it.
		if err := kubetest.WaitFor(ctx, 30*time.Second, "writes before the fault", atLeast(totalWrites, totalWrites()+writesAround)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		effect, err := fl.inject(ctx, kind)
		if err != nil {
			stopWriters()
			wg.Wait()
			t.Fatalf("fault %d (%s): %v", i+1, kind, err)
		}
		faultTime := time.Since(start)
		err = kubetest.WaitFor(ctx, 30*time.Second, "writes after the fault", atLeast(totalWrites, totalWrites()+writesAround))
		stopWriters()
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		took, err := kubetest.WaitConverged(ctx, convergeWithin, lister, caches...)
		if err != nil {
			t.Fatalf("fault %d (%s, %s): %v", i+1, kind, effect, err)
		}
		for _, s := range subjects {
			if err := s.check(); err != nil {
				t.Fatalf("fault %d (%s): handler of %s: %v", i+1, kind, s.name, err)
			}
		}
		st := stats[kind]
		if st == nil {
			st = &faultStats{}
			stats[kind] = st
		}
		st.add(faultTime, took)
		t.Logf("fault %2d/%d %-8s %-60s fault %6v, converged %6v after it", i+1, len(schedule), kind, effect,
			faultTime.Round(time.Millisecond), took.Round(time.Millisecond))
	}

	var report strings.Builder
	total := 0
	fmt.Fprintf(&report, "%d faults in %v:\n", len(schedule), time.Since(began).Round(time.Second))
	fmt.Fprintf(&report, "  %-9s %5s %22s %28s\n", "kind", "count", "fault (median / max)", "converged (median / max)")
	for _, p := range plan {
		st := stats[p.kind]
		if st == nil {
			continue
		}
		total += len(st.converge)
		fmt.Fprintf(&report, "  %-9s %5d %22s %28s\n", p.kind, len(st.converge), st.faults.String(), st.converge.String())
	}
	for _, w := range writers {
		writes, failures := w.counts()
		fmt.Fprintf(&report, "  writer %-12s %5d writes, %4d failed during faults\n", w.gvr.Resource, writes, failures)
	}
	for _, s := range subjects {
		c := s.counts()
		fmt.Fprintf(&report, "  informer %-26s adds %5d updates %5d deletes %5d; watch errors %4d (410: %d, 429: %d)\n",
			s.name, c[kubetest.Add], c[kubetest.Update], c[kubetest.Delete], s.errs.Len(),
			s.errs.Count(isExpired), s.errs.Count(apierrors.IsTooManyRequests))
	}
	t.Log(report.String())
	// E2E_FAULT_REPORT names a file to write the report to, for CI to show (go test prints a
	// passing test's log only with -v).
	if path := os.Getenv("E2E_FAULT_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report.String()), 0o644); err != nil {
			t.Errorf("write the fault report: %v", err)
		}
	}
	if !testing.Short() && total < 50 {
		t.Errorf("%d faults, want at least 50", total)
	}
}

func isExpired(err error) bool { return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) }

// durations collects durations for a median and a maximum.
type durations []time.Duration

func (d durations) String() string {
	if len(d) == 0 {
		return "-"
	}
	s := slices.Sorted(slices.Values(d))
	return fmt.Sprintf("%v / %v", s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}

// faultStats are the timings of the faults of one kind.
type faultStats struct {
	faults   durations // from the injection until the fault was over
	converge durations // from then until every cache equalled the server
}

func (s *faultStats) add(fault, converge time.Duration) {
	s.faults = append(s.faults, fault)
	s.converge = append(s.converge, converge)
}

// atLeast returns a condition that holds once f() >= n.
func atLeast(f func() int, n int) func() bool { return func() bool { return f() >= n } }

// errNoEffect reports a fault whose effect the test could not observe.
var errNoEffect = errors.New("the fault had no visible effect")
