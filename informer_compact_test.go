package informer

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/internal/testobj"
)

// newCompactPodInformer is newPodInformer with a compact store, whose source
// lists records as a Factory's does.
func newCompactPodInformer(t *testing.T, src *fakeSource, opts SharedIndexInformerOptions[*corev1.Pod]) *SharedIndexInformer[*corev1.Pod] {
	t.Helper()
	opts.Reflector.WatchList = WatchListOff
	opts.Reflector.WatchErrorHandler = func(_ context.Context, err error) { t.Logf("watch error: %v", err) }
	var inf *SharedIndexInformer[*corev1.Pod]
	lw := newRecordListWatch(src.Typed(), func() *Indexer[*corev1.Pod] { return inf.GetIndexer() })
	opts.Compact, opts.codec = true, lw.codec
	inf, err := NewSharedIndexInformer[*corev1.Pod](lw, opts)
	if err != nil {
		t.Fatal(err)
	}
	return inf
}

// A compact informer delivers the initial list, changes with their old
// objects, deletions and a relist's implied deletions, in either queue
// mode, and its cache is what the source holds.
func TestCompactInformer(t *testing.T) {
	forEachQueue(t, func(t *testing.T, mode QueueMode) {
		synctest.Test(t, func(t *testing.T) {
			src := newFakeSource()
			src.Add(testobj.Pod("ns", "a", "", "app=x"))
			src.Add(testobj.Pod("ns", "b", "", "app=y"))
			inf := newCompactPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{Queue: mode})
			rec := &recorder{}
			if _, err := inf.AddEventHandler(rec); err != nil {
				t.Fatal(err)
			}
			startInformer(t, inf)
			synctest.Wait()
			checkCalls(t, rec, "add ns/a@2 initial", "add ns/b@3 initial")
			src.Modify(testobj.Pod("ns", "a", "", "app=z"))
			src.Delete(testobj.Pod("ns", "b", ""))
			synctest.Wait()
			checkCalls(t, rec, "update ns/a@2 -> ns/a@4", "delete ns/b@5")
			src.Offline()
			synctest.Wait()
			src.Add(testobj.Pod("ns", "c", ""))
			src.Delete(testobj.Pod("ns", "a", ""))
			src.Compact()
			src.Online()
			synctest.Wait()
			time.Sleep(time.Minute) // past the Reflector's backoff
			synctest.Wait()
			// In order: the deletions a relist implies first; a DeltaFIFO
			// queues them after the listed objects.
			if got := normalizeHandlerCalls(rec.take()); !slices.Equal(got, []string{"add ns/c@6", "delete ns/a@4 unknown"}) && !slices.Equal(got, []string{"delete ns/a@4 unknown", "add ns/c@6"}) {
				t.Errorf("after the relist: %q", got)
			}
			if got, want := podsString(inf.GetIndexer().List()), podsString(src.Pods()); got != want {
				t.Errorf("cache %s, source %s", got, want)
			}
			if ok, _ := inf.GetIndexer().Compact(); !ok {
				t.Error("the cache is not compact")
			}
		})
	})
}

// A compact informer with a transform caches the transform's output,
// encoded, whether its source lists records or objects.
func TestCompactInformerTransform(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		src.Add(testobj.Pod("ns", "a", "", "app=x"))
		inf := newCompactPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{
			Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
				q := p.DeepCopy()
				q.Labels = map[string]string{"seen": "yes"}
				return q, nil
			},
		})
		startInformer(t, inf)
		synctest.Wait()
		src.Add(testobj.Pod("ns", "b", "", "app=y"))
		synctest.Wait()
		for _, key := range []string{"ns/a", "ns/b"} {
			p, ok := inf.GetIndexer().GetByKey(key)
			if !ok || p.Labels["seen"] != "yes" || len(p.Labels) != 1 {
				t.Errorf("%s: %v, %v; want the transform's output", key, p, ok)
			}
		}
	})
}

// A handler added late to a compact informer gets the cache replayed,
// decoded; Lister reads and read-your-writes work.
func TestCompactInformerLateHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		src.Add(testobj.Pod("ns", "a", "", "app=x"))
		src.Add(testobj.Pod("ns", "b", "", "app=x"))
		inf := newCompactPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
		startInformer(t, inf)
		synctest.Wait()
		if n := compactCodec(t, inf).Cached(); n != 0 {
			t.Errorf("%d objects decoded by a sync without handlers", n)
		}
		rec := &recorder{}
		if _, err := inf.AddEventHandler(rec); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		checkCalls(t, rec, "add ns/a@2 initial", "add ns/b@3 initial")
		p := src.Modify(testobj.Pod("ns", "a", "", "app=y"))
		if err := inf.WaitForResourceVersion(t.Context(), p.ResourceVersion); err != nil {
			t.Fatal(err)
		}
		got, err := inf.Lister().ByNamespace("ns").Get("a")
		if err != nil || got.Labels["app"] != "y" {
			t.Errorf("Get(ns/a) after its update = %v, %v", got, err)
		}
		synctest.Wait()
		checkCalls(t, rec, "update ns/a@2 -> ns/a@4")
	})
}

// oldTracker is a handler that counts the updates whose old object is not
// the object the one before handed as new.
type oldTracker struct {
	mu     sync.Mutex
	last   map[string]*corev1.Pod
	others int // updates whose old object is another object
	seen   int // updates
}

func (h *oldTracker) OnAdd(p *corev1.Pod, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last[p.Name] = p
}

func (h *oldTracker) OnUpdate(old, new *corev1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen++
	if h.last[new.Name] != old {
		h.others++
	}
	h.last[new.Name] = new
}

func (h *oldTracker) OnDelete(DeletedObject[*corev1.Pod]) {}

// A compact informer whose objects fit in its cache of decoded objects
// hands each update the old object as the update before handed it, never
// decoded again: a record an update replaces gives its place in the cache
// to the new one (wire.Compact.Forget), rather than the clock hand
// evicting a live record once the cache has turned over.
func TestCompactInformerUpdatesKeepDecodedObjects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const pods, rounds = 600, 3 // 2,400 records kept: more than the cache's 1,024 places
		src := newFakeSource()
		for i := range pods {
			src.Add(testobj.Pod("ns", fmt.Sprintf("p-%03d", i), ""))
		}
		inf := newCompactPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
		h := &oldTracker{last: map[string]*corev1.Pod{}}
		if _, err := inf.AddEventHandler(h); err != nil {
			t.Fatal(err)
		}
		startInformer(t, inf)
		synctest.Wait()
		rnd := rand.New(rand.NewPCG(1, 2))
		for r := range rounds {
			for _, i := range rnd.Perm(pods) {
				src.Modify(testobj.Pod("ns", fmt.Sprintf("p-%03d", i), "", fmt.Sprintf("round=%d", r)))
			}
			synctest.Wait()
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.seen != pods*rounds {
			t.Fatalf("%d updates, want %d", h.seen, pods*rounds)
		}
		if h.others != 0 {
			t.Errorf("%d of %d updates got an old object decoded again", h.others, h.seen)
		}
	})
}

// An update whose replaced record no longer holds its decoded object (a
// kind with more objects than the codec's cache keeps) hands the handlers
// an old object decoded again: equal to the version before, and sharing
// the new object's parts whose bytes did not change, rather than a second
// decoding of them.
func TestCompactInformerOldObjectSharesUnchangedParts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		first := src.Add(testobj.RealisticPod("ns", 1, 1))
		inf := newCompactPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
		type update struct{ old, new *corev1.Pod }
		var mu sync.Mutex
		var updates []update
		if _, err := inf.AddEventHandler(ResourceEventHandlerFuncs[*corev1.Pod]{UpdateFunc: func(old, new *corev1.Pod) {
			mu.Lock()
			defer mu.Unlock()
			updates = append(updates, update{old, new})
		}}); err != nil {
			t.Fatal(err)
		}
		startInformer(t, inf)
		synctest.Wait()
		key := mustKey(first)
		versions := []*corev1.Pod{first.DeepCopy()}
		for i, change := range []func(*corev1.Pod){
			func(p *corev1.Pod) { p.Status.ContainerStatuses[0].RestartCount++ },
			func(p *corev1.Pod) { p.Spec.Containers[0].Image += "-2" },
		} {
			rec := inf.indexer.recordOf(key)
			if rec == nil {
				t.Fatal("the compact store holds no record of the Pod")
			}
			inf.indexer.compact.codec.Forget(rec) // as the cache's clock hand would
			next := versions[i].DeepCopy()
			change(next)
			versions = append(versions, src.Modify(next).DeepCopy())
			synctest.Wait()
		}
		mu.Lock()
		defer mu.Unlock()
		if len(updates) != 2 {
			t.Fatalf("%d updates, want 2", len(updates))
		}
		for i, u := range updates {
			if diff := cmp.Diff(versions[i], u.old); diff != "" {
				t.Errorf("update %d: old object, -the version before +handed:\n%s", i, diff)
			}
			if diff := cmp.Diff(versions[i+1], u.new); diff != "" {
				t.Errorf("update %d: new object, -the version +handed:\n%s", i, diff)
			}
		}
		if u := updates[0]; &u.old.Spec.Containers[0] != &u.new.Spec.Containers[0] {
			t.Error("a status update: the old object does not share the new one's spec")
		}
		if u := updates[0]; &u.old.Status.ContainerStatuses[0] == &u.new.Status.ContainerStatuses[0] {
			t.Error("a status update: the old object shares the new one's status")
		}
		if u := updates[1]; &u.old.Status.ContainerStatuses[0] != &u.new.Status.ContainerStatuses[0] {
			t.Error("a spec update: the old object does not share the new one's status")
		}
	})
}

// nodeLabels is a LabelsFunc of the user's: labels derived from the Pod's
// node, not its metadata.labels.
func nodeLabels(p *corev1.Pod) map[string]string {
	return map[string]string{"node": p.Spec.NodeName}
}

// A compact informer answers label selectors as a decoded one does when
// its label index is the user's (NoLabelIndex, then AddLabelIndex with a
// function of labels that are not metadata.labels), whether the index is
// added before the initial list, or after it over the stored records, and
// through watched changes.
func TestCompactInformerUserLabelIndex(t *testing.T) {
	selectors := []string{"node=n1", "node!=n1", "node in (n1,n2)", "node notin (n2)", "node", "!node", "app=x", "app=x,node=n2", ""}
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprintf("late=%v", late), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := newFakeSource()
				for i, name := range []string{"a", "b", "c"} {
					p := testobj.Pod("ns", name, "", "app=x")
					p.Spec.NodeName = fmt.Sprintf("n%d", i+1)
					src.Add(p)
				}
				opts := SharedIndexInformerOptions[*corev1.Pod]{NoLabelIndex: true}
				compact := newCompactPodInformer(t, src, opts)
				plain := newPodInformer(t, src, opts)
				addIndex := func() {
					for _, inf := range []*SharedIndexInformer[*corev1.Pod]{compact, plain} {
						if err := inf.GetIndexer().AddLabelIndex(nodeLabels); err != nil {
							t.Fatal(err)
						}
					}
				}
				if !late {
					addIndex()
				}
				startInformer(t, compact)
				startInformer(t, plain)
				synctest.Wait()
				if late {
					addIndex()
				}
				compare := func(when string) {
					t.Helper()
					for _, s := range selectors {
						sel, err := labels.Parse(s)
						if err != nil {
							t.Fatal(err)
						}
						got, err := compact.Lister().List(sel)
						if err != nil {
							t.Fatal(err)
						}
						want, err := plain.Lister().List(sel)
						if err != nil {
							t.Fatal(err)
						}
						if podsString(got) != podsString(want) {
							t.Errorf("%s: List(%q) = %s, a decoded store's %s", when, s, podsString(got), podsString(want))
						}
						got, err = compact.GetIndexer().BySelector(sel)
						if err != nil {
							t.Fatal(err)
						}
						if podsString(got) != podsString(want) {
							t.Errorf("%s: BySelector(%q) = %s, a decoded store's %s", when, s, podsString(got), podsString(want))
						}
					}
				}
				compare("listed")
				moved := testobj.Pod("ns", "a", "", "app=x")
				moved.Spec.NodeName = "n2"
				src.Modify(moved)
				added := testobj.Pod("ns", "d", "", "app=y")
				added.Spec.NodeName = "n1"
				src.Add(added)
				synctest.Wait()
				compare("watched")
			})
		})
	}
}

// gatedHandler counts the adds it gets, and blocks in its first call until
// gate is closed.
type gatedHandler struct {
	gate  chan struct{}
	once  sync.Once
	mu    sync.Mutex
	added map[string]string // key -> resource version
}

func (h *gatedHandler) OnAdd(p *corev1.Pod, _ bool) {
	h.once.Do(func() { <-h.gate })
	h.mu.Lock()
	defer h.mu.Unlock()
	h.added[p.Namespace+"/"+p.Name] = p.ResourceVersion
}
func (h *gatedHandler) OnUpdate(_, _ *corev1.Pod)           {}
func (h *gatedHandler) OnDelete(DeletedObject[*corev1.Pod]) {}

// A compact informer's handlers' backlogs hold records, not decoded
// objects: the initial list's adds to a handler registered before the
// start, and the replay of the cache to one added after, are decoded as
// they are delivered. While the handlers are held up, the codec holds
// one or two decoded objects, not the 1,500 pending (before, every pending
// add held its object, and the manager's compact peak heap was 2.7 times
// its steady heap). Every object is then delivered, as the source has it.
func TestCompactBacklogHoldsRecords(t *testing.T) {
	for _, coalesce := range []bool{false, true} {
		t.Run(fmt.Sprintf("coalesce=%v", coalesce), func(t *testing.T) { compactBacklogHoldsRecords(t, HandlerOptions{Coalesce: coalesce}) })
	}
}

func compactBacklogHoldsRecords(t *testing.T, opts HandlerOptions) {
	synctest.Test(t, func(t *testing.T) {
		const n = 1500
		src := newFakeSource()
		for i := range n {
			src.Add(testobj.Pod("ns", fmt.Sprintf("p%04d", i), "", "app=x"))
		}
		inf := newCompactPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
		early := &gatedHandler{gate: make(chan struct{}), added: map[string]string{}}
		if _, err := inf.AddEventHandler(early, opts); err != nil {
			t.Fatal(err)
		}
		startInformer(t, inf)
		synctest.Wait()
		late := &gatedHandler{gate: make(chan struct{}), added: map[string]string{}}
		if _, err := inf.AddEventHandler(late, opts); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := compactCodec(t, inf).Cached(); got > 2 {
			t.Errorf("%d objects decoded while %d adds wait for each of two handlers, want at most the two in delivery", got, n)
		}
		close(early.gate)
		close(late.gate)
		synctest.Wait()
		want := map[string]string{}
		for _, p := range src.Pods() {
			want[p.Namespace+"/"+p.Name] = p.ResourceVersion
		}
		for name, h := range map[string]*gatedHandler{"early": early, "late": late} {
			if !maps.Equal(h.added, want) {
				t.Errorf("the %s handler got %d adds, want the %d Pods as the source has them", name, len(h.added), len(want))
			}
		}
	})
}
