package informer_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
)

// inNamespace is src seen through the metadata.namespace field selector,
// as a namespaced client sees the API server.
func inNamespace(src *informertest.Source[*corev1.Pod], ns string) informer.ListerWatcher[*corev1.Pod] {
	sel := fields.OneTermEqualSelector("metadata.namespace", ns).String()
	return informer.ListWatchFuncs[*corev1.Pod]{
		ListFunc: func(ctx context.Context, o metav1.ListOptions) (*informer.ListPage[*corev1.Pod], error) {
			o.FieldSelector = sel
			return src.List(ctx, o)
		},
		WatchFunc: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return src.Watch(ctx, o)
		},
	}
}

func nsPod(ns, name, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
	}
}

// cachedKeys returns "ns/name@rv" of every cached Pod, sorted.
func cachedKeys(inf *informer.SharedIndexInformer[*corev1.Pod]) []string {
	var out []string
	for _, p := range inf.GetIndexer().List() {
		out = append(out, p.Namespace+"/"+p.Name+"@"+p.ResourceVersion)
	}
	slices.Sort(out)
	return out
}

// sourceKeys is cachedKeys of the objects of src in namespaces.
func sourceKeys(src *informertest.Source[*corev1.Pod], namespaces ...string) []string {
	var out []string
	for _, p := range src.Objects() {
		if slices.Contains(namespaces, p.Namespace) {
			out = append(out, p.Namespace+"/"+p.Name+"@"+p.ResourceVersion)
		}
	}
	slices.Sort(out)
	return out
}

// waitCache waits until the informer's cache holds exactly want.
func waitCache(t *testing.T, inf *informer.SharedIndexInformer[*corev1.Pod], want []string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := cachedKeys(inf)
		if cmp.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cache (-want +got):\n%s", cmp.Diff(want, got))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// One informer over two of three namespaces caches exactly their objects
// through adds, updates, deletes, dropped watches and a 410 relist, and its
// handlers see each change of those namespaces once.
func TestMultiNamespaceListWatch(t *testing.T) {
	src := informertest.NewSource(nsPod("a", "p1", "v1"), nsPod("b", "p1", "v1"), nsPod("c", "p1", "v1"))
	lw, err := informer.MultiNamespaceListWatch([]string{"a", "b"}, func(ns string) (informer.ListerWatcher[*corev1.Pod], error) {
		return inNamespace(src, ns), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := informer.NewSharedIndexInformer(lw, informer.SharedIndexInformerOptions[*corev1.Pod]{
		Reflector: informer.ReflectorOptions{Backoff: informer.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}, WatchErrorHandler: func(context.Context, error) {}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var rec informertest.Recorder[*corev1.Pod]
	if _, err := inf.AddEventHandler(&rec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	if err := informer.WaitForCacheSync(ctx, inf); err != nil {
		t.Fatal(err)
	}
	waitCache(t, inf, sourceKeys(src, "a", "b"))

	mustAdd := func(p *corev1.Pod) {
		if _, err := src.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	mustAdd(nsPod("a", "p2", "v1"))
	mustAdd(nsPod("c", "p2", "v1"))
	mustAdd(nsPod("b", "p2", "v1"))
	if _, err := src.Update(nsPod("b", "p1", "v2")); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Delete(nsPod("a", "p1", "")); err != nil {
		t.Fatal(err)
	}
	waitCache(t, inf, sourceKeys(src, "a", "b"))

	src.DropWatches()
	if _, err := src.Update(nsPod("a", "p2", "v2")); err != nil {
		t.Fatal(err)
	}
	mustAdd(nsPod("c", "p3", "v1"))
	waitCache(t, inf, sourceKeys(src, "a", "b"))

	src.Relist()
	if _, err := src.Delete(nsPod("b", "p2", "")); err != nil {
		t.Fatal(err)
	}
	mustAdd(nsPod("b", "p3", "v1"))
	waitCache(t, inf, sourceKeys(src, "a", "b"))

	// Every handler call is of namespace a or b, and the last call per key
	// agrees with the cache.
	for _, c := range rec.Calls() {
		if strings.HasPrefix(c.Key, "c/") {
			t.Errorf("handler got %v of namespace c", c)
		}
	}
	if got := inf.Lister().ByNamespace("c"); func() bool { l, _ := got.List(nil); return len(l) != 0 }() {
		t.Error("the lister has Pods of namespace c")
	}
}

// scriptedLW is one namespace's ListerWatcher whose watches the test
// drives, recording the resource version each watch starts from.
type scriptedLW struct {
	rv      string
	mu      sync.Mutex
	watches []*watch.FakeWatcher
	from    []string
}

func (s *scriptedLW) List(context.Context, metav1.ListOptions) (*informer.ListPage[*corev1.Pod], error) {
	return &informer.ListPage[*corev1.Pod]{ListMeta: metav1.ListMeta{ResourceVersion: s.rv}}, nil
}

func (s *scriptedLW) Watch(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := watch.NewFake()
	s.watches = append(s.watches, w)
	s.from = append(s.from, o.ResourceVersion)
	return w, nil
}

func (s *scriptedLW) last() *watch.FakeWatcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watches[len(s.watches)-1]
}

// A namespace whose watch lags behind the others restarts from its own
// last resource version, not from the newest the merged watch handed over,
// so it loses none of its events.
func TestMultiNamespaceWatchRestartsEachFromItsOwnVersion(t *testing.T) {
	a, b := &scriptedLW{rv: "5"}, &scriptedLW{rv: "7"}
	lw, err := informer.MultiNamespaceListWatch([]string{"a", "b"}, func(ns string) (informer.ListerWatcher[*corev1.Pod], error) {
		if ns == "a" {
			return a, nil
		}
		return b, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	page, err := lw.List(t.Context(), metav1.ListOptions{ResourceVersion: "0"})
	if err != nil || page.ResourceVersion != "7" {
		t.Fatalf("List = %+v, %v, want resource version 7, the newer", page, err)
	}
	w, err := lw.Watch(t.Context(), metav1.ListOptions{ResourceVersion: "7"})
	if err != nil {
		t.Fatal(err)
	}
	p := nsPod("a", "p", "v1")
	p.ResourceVersion = "10"
	go a.last().Modify(p)
	if ev := <-w.ResultChan(); ev.Type != watch.Modified {
		t.Fatalf("got %v, want the MODIFIED of a", ev)
	}
	// a's connection drops: the merged watch ends, b's with it.
	a.last().Stop()
	for range w.ResultChan() {
	}
	w.Stop()
	w, err = lw.Watch(t.Context(), metav1.ListOptions{ResourceVersion: "10"})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	if got, want := [][]string{a.from, b.from}, [][]string{{"5", "10"}, {"7", "7"}}; !cmp.Equal(got, want) {
		t.Errorf("watches started from %v, want %v", got, want)
	}
	if !b.watches[0].IsStopped() {
		t.Error("b's first watch was not stopped with a's")
	}
}

func TestMultiNamespaceListWatchInvalid(t *testing.T) {
	ok := func(string) (informer.ListerWatcher[*corev1.Pod], error) { return &scriptedLW{}, nil }
	for _, ns := range [][]string{nil, {"a", "a"}, {"a", ""}} {
		if _, err := informer.MultiNamespaceListWatch(ns, ok); !errors.Is(err, informer.ErrInvalidOptions) {
			t.Errorf("MultiNamespaceListWatch(%q) = %v, want ErrInvalidOptions", ns, err)
		}
	}
	boom := errors.New("boom")
	if _, err := informer.MultiNamespaceListWatch([]string{"a"}, func(string) (informer.ListerWatcher[*corev1.Pod], error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("got %v, want the error of perNamespace", err)
	}
}
