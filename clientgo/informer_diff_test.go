package clientgo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
)

// call is one call of a client-go handler, as the differential tests
// compare them.
type call struct {
	Kind    string // "add", "update", "delete"
	Key     string
	Initial bool   // isInInitialList, for an add
	OldRV   string // for an update
	RV      string // of the object handed over (the new one for an update)
	Node    string // Spec.NodeName of that object
	Deleted string // for a delete: the Go type handed to OnDelete
	Final   string // for a cache.DeletedFinalStateUnknown: the Go type of its Obj
}

// recorder is a client-go handler that records its calls and lets a test
// wait for them.
type recorder struct {
	mu    sync.Mutex // guards calls
	calls []call
	more  chan struct{} // gets a value after a call is recorded
}

func newRecorder() *recorder { return &recorder{more: make(chan struct{}, 1)} }

func (r *recorder) record(c call) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	select {
	case r.more <- struct{}{}:
	default:
	}
}

func podCall(kind string, obj any) call {
	p := obj.(*corev1.Pod)
	return call{Kind: kind, Key: p.Namespace + "/" + p.Name, RV: p.ResourceVersion, Node: p.Spec.NodeName}
}

func (r *recorder) OnAdd(obj any, initial bool) {
	c := podCall("add", obj)
	c.Initial = initial
	r.record(c)
}

func (r *recorder) OnUpdate(old, new any) {
	c := podCall("update", new)
	c.OldRV = old.(*corev1.Pod).ResourceVersion
	r.record(c)
}

func (r *recorder) OnDelete(obj any) {
	c := call{Kind: "delete", Deleted: fmt.Sprintf("%T", obj)}
	switch o := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		c.Key, c.Final = o.Key, fmt.Sprintf("%T", o.Obj)
		if p, ok := o.Obj.(*corev1.Pod); ok {
			c.RV, c.Node = p.ResourceVersion, p.Spec.NodeName
		}
	case *corev1.Pod:
		c.Key, c.RV, c.Node = o.Namespace+"/"+o.Name, o.ResourceVersion, o.Spec.NodeName
	}
	r.record(c)
}

// snapshot returns the calls so far.
func (r *recorder) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// waitUntil waits until the last call recorded is one for which done is
// true, and returns every call so far.
func (r *recorder) waitUntil(t *testing.T, what string, done func(call) bool) []call {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		got := r.snapshot()
		if len(got) > 0 && done(got[len(got)-1]) {
			return got
		}
		select {
		case <-r.more:
		case <-timeout:
			t.Fatalf("waited for %s; calls: %+v", what, got)
		}
	}
}

// sourceListWatch serves src to client-go as a cache.ListerWatcher: the same
// objects, resource versions, watches and watch-list streams our informer
// gets from src directly.
func sourceListWatch(src *informertest.Source[*corev1.Pod]) cache.ListerWatcher {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			page, err := src.List(ctx, o)
			if err != nil {
				return nil, err
			}
			list := &corev1.PodList{ListMeta: page.ListMeta}
			for _, p := range page.Items {
				list.Items = append(list.Items, *p)
			}
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return src.Watch(ctx, o)
		},
	}
}

func srcPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

// One script of adds, updates and deletes, then a relist that misses a
// deletion, an update and an add, played on one Source that feeds client-go's
// own SharedIndexInformer and ours through the adapter: the same client-go
// handler gets the same calls from both, in the same order, with the same
// isInInitialList flags and the same tombstone types. A handler added after
// the sync gets the same replay of the cache, and a removed handler hears
// nothing more.
func TestSharedIndexInformerScriptMatchesClientGo(t *testing.T) {
	src := informertest.NewSource(srcPod("web", ""), srcPod("db", ""), srcPod("keep", "n0"))
	theirs := cache.NewSharedIndexInformer(sourceListWatch(src), &corev1.Pod{}, 0, cache.Indexers{})
	typed, err := informer.NewSharedIndexInformer(src, informer.SharedIndexInformerOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	ours := SharedIndexInformer(typed)

	type side struct {
		name string
		inf  cache.SharedIndexInformer
		rec  *recorder
		reg  cache.ResourceEventHandlerRegistration
	}
	sides := []*side{{name: "client-go", inf: theirs}, {name: "ours", inf: ours}}
	for _, s := range sides {
		s.rec = newRecorder()
		if s.reg, err = s.inf.AddEventHandler(s.rec); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, s := range sides {
		wg.Go(func() { s.inf.RunWithContext(ctx) })
	}
	defer func() { cancel(); wg.Wait() }()
	for _, s := range sides {
		if !cache.WaitForCacheSync(ctx.Done(), s.inf.HasSynced, s.reg.HasSynced) {
			t.Fatalf("%s: not synced", s.name)
		}
	}

	// compare waits for both sides to see the call for which last is true,
	// and compares every call so far, in order, except within a list:
	// client-go hands a list to its handlers in an unspecified order (the
	// order of a map, with watch-list), so the calls a list makes are
	// compared sorted by key, once each side is checked to make the
	// deletions a relist implies before its adds and updates.
	compare := func(step string, last func(call) bool) {
		t.Helper()
		var calls [2][]call
		for i, s := range sides {
			calls[i] = canonical(t, s.name, s.rec.waitUntil(t, step, last), "a/end-1")
		}
		if diff := gocmp.Diff(calls[0], calls[1]); diff != "" {
			t.Errorf("%s: calls (-client-go +ours):\n%s", step, diff)
		}
	}
	// Each step ends with a change of its own, so that a call one side
	// makes and the other does not shows up before it.
	endAt := func(key string) func(call) bool { return func(c call) bool { return c.Key == key } }
	mustPod := func(_ *corev1.Pod, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	mustPod(src.Add(srcPod("api", "")))
	mustPod(src.Update(srcPod("api", "n1")))
	mustPod(src.Delete(srcPod("web", "")))
	mustPod(src.Add(srcPod("end-1", "")))
	compare("watch", endAt("a/end-1"))

	// Missed while offline, and expired from the history: the informers
	// learn of them only by relisting.
	src.Offline()
	mustPod(src.Delete(srcPod("db", "")))
	mustPod(src.Update(srcPod("api", "n2")))
	mustPod(src.Add(srcPod("cache", "")))
	src.Expire()
	src.Online()
	// Once a/cache, which only the relist has, is seen, the rest of the
	// relist is queued before the next change.
	for _, s := range sides {
		s.rec.waitUntil(t, "the relist on "+s.name, func(call) bool {
			return slices.ContainsFunc(s.rec.snapshot(), endAt("a/cache"))
		})
	}
	mustPod(src.Add(srcPod("end-2", "")))
	compare("relist", endAt("a/end-2"))
	// The caches applied the same changes, up to the same version.
	for i, s := range sides {
		if got, want := s.inf.GetIndexer().LastStoreSyncResourceVersion(), src.ResourceVersion(); got != want {
			t.Errorf("%s: LastStoreSyncResourceVersion = %q, want %q", s.name, got, want)
		}
		if i > 0 {
			if diff := gocmp.Diff(sides[0].inf.GetStore().ListKeys(), s.inf.GetStore().ListKeys(), cmpopts.SortSlices(cmp.Less[string])); diff != "" {
				t.Errorf("cached keys (-client-go +ours):\n%s", diff)
			}
		}
	}
	got := sides[1].rec.snapshot()
	if !slices.ContainsFunc(got, func(c call) bool {
		return c.Key == "a/db" && c.Deleted == "cache.DeletedFinalStateUnknown" && c.Final == "*v1.Pod"
	}) {
		t.Errorf("no cache.DeletedFinalStateUnknown for a/db holding its *v1.Pod: %+v", got)
	}

	// A handler added late gets the cache replayed as initial adds, in no
	// particular order on either side.
	for _, s := range sides {
		late := newRecorder()
		reg, err := s.inf.AddEventHandler(late)
		if err != nil {
			t.Fatal(err)
		}
		if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
			t.Fatalf("%s: late handler not synced", s.name)
		}
		replay := late.snapshot()
		slices.SortFunc(replay, func(a, b call) int { return cmp.Compare(a.Key, b.Key) })
		var want []call
		for _, p := range src.Objects() {
			want = append(want, call{Kind: "add", Key: "a/" + p.Name, Initial: true, RV: p.ResourceVersion, Node: p.Spec.NodeName})
		}
		if diff := gocmp.Diff(want, replay); diff != "" {
			t.Errorf("%s: late handler's replay (-source +got):\n%s", s.name, diff)
		}
		if err := s.inf.RemoveEventHandler(reg); err != nil {
			t.Error(err)
		}
	}

	// Removed and shut down, the first handler hears nothing more, while a
	// handler still registered does.
	before := sides[1].rec.snapshot()
	if err := cache.ShutDownEventHandler(ours, sides[1].reg); err != nil {
		t.Fatalf("ShutDownEventHandler: %v", err)
	}
	witness := newRecorder()
	if _, err := ours.AddEventHandler(witness); err != nil {
		t.Fatal(err)
	}
	mustPod(src.Add(srcPod("end-3", "")))
	witness.waitUntil(t, "a/end-3 on a handler still registered", endAt("a/end-3"))
	if diff := gocmp.Diff(before, sides[1].rec.snapshot()); diff != "" {
		t.Errorf("calls after RemoveEventHandler (-before +after):\n%s", diff)
	}
	if err := ours.RemoveEventHandler(sides[1].reg); err != nil {
		t.Errorf("RemoveEventHandler twice = %v, want nil as in client-go", err)
	}
	if err := ours.RemoveEventHandler(sides[0].reg); !errors.Is(err, ErrForeignRegistration) {
		t.Errorf("RemoveEventHandler of client-go's registration = %v, want ErrForeignRegistration", err)
	}
}

// canonical returns calls with the runs of calls a list made sorted by
// key: the initial adds, and the calls between the sentinel add of
// relistAfter and the next sentinel (an add of an "a/end-" key), which the test makes
// nothing but the relist. It checks that a relist's deletions come first.
func canonical(t *testing.T, side string, calls []call, relistAfter string) []call {
	t.Helper()
	out := slices.Clone(calls)
	initial := 0
	for initial < len(out) && out[initial].Initial {
		initial++
	}
	slices.SortFunc(out[:initial], func(a, b call) int { return cmp.Compare(a.Key, b.Key) })
	start := slices.IndexFunc(out, func(c call) bool { return c.Key == relistAfter }) + 1
	if start == 0 {
		return out
	}
	end := start
	for end < len(out) && !(out[end].Kind == "add" && strings.HasPrefix(out[end].Key, "a/end-")) {
		end++
	}
	run := out[start:end]
	if firstOther := slices.IndexFunc(run, func(c call) bool { return c.Kind != "delete" }); firstOther >= 0 &&
		slices.ContainsFunc(run[firstOther:], func(c call) bool { return c.Kind == "delete" }) {
		t.Errorf("%s: a relist's deletion after its adds or updates: %+v", side, run)
	}
	slices.SortStableFunc(run, func(a, b call) int {
		return cmp.Or(cmp.Compare(kindRank(a), kindRank(b)), cmp.Compare(a.Key, b.Key))
	})
	return out
}

// kindRank puts deletions first.
func kindRank(c call) int {
	if c.Kind == "delete" {
		return 0
	}
	return 1
}
