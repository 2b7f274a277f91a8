package informer

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/typedkube/informer/internal/testobj"
)

// newLabelIndexer returns the indexer of an informer's cache: namespace
// index and label index.
func newLabelIndexer() *Indexer[*corev1.Pod] {
	x := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]})
	if err := x.AddLabelIndex(MetaLabelsFunc[*corev1.Pod]); err != nil {
		panic(err)
	}
	return x
}

func podLister(x *Indexer[*corev1.Pod]) Lister[*corev1.Pod] {
	return Lister[*corev1.Pod]{indexer: x, resource: corev1.Resource("pods")}
}

func selectedKeys(ps []*corev1.Pod) []string {
	if len(ps) == 0 {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Namespace + "/" + p.Name
	}
	slices.Sort(out)
	return out
}

func collect[T any](seq func(func(T) bool)) []T {
	var out []T
	for v := range seq {
		out = append(out, v)
	}
	return out
}

// Every operator, alone and combined, through List and Select, in one
// namespace and in all.
func TestLabelIndexOperators(t *testing.T) {
	pods := []*corev1.Pod{
		testobj.Pod("a", "web-1", "", "app=web", "tier=front", "rank=1"),
		testobj.Pod("a", "web-2", "", "app=web", "tier=front", "rank=2"),
		testobj.Pod("a", "db-1", "", "app=db", "tier=back", "rank=10"),
		testobj.Pod("b", "web-1", "", "app=web", "rank=x"),
		testobj.Pod("b", "cache", "", "tier=back"),
		testobj.Pod("b", "bare", ""),
	}
	x := newLabelIndexer()
	for _, p := range pods {
		if err := x.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	l := podLister(x)
	all := func(keys ...string) []string { return keys }
	tests := []struct {
		selector string
		want     []string // every namespace
		wantA    []string // namespace a
	}{
		{"", all("a/db-1", "a/web-1", "a/web-2", "b/bare", "b/cache", "b/web-1"), all("a/db-1", "a/web-1", "a/web-2")},
		{"app=web", all("a/web-1", "a/web-2", "b/web-1"), all("a/web-1", "a/web-2")},
		{"app==db", all("a/db-1"), all("a/db-1")},
		{"app=none", nil, nil},
		{"nokey=x", nil, nil},
		{"app!=web", all("a/db-1", "b/bare", "b/cache"), all("a/db-1")},
		{"app in (web,db)", all("a/db-1", "a/web-1", "a/web-2", "b/web-1"), all("a/db-1", "a/web-1", "a/web-2")},
		{"app in (db,none)", all("a/db-1"), all("a/db-1")},
		{"app notin (web)", all("a/db-1", "b/bare", "b/cache"), all("a/db-1")},
		{"tier", all("a/db-1", "a/web-1", "a/web-2", "b/cache"), all("a/db-1", "a/web-1", "a/web-2")},
		{"!tier", all("b/bare", "b/web-1"), nil},
		{"!nokey", all("a/db-1", "a/web-1", "a/web-2", "b/bare", "b/cache", "b/web-1"), all("a/db-1", "a/web-1", "a/web-2")},
		{"rank>1", all("a/db-1", "a/web-2"), all("a/db-1", "a/web-2")},
		{"rank<2", all("a/web-1"), all("a/web-1")},
		{"app=web,tier=front", all("a/web-1", "a/web-2"), all("a/web-1", "a/web-2")},
		{"app=web,tier!=front", all("b/web-1"), nil},
		{"app=web,app=db", nil, nil},
		{"app in (web,db),app notin (db),rank>1", all("a/web-2"), all("a/web-2")},
		{"tier,!app", all("b/cache"), nil},
		{"app=web,rank", all("a/web-1", "a/web-2", "b/web-1"), all("a/web-1", "a/web-2")},
	}
	for _, tt := range tests {
		t.Run(tt.selector, func(t *testing.T) {
			sel, err := labels.Parse(tt.selector)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				ns   string
				want []string
			}{{metav1.NamespaceAll, tt.want}, {"a", tt.wantA}, {"missing", nil}} {
				got, err := l.ByNamespace(c.ns).List(sel)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(c.want, selectedKeys(got)); diff != "" {
					t.Errorf("ByNamespace(%q).List (-want +got):\n%s", c.ns, diff)
				}
				if diff := cmp.Diff(c.want, selectedKeys(collect(l.ByNamespace(c.ns).Select(sel)))); diff != "" {
					t.Errorf("ByNamespace(%q).Select (-want +got):\n%s", c.ns, diff)
				}
			}
			got, err := x.BySelector(sel)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, selectedKeys(got)); diff != "" {
				t.Errorf("BySelector (-want +got):\n%s", diff)
			}
		})
	}
	for _, sel := range []labels.Selector{labels.Nothing(), opaqueSelector{labels.Nothing()}} {
		if got, _ := l.List(sel); len(got) != 0 {
			t.Errorf("List(%#v) = %v, want nothing", sel, selectedKeys(got))
		}
	}
	set := labels.ValidatedSetSelector{"app": "web", "tier": "front"}
	if got, _ := l.List(set); !slices.Equal(selectedKeys(got), []string{"a/web-1", "a/web-2"}) {
		t.Errorf("List(ValidatedSetSelector) = %v", selectedKeys(got))
	}
	if got, _ := l.List(opaqueSelector{labels.SelectorFromSet(labels.Set{"app": "db"})}); !slices.Equal(selectedKeys(got), []string{"a/db-1"}) {
		t.Errorf("List(opaque app=db) = %v", selectedKeys(got))
	}
}

// opaqueSelector is a Selector that hides its requirements, as a custom
// implementation may: the index must test it whole.
type opaqueSelector struct{ labels.Selector }

func (opaqueSelector) Requirements() (labels.Requirements, bool)     { return nil, false }
func (opaqueSelector) RequiresExactMatch(string) (string, bool)      { return "", false }
func (s opaqueSelector) Add(r ...labels.Requirement) labels.Selector { return s.Selector.Add(r...) }

func TestLabelIndexErrors(t *testing.T) {
	x := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], nil)
	if _, err := x.BySelector(labels.SelectorFromSet(labels.Set{"a": "b"})); !errors.Is(err, ErrNoSuchIndex) {
		t.Errorf("BySelector without a label index: %v, want ErrNoSuchIndex", err)
	}
	if got := collect2(x.BySelectorSeq(labels.SelectorFromSet(labels.Set{"a": "b"}))); len(got) != 0 {
		t.Errorf("BySelectorSeq without a label index yielded %v", got)
	}
	if err := x.AddLabelIndex(MetaLabelsFunc[*corev1.Pod]); err != nil {
		t.Fatal(err)
	}
	if err := x.AddLabelIndex(MetaLabelsFunc[*corev1.Pod]); !errors.Is(err, ErrIndexConflict) {
		t.Errorf("second AddLabelIndex: %v, want ErrIndexConflict", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("AddLabelIndex(nil) did not panic")
		}
	}()
	_ = NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], nil).AddLabelIndex(nil)
}

func collect2[K, V any](seq func(func(K, V) bool)) []V {
	var out []V
	for _, v := range seq {
		out = append(out, v)
	}
	return out
}

// A Lister without a label index (NoLabelIndex) gives the same answers by
// scanning; one over an indexer whose label index was added later, too.
func TestLabelIndexOptional(t *testing.T) {
	plain := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]})
	late := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]})
	for i := range 50 {
		p := testobj.Pod(fmt.Sprint("ns-", i%3), fmt.Sprint("p-", i), "", fmt.Sprint("app=a", i%4), fmt.Sprint("n=", i))
		plain.Add(p)
		late.Add(p)
	}
	if err := late.AddLabelIndex(MetaLabelsFunc[*corev1.Pod]); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"app=a1", "app in (a1,a2),n>10", "n<5", "!app", "app"} {
		sel, _ := labels.Parse(s)
		for _, ns := range []string{"", "ns-1"} {
			want, _ := podLister(plain).ByNamespace(ns).List(sel)
			got, _ := podLister(late).ByNamespace(ns).List(sel)
			if diff := cmp.Diff(selectedKeys(want), selectedKeys(got)); diff != "" {
				t.Errorf("%q in %q (-scan +index):\n%s", s, ns, diff)
			}
			if diff := cmp.Diff(selectedKeys(want), selectedKeys(collect(podLister(plain).ByNamespace(ns).Select(sel)))); diff != "" {
				t.Errorf("Select %q in %q without index (-List +Select):\n%s", s, ns, diff)
			}
		}
	}
	checkLabelIndex(t, 0, late)
}

// A label index added to a filled Indexer knows each object's labels map,
// so that an update whose object has none (a nil map, as the old one's
// after AddLabelIndex would have been if it were not recorded) drops the
// old object's postings, and one with the very same map keeps them.
func TestLabelIndexLateThenUpdate(t *testing.T) {
	x := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{})
	pods := make([]*corev1.Pod, 20)
	for i := range pods {
		pods[i] = testobj.Pod("ns", fmt.Sprint("p-", i), "", "app=web", fmt.Sprint("n=", i))
		if err := x.Add(pods[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.AddLabelIndex(MetaLabelsFunc[*corev1.Pod]); err != nil {
		t.Fatal(err)
	}
	for i, p := range pods {
		q := p.DeepCopy()
		q.ResourceVersion = "2"
		if i%2 == 0 {
			q.Labels = nil // no labels any more
		} else {
			q.Labels = p.Labels // the very same map
		}
		if err := x.Update(q); err != nil {
			t.Fatal(err)
		}
	}
	sel, _ := labels.Parse("app=web")
	got, err := podLister(x).List(sel)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 {
		t.Errorf("app=web selects %d Pods after half lost their labels, want 10: %v", len(got), selectedKeys(got))
	}
	checkLabelIndex(t, 0, x)
}

// Labels that change all the time, with values unique to one object (like
// pod-template-hash) and shared ones, leave an exact index that gives its
// memory back when the objects go.
func TestLabelIndexChurn(t *testing.T) {
	x := newLabelIndexer()
	l := podLister(x)
	const n = 300
	for round := range 20 {
		for i := range n {
			lbls := []string{fmt.Sprint("app=a", (i+round)%7), fmt.Sprint("hash=", round*n+i)}
			if (i+round)%3 == 0 {
				lbls = append(lbls, "canary=true")
			}
			if (i+round)%5 == 0 {
				lbls = lbls[1:] // drop app
			}
			if err := x.Update(testobj.Pod(fmt.Sprint("ns-", i%4), fmt.Sprint("p-", i), strconv.Itoa(round), lbls...)); err != nil {
				t.Fatal(err)
			}
		}
		if round%4 == 3 {
			for i := 0; i < n; i += 7 {
				x.Delete(testobj.Pod(fmt.Sprint("ns-", i%4), fmt.Sprint("p-", i), ""))
			}
		}
		checkLabelIndex(t, round, x)
		for _, s := range []string{"app=a3", "app=a3,canary", "canary,!app", fmt.Sprint("hash=", round*n+5), "app notin (a1),canary"} {
			sel, _ := labels.Parse(s)
			for _, ns := range []string{"", "ns-2"} {
				got, _ := l.ByNamespace(ns).List(sel)
				checkEqual(t, round, s+" in "+ns, sortedPods(got), sortedPods(scanSelect(x, ns, sel)))
			}
		}
	}
	for i := range n {
		x.Delete(testobj.Pod(fmt.Sprint("ns-", i%4), fmt.Sprint("p-", i), ""))
	}
	checkLabelIndex(t, -1, x)
	if len(x.labels.keys) != 0 {
		t.Errorf("empty store: label index still has %d keys", len(x.labels.keys))
	}
}

// scanSelect is the reference: every object tested with Selector.Matches.
func scanSelect(x *Indexer[*corev1.Pod], namespace string, sel labels.Selector) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range x.All() {
		if (namespace == "" || p.Namespace == namespace) && (sel == nil || sel.Matches(labels.Set(p.Labels))) {
			out = append(out, p)
		}
	}
	return out
}

// checkLabelIndex checks the invariants of x's label index and that it
// holds exactly the labels of the stored objects.
func checkLabelIndex(t testing.TB, step int, x *Indexer[*corev1.Pod]) {
	t.Helper()
	x.mu.RLock()
	defer x.mu.RUnlock()
	li := x.labels
	if li == nil {
		return
	}
	ids := 0
	for sl := range x.arena.live {
		if x.arena.slot(sl.id) != sl {
			t.Fatalf("step %d: slot %q has id %d, arena.slot gives another", step, sl.key, sl.id)
		}
		want := sl.obj.Labels
		got := map[string]string{}
		{
			for _, r := range li.refsOf(sl.id) {
				val := li.val(r)
				if li.vals[val.vid] != val {
					t.Fatalf("step %d: %q: value id %d wrong", step, sl.key, val.vid)
				}
				if _, dup := got[val.key.name]; dup {
					t.Fatalf("step %d: %q indexed twice under %q", step, sl.key, val.key.name)
				}
				got[val.key.name] = val.value()
				if r.vpos >= val.n || val.at(r.vpos) != sl.id {
					t.Fatalf("step %d: %q: value posting position wrong", step, sl.key)
				}
				if li.keys[val.key.name] != val.key || val.key.vals[val.value()] != val {
					t.Fatalf("step %d: %q: label %s=%s not reachable from the index", step, sl.key, val.key.name, val.value())
				}
			}
			ids += len(li.refsOf(sl.id))
		}
		if diff := cmp.Diff(want, got, cmpEmptyMap); diff != "" {
			t.Fatalf("step %d: labels of %q (-object +index):\n%s", step, sl.key, diff)
		}
	}
	postings := 0
	for k, key := range li.keys {
		if key.n == 0 || k != key.name {
			t.Fatalf("step %d: key %q empty or misfiled", step, k)
		}
		n := 0
		for v, val := range key.vals {
			if val.n == 0 || v != val.value() || val.key != key {
				t.Fatalf("step %d: value %s=%s empty or misfiled", step, k, v)
			}
			n += int(val.n)
		}
		if n != key.n {
			t.Fatalf("step %d: key %q counts %d ids, its values hold %d", step, k, key.n, n)
		}
		postings += n
	}
	live := 0
	for _, val := range li.vals {
		if val != nil {
			live++
		}
	}
	nvals := 0
	for _, key := range li.keys {
		nvals += len(key.vals)
	}
	if live != nvals || live+len(li.freeVals) != len(li.vals) {
		t.Fatalf("step %d: %d value ids in use, %d free, of %d; the keys have %d values", step, live, len(li.freeVals), len(li.vals), nvals)
	}
	if postings != ids {
		t.Fatalf("step %d: postings hold %d ids, objects have %d labels", step, postings, ids)
	}
}

var cmpEmptyMap = cmp.Transformer("nonNil", func(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
})

// Select allocates nothing once its buffer is warm.
func TestLabelIndexSelectAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers")
	}
	x := newLabelIndexer()
	for i := range 1000 {
		x.Add(testobj.Pod(fmt.Sprint("ns-", i%10), fmt.Sprint("p-", i), "", fmt.Sprint("app=a", i%10), fmt.Sprint("g=", i%100), fmt.Sprint("n=", i)))
	}
	l := podLister(x)
	for _, s := range []string{"app=a3,g=3", "app in (a3,a4),n>5", "g=3,n", "app=a3,g!=13"} {
		sel, _ := labels.Parse(s)
		for _, ns := range []string{"", "ns-3"} {
			n := 0
			allocs := testing.AllocsPerRun(100, func() {
				for p := range l.ByNamespace(ns).Select(sel) {
					n += len(p.Name)
				}
			})
			if n == 0 {
				t.Errorf("%q in %q selected nothing", s, ns)
			}
			if allocs != 0 && s != "app in (a3,a4),n>5" { // in with two values copies them
				t.Errorf("%q in %q: %v allocations per query, want 0", s, ns, allocs)
			}
		}
	}
}

// The informer keeps a label index unless told not to.
func TestInformerLabelIndexOption(t *testing.T) {
	lw := &ListWatchFuncs[*corev1.Pod]{}
	for _, off := range []bool{false, true} {
		inf, err := NewSharedIndexInformer[*corev1.Pod](lw, SharedIndexInformerOptions[*corev1.Pod]{NoLabelIndex: off})
		if err != nil {
			t.Fatal(err)
		}
		if has := inf.GetIndexer().labels != nil; has == off {
			t.Errorf("NoLabelIndex=%v: label index present=%v", off, has)
		}
	}
}

// Random labels, objects and selectors of every operator; after every
// write, the answers of the index (Lister and Indexer, slice and iterator,
// in a namespace and in all) are compared with a full scan testing
// Selector.Matches, and with client-go's generated PodLister over a
// cache.Indexer given the same writes.
func runLabelIndexFuzz(t testing.TB, data []byte) {
	r := &opReader{data: data}
	typed := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]})
	indexed := false
	if r.intn(4) != 0 { // else the index is added later, to a populated store
		indexed = true
		if err := typed.AddLabelIndex(MetaLabelsFunc[*corev1.Pod]); err != nil {
			t.Fatal(err)
		}
	}
	upstream := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	ours, theirs := podLister(typed), corev1listers.NewPodLister(upstream)
	for step := 0; r.more(); step++ {
		switch op := r.intn(9); op {
		case 0, 1:
			p := fuzzLabelPod(r)
			checkErr(t, step, "Add", typed.Add(p), upstream.Add(p))
		case 2:
			p := fuzzLabelPod(r)
			checkErr(t, step, "Update", typed.Update(p), upstream.Update(p))
		case 3:
			p := fuzzLabelPod(r)
			checkErr(t, step, "Delete", typed.Delete(p), upstream.Delete(p))
		case 4:
			list := make([]*corev1.Pod, r.intn(8))
			for i := range list {
				list[i] = fuzzLabelPod(r)
			}
			checkErr(t, step, "Replace", typed.Replace(list, "1"), upstream.Replace(toAny(list), "1"))
		case 6:
			// A relist that keeps most cached objects (the same pointers),
			// as the informer's does after a 410: Store.patch, in place.
			list := typed.List()
			slices.SortFunc(list, func(a, b *corev1.Pod) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
			for i := range list {
				if r.intn(8) == 0 {
					list[i] = fuzzLabelPod(r) // changed, or another key
				}
			}
			if len(list) > 0 && r.intn(3) == 0 {
				list = slices.Delete(list, 0, 1) // one deleted
			}
			if r.intn(3) == 0 {
				list = append(list, fuzzLabelPod(r))
			}
			keys := make([]string, len(list))
			for i, p := range list {
				keys[i], _ = MetaNamespaceKeyFunc(p)
			}
			checkErr(t, step, "relist", typed.replace(list, keys, true), upstream.Replace(toAny(list), "1"))
		case 5:
			if !indexed {
				indexed = true
				if err := typed.AddLabelIndex(MetaLabelsFunc[*corev1.Pod]); err != nil {
					t.Fatal(err)
				}
			} else if err := typed.AddIndexers(Indexers[*corev1.Pod]{fmt.Sprint("x", step): appIndex}); err != nil {
				t.Fatal(err) // widens the arena under the label index
			}
		default:
			sel := fuzzSelector(r)
			ns := []string{metav1.NamespaceAll, "ns-a", "ns-b", "none"}[r.intn(4)]
			want := scanSelect(typed, ns, sel)
			ref, err := theirs.Pods(ns).List(sel)
			if err != nil {
				t.Fatal(err)
			}
			checkEqual(t, step, fmt.Sprintf("client-go lister %q in %q", sel, ns), sortedPods(want), sortedPods(ref))
			got, err := ours.ByNamespace(ns).List(sel)
			if err != nil {
				t.Fatal(err)
			}
			checkEqual(t, step, fmt.Sprintf("List %q in %q", sel, ns), sortedPods(got), sortedPods(want))
			checkEqual(t, step, fmt.Sprintf("Select %q in %q", sel, ns), sortedPods(collect(ours.ByNamespace(ns).Select(sel))), sortedPods(want))
			if ns == metav1.NamespaceAll && indexed {
				got, err := typed.BySelector(sel)
				if err != nil {
					t.Fatal(err)
				}
				checkEqual(t, step, fmt.Sprintf("BySelector %q", sel), sortedPods(got), sortedPods(want))
				checkEqual(t, step, fmt.Sprintf("BySelectorSeq %q", sel), sortedPods(collect2(typed.BySelectorSeq(sel))), sortedPods(want))
			}
		}
		checkLabelIndex(t, step, typed)
	}
}

var (
	fuzzLabelKeys   = []string{"app", "tier", "rank", "x.io/y", "zone", "a.b/c-d"} // more than refInline
	fuzzLabelValues = []string{"", "a", "b", "1", "10", "02"}
)

// fuzzLabelPod decodes a Pod of a small universe of keys with any subset
// of them as labels, of values of a small universe; one Pod in four has the
// very labels map of an earlier Pod (see opReader.maps).
func fuzzLabelPod(r *opReader) *corev1.Pod {
	r.rv++
	p := testobj.Pod([]string{"", "ns-a", "ns-b"}[r.intn(3)], "p"+strconv.Itoa(r.intn(6)), strconv.Itoa(r.rv))
	share := r.intn(4)
	if share == 0 && len(r.maps) > 0 {
		p.Labels = r.maps[r.intn(len(r.maps))]
		return p
	}
	if mask := r.intn(1 << len(fuzzLabelKeys)); mask != 0 {
		p.Labels = map[string]string{}
		for i, k := range fuzzLabelKeys {
			if mask&(1<<i) != 0 {
				p.Labels[k] = fuzzLabelValues[r.intn(len(fuzzLabelValues))]
			}
		}
		if share == 1 && len(r.maps) < 8 {
			r.maps = append(r.maps, p.Labels)
		}
	}
	return p
}

var fuzzOperators = []selection.Operator{
	selection.Equals, selection.DoubleEquals, selection.In, selection.Exists,
	selection.NotEquals, selection.NotIn, selection.DoesNotExist, selection.GreaterThan, selection.LessThan,
}

// fuzzSelector decodes a selector: Everything, Nothing, a set, an opaque
// one, or up to three requirements of any operator.
func fuzzSelector(r *opReader) labels.Selector {
	switch r.intn(10) {
	case 0:
		return labels.Everything()
	case 1:
		return labels.Nothing()
	case 2:
		return labels.ValidatedSetSelector{fuzzLabelKeys[r.intn(len(fuzzLabelKeys))]: fuzzLabelValues[r.intn(6)]}
	case 3:
		return opaqueSelector{labels.SelectorFromSet(labels.Set{fuzzLabelKeys[r.intn(len(fuzzLabelKeys))]: fuzzLabelValues[r.intn(6)]})}
	}
	sel := labels.NewSelector()
	for range 1 + r.intn(3) {
		op := fuzzOperators[r.intn(len(fuzzOperators))]
		var vals []string
		switch op {
		case selection.Exists, selection.DoesNotExist:
		case selection.In, selection.NotIn:
			for range 1 + r.intn(3) {
				vals = append(vals, fuzzLabelValues[r.intn(6)])
			}
		case selection.GreaterThan, selection.LessThan:
			vals = []string{[]string{"0", "1", "5"}[r.intn(3)]}
		default:
			vals = []string{fuzzLabelValues[r.intn(6)]}
		}
		req, err := labels.NewRequirement(fuzzLabelKeys[r.intn(len(fuzzLabelKeys))], op, vals)
		if err != nil {
			panic(err)
		}
		sel = sel.Add(*req)
	}
	return sel
}

func TestLabelIndexRandom(t *testing.T) {
	runRandomSequences(t, 3000, runLabelIndexFuzz)
}

func FuzzLabelIndex(f *testing.F) {
	f.Add([]byte{1, 0, 1, 7, 1, 2, 3, 6, 4, 0, 0, 2, 1})
	f.Add([]byte{0, 4, 5, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 6, 5, 4, 3, 7, 7, 7, 7})
	f.Fuzz(func(t *testing.T, data []byte) { runLabelIndexFuzz(t, data) })
}

// Queries run while a writer changes labels, replaces the store and adds
// indexes; -race checks the locking, and every answer must match its
// selector.
func TestLabelIndexConcurrent(t *testing.T) {
	x := newLabelIndexer()
	l := podLister(x)
	stop := inBackground(func(i int) {
		p := testobj.Pod(fmt.Sprint("ns-", i%3), fmt.Sprint("p-", i%50), "", fmt.Sprint("app=a", i%5), fmt.Sprint("g=", i%7))
		switch i % 100 {
		case 99:
			x.Replace([]*corev1.Pod{p}, "")
		case 98:
			x.AddIndexers(Indexers[*corev1.Pod]{fmt.Sprint("i", i): appIndex})
		case 97, 96, 95:
			x.Delete(p)
		default:
			x.Update(p)
		}
	})
	defer stop()
	sel, _ := labels.Parse("app=a1,g in (1,2),g!=2")
	for i := range 2000 {
		ns := []string{"", "ns-1"}[i%2]
		for p := range l.ByNamespace(ns).Select(sel) {
			if !sel.Matches(labels.Set(p.Labels)) || (ns != "" && p.Namespace != ns) {
				t.Fatalf("Select(%q) in %q yielded %s/%s %v", sel, ns, p.Namespace, p.Name, p.Labels)
			}
		}
		if _, err := l.List(sel); err != nil {
			t.Fatal(err)
		}
	}
}

// A posting against a slice: pushes and swap-removes (as unpost does) that
// cross the block boundaries both ways.
func TestLabelPostingBlocks(t *testing.T) {
	val := &labelVal{}
	var want []uint32
	check := func(step int) {
		t.Helper()
		if int(val.n) != len(want) {
			t.Fatalf("step %d: n = %d, want %d", step, val.n, len(want))
		}
		for p, id := range want {
			if got := val.at(uint32(p)); got != id {
				t.Fatalf("step %d: at(%d) = %d, want %d", step, p, got, id)
			}
		}
		var got []uint32
		for ids := range val.blocks {
			got = append(got, ids...)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: blocks hold %d ids, want %d", step, len(got), len(want))
		}
		if more := val.more(); more != nil {
			blocks := (len(want) - 1) / postBlock // the blocks of more in use
			if len(want) <= postBlock {
				blocks = 0
			}
			if spare := len(more) - blocks; spare > 1 {
				t.Fatalf("step %d: %d ids, %d blocks: more than one spare", step, len(want), len(more))
			}
		}
	}
	// sizes the posting goes to and back from, a step at a time.
	sizes := []int{3*postBlock + 5, 2 * postBlock, 2*postBlock - 10, 3*postBlock + 1, postBlock - 1, postBlock + 1, 10, 3 * postBlock, postBlock/2 + 1, 2 * postBlock, 0}
	next := uint32(0)
	step := 0
	for _, size := range sizes {
		for len(want) != size {
			if len(want) < size {
				val.push(next)
				want = append(want, next)
				next++
			} else {
				// Swap-remove at a position that moves around.
				p := uint32(step*7919) % val.n
				last := val.n - 1
				val.put(p, val.at(last))
				val.pop()
				want[p] = want[last]
				want = want[:last]
			}
			if step%97 == 0 || len(want)%postBlock <= 1 {
				check(step)
			}
			step++
		}
		check(step)
	}
	if val.ext != nil {
		t.Errorf("empty posting keeps its extension (%d blocks)", len(val.more()))
	}
}

// Postings larger than a block: objects share a label, change it and go in
// an order that moves ids across the blocks.
func TestLabelIndexLargePostings(t *testing.T) {
	x := newLabelIndexer()
	l := podLister(x)
	const n = 3*postBlock + 100
	pod := func(i int, lbls ...string) *corev1.Pod {
		return testobj.Pod(fmt.Sprint("ns-", i%3), fmt.Sprint("p-", i), "", lbls...)
	}
	for i := range n {
		if err := x.Add(pod(i, "all=yes", fmt.Sprint("half=", i%2))); err != nil {
			t.Fatal(err)
		}
	}
	checkLabelIndex(t, 0, x)
	for round := 1; round <= 3; round++ {
		for i := round; i < n; i += 3 + round {
			if round == 2 {
				x.Delete(pod(i))
			} else if err := x.Update(pod(i, "all=yes", fmt.Sprint("half=", (i+round)%2))); err != nil {
				t.Fatal(err)
			}
		}
		checkLabelIndex(t, round, x)
		for _, s := range []string{"all=yes", "half=1", "all,half=0", "half in (0,1),all=yes"} {
			sel, _ := labels.Parse(s)
			for _, ns := range []string{"", "ns-1"} {
				got, _ := l.ByNamespace(ns).List(sel)
				checkEqual(t, round, s+" in "+ns, sortedPods(got), sortedPods(scanSelect(x, ns, sel)))
			}
		}
	}
	for i := range n {
		x.Delete(pod(i))
	}
	checkLabelIndex(t, -1, x)
	if len(x.labels.keys) != 0 {
		t.Errorf("empty store: label index still has %d keys", len(x.labels.keys))
	}
}

// Objects whose number of labels goes above what a record holds in place
// and back, several times, in slots that are reused.
func TestLabelIndexManyLabels(t *testing.T) {
	x := newLabelIndexer()
	l := podLister(x)
	counts := []int{2, 9, 3, 17, 0, 5, 4, 33, 1}
	for round, c := range counts {
		for i := range 40 {
			var lbls []string
			for j := range c + i%3 {
				lbls = append(lbls, fmt.Sprintf("k%d=v%d", j, (i+j+round)%4))
			}
			p := testobj.Pod("ns", fmt.Sprint("p-", i), strconv.Itoa(round), lbls...)
			if i%5 == round%5 {
				x.Delete(p)
			} else if err := x.Update(p); err != nil {
				t.Fatal(err)
			}
		}
		checkLabelIndex(t, round, x)
		for _, s := range []string{"k0=v1", "k1,k4=v2", "k8 in (v0,v3)", "k16,!k30", "k2=v1,k0=v2"} {
			sel, _ := labels.Parse(s)
			got, _ := l.List(sel)
			checkEqual(t, round, s, sortedPods(got), sortedPods(scanSelect(x, "", sel)))
		}
	}
}

// Namespace-scoped selector queries, whose candidates from a posting are
// tested for their namespace, while objects keyed by name alone move between
// namespaces, some are in two at once (a NamespaceIndex func with two
// values), the NamespaceIndex arrives after the objects (AddIndexers) and
// Replace rebuilds the store: at every step the query agrees with a scan of
// the namespace's bucket.
func TestLabelIndexNamespaceMoves(t *testing.T) {
	nsFunc := func(p *corev1.Pod) ([]string, error) {
		if also := p.Annotations["also"]; also != "" {
			return []string{p.Namespace, also}, nil
		}
		return []string{p.Namespace}, nil
	}
	x := NewIndexer(func(p *corev1.Pod) (string, error) { return p.Name, nil }, nil)
	if err := x.AddLabelIndex(MetaLabelsFunc[*corev1.Pod]); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(13, 7))
	namespaces := []string{"a", "b", "c"}
	pod := func() *corev1.Pod {
		var ls []string
		if rng.IntN(3) > 0 {
			ls = append(ls, "app="+[]string{"x", "y"}[rng.IntN(2)])
		}
		if rng.IntN(2) == 0 {
			ls = append(ls, "tier="+[]string{"1", "2"}[rng.IntN(2)])
		}
		p := testobj.Pod(namespaces[rng.IntN(3)], fmt.Sprintf("p-%d", rng.IntN(40)), "", ls...)
		if rng.IntN(5) == 0 {
			p.Annotations = map[string]string{"also": namespaces[rng.IntN(3)]}
		}
		return p
	}
	selectors := []string{"app=x", "app=x,tier=1", "tier", "app in (x,y)", "app=y,tier!=2"}
	check := func(step int) {
		t.Helper()
		if _, ok := x.idx.Load().posOf(NamespaceIndex); !ok {
			return
		}
		l := podLister(x)
		for _, ns := range append(namespaces, "missing") {
			inNS, err := x.ByIndex(NamespaceIndex, ns)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range selectors {
				sel, err := labels.Parse(s)
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, p := range inNS {
					if sel.Matches(labels.Set(p.Labels)) {
						want = append(want, p.Namespace+"/"+p.Name)
					}
				}
				slices.Sort(want)
				got, err := l.ByNamespace(ns).List(sel)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, selectedKeys(got)); diff != "" {
					t.Fatalf("step %d: ByNamespace(%q).List(%q) (-want +got):\n%s", step, ns, s, diff)
				}
				if diff := cmp.Diff(want, selectedKeys(collect(l.ByNamespace(ns).Select(sel)))); diff != "" {
					t.Fatalf("step %d: ByNamespace(%q).Select(%q) (-want +got):\n%s", step, ns, s, diff)
				}
			}
		}
	}
	for step := range 2000 {
		switch r := rng.IntN(100); {
		case step == 100:
			if err := x.AddIndexers(Indexers[*corev1.Pod]{NamespaceIndex: nsFunc}); err != nil {
				t.Fatal(err)
			}
		case r < 2:
			list := make([]*corev1.Pod, rng.IntN(30))
			for i := range list {
				list[i] = pod()
			}
			if err := x.Replace(list, ""); err != nil {
				t.Fatal(err)
			}
		case r < 25:
			if err := x.Delete(pod()); err != nil {
				t.Fatal(err)
			}
		default:
			if err := x.Add(pod()); err != nil {
				t.Fatal(err)
			}
		}
		check(step)
	}
}

// Values up to valInline bytes live in their labelVal, longer ones in a
// clone; neither shares the object's memory, and an object whose label
// strings are later overwritten in place (a reused decoding buffer) does
// not change what the index holds or answers.
func TestLabelIndexValueStorage(t *testing.T) {
	x := newLabelIndexer()
	values := []string{"", "a", strings.Repeat("b", valInline), strings.Repeat("c", valInline+1), strings.Repeat("d", 63)}
	bufs := make([][]byte, len(values))
	for i, v := range values {
		bufs[i] = []byte(v)
		// The object's value aliases bufs[i], as a zero-copy decoder's would.
		p := testobj.Pod("ns", fmt.Sprint("p-", i), "1")
		p.Labels = map[string]string{"k": unsafe.String(unsafe.SliceData(bufs[i]), len(bufs[i]))}
		if err := x.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	for i, v := range values {
		val := x.labels.keys["k"].vals[v]
		if val == nil || val.value() != v {
			t.Fatalf("value %q: not indexed as itself", v)
		}
		data := unsafe.StringData(val.value())
		inline := len(v) > 0 && len(v) <= valInline
		if got := len(v) > 0 && data == &val.buf[0]; got != inline {
			t.Errorf("value of %d bytes kept in its labelVal: %v, want %v", len(v), got, inline)
		}
		if len(v) > 0 && data == unsafe.SliceData(bufs[i]) {
			t.Errorf("value of %d bytes shares the object's memory", len(v))
		}
	}
	for _, b := range bufs {
		for j := range b {
			b[j] = 'z'
		}
	}
	l := podLister(x)
	for i, v := range values {
		got, err := l.List(labels.SelectorFromSet(labels.Set{"k": v}))
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{fmt.Sprint("ns/p-", i)}; !slices.Equal(selectedKeys(got), want) {
			t.Errorf("k=%q after the objects' strings were overwritten: %v, want %v", v, selectedKeys(got), want)
		}
	}
}

// A labelVal is one cache line: a write or a delete of a label touches one
// line for its value, which a new field would silently make two.
func TestLabelValSize(t *testing.T) {
	if n := unsafe.Sizeof(labelVal{}); n != 64 {
		t.Fatalf("labelVal is %d bytes, want 64", n)
	}
}

// checkRawLabels checks that li indexes each id of want with its labels,
// and no other id.
func checkRawLabels(t *testing.T, step string, li *labelIndex, want map[uint32]map[string]string) {
	t.Helper()
	total := 0
	for id, labels := range want {
		got := map[string]string{}
		for _, r := range li.refsOf(id) {
			val := li.val(r)
			if val == nil || r.vpos >= val.n || val.at(r.vpos) != id {
				t.Fatalf("%s: id %d: a ref points at another posting", step, id)
			}
			got[val.key.name] = val.value()
		}
		if diff := cmp.Diff(labels, got, cmpEmptyMap); diff != "" {
			t.Fatalf("%s: labels of id %d (-want +index):\n%s", step, id, diff)
		}
		total += len(labels)
	}
	postings := 0
	for _, key := range li.keys {
		postings += key.n
	}
	if postings != total {
		t.Fatalf("%s: postings hold %d ids, the objects have %d labels", step, postings, total)
	}
}

// Two maps whose addresses fall in one slot of the memo take turns in it:
// the one remembered last is posted from it, the other label by label, and
// the index is the same either way.
func TestLabelIndexMemoSlot(t *testing.T) {
	li := newLabelIndex()
	li.set(0, map[string]string{"app": "web"})
	// Of memoSize+1 maps alive at once, two share a slot.
	var c1, c2 map[string]string
	bySlot := map[*labelMemo]map[string]string{}
	for i := 0; c2 == nil; i++ {
		m := map[string]string{"app": "web", "n": fmt.Sprint(i % 3)}
		slot := li.memoAt(m)
		if prev, ok := bySlot[slot]; ok {
			c1, c2 = prev, m
		}
		bySlot[slot] = m
	}
	want := map[uint32]map[string]string{0: {"app": "web"}}
	set := func(id uint32, m map[string]string) {
		li.set(id, m)
		want[id] = m
	}
	set(1, c1)
	set(2, c1) // c1 remembered
	if !li.postMemo(3, li.record(3), c1) {
		t.Fatal("c1, seen twice, was not remembered")
	}
	want[3] = c1
	set(4, c2)
	set(5, c2) // c2 takes the slot
	if li.postMemo(6, li.record(6), c1) {
		t.Fatal("c1 was posted from a slot c2 took")
	}
	if !li.postMemo(7, li.record(7), c2) {
		t.Fatal("c2, seen twice, was not remembered")
	}
	want[7] = c2
	set(6, c1) // label by label, and c1 again in the slot (first sighting)
	checkRawLabels(t, "one slot", li, want)
	for id := range want {
		li.remove(id)
	}
	if li.memo != nil {
		t.Fatal("the memo outlived the index's last label")
	}
}

// An id without labels is posted to the values its map was posted to last,
// when that map is the very one and its values are still indexed; an equal
// map elsewhere in memory, or values emptied since, are posted label by
// label.
func TestLabelIndexMemo(t *testing.T) {
	li := newLabelIndex()
	a := map[string]string{"app": "web", "tier": "db", "zone": "z1", "rank": "1", "x.io/y": "v"} // more than refInline
	small := map[string]string{"app": "web"}
	want := map[uint32]map[string]string{}
	set := func(id uint32, m map[string]string) {
		li.set(id, m)
		want[id] = m
	}
	memo := func(id uint32, m map[string]string) bool {
		if li.postMemo(id, li.record(id), m) {
			want[id] = m
			return true
		}
		return false
	}
	set(0, a)
	if memo(1, a) {
		t.Fatal("a map seen once was posted from the memo")
	}
	set(1, a)
	if !memo(13, a) {
		t.Fatal("a map seen twice was not remembered")
	}
	li.remove(13)
	delete(want, 13)
	checkRawLabels(t, "shared", li, want)
	li.remove(1)
	delete(want, 1)
	// small and eq are remembered side by side below: two maps whose
	// addresses fall in one slot of the memo take turns in it (see
	// TestLabelIndexMemoSlot), so eq is made until its slot is not small's.
	var eq map[string]string
	for eq == nil || li.memoAt(eq) == li.memoAt(small) {
		eq = map[string]string{"app": "web", "tier": "db", "zone": "z1", "rank": "1", "x.io/y": "v"}
	}
	if memo(2, eq) {
		t.Fatal("an equal map at another address was posted from a's memo")
	}
	set(2, eq)
	set(3, small)
	set(4, small)
	set(5, eq)
	if !memo(14, small) || !memo(15, eq) {
		t.Fatal("maps posted whole were not remembered")
	}
	for _, id := range []uint32{14, 15} {
		li.remove(id)
		delete(want, id)
	}
	checkRawLabels(t, "equal maps", li, want)
	for _, id := range []uint32{0, 2, 5} {
		li.remove(id) // tier=db and the others are emptied and let go
		delete(want, id)
	}
	set(6, map[string]string{"tier": "web", "zone": "z2"}) // takes value ids let go
	if memo(7, a) {
		t.Fatal("a's memo was used after its values were let go")
	}
	set(7, a)
	set(8, nil)
	if memo(9, nil) || memo(9, map[string]string{}) {
		t.Fatal("an empty map was posted from the memo")
	}
	checkRawLabels(t, "after removals", li, want)
	// a changes id 3's labels: compared and changed, not posted whole
	set(3, a)
	set(16, a)
	if !memo(10, a) {
		t.Fatal("a's memo was lost")
	}
	checkRawLabels(t, "changed", li, want)
	big := map[string]string{}
	for i := range memoVals + 1 {
		big[fmt.Sprint("k", i)] = "v"
	}
	set(11, big)
	if memo(12, big) {
		t.Fatalf("a map of more than %d labels was remembered", memoVals)
	}
	set(12, big)
	checkRawLabels(t, "large", li, want)
	for id := range want {
		li.remove(id)
	}
	if li.memo != nil || li.memoBytes() != 0 {
		t.Fatal("the memo outlived the index's last label")
	}
}
