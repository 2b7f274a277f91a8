package informer

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/typedkube/informer/internal/testobj"
)

func TestMetaNamespaceKeyFunc(t *testing.T) {
	tests := []struct {
		obj     *corev1.Pod
		want    string
		wantErr error
	}{
		{testobj.Pod("ns", "a", ""), "ns/a", nil},
		{testobj.Pod("", "node-1", ""), "node-1", nil},
		{testobj.Pod("ns", "", ""), "", ErrEmptyKey},
		{nil, "", ErrNilObject},
	}
	for _, tt := range tests {
		got, err := MetaNamespaceKeyFunc(tt.obj)
		if got != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
			t.Errorf("MetaNamespaceKeyFunc(%v) = %q, %v; want %q, %v", tt.obj, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestSplitMetaNamespaceKey(t *testing.T) {
	tests := []struct {
		key, ns, name string
		ok            bool
	}{
		{"ns/a", "ns", "a", true},
		{"a", "", "a", true},
		{"/a", "", "a", true},
		{"ns/", "ns", "", true},
		{"", "", "", true},
		{"a/b/c", "", "", false},
	}
	for _, tt := range tests {
		ns, name, err := SplitMetaNamespaceKey(tt.key)
		if ns != tt.ns || name != tt.name || (err == nil) != tt.ok {
			t.Errorf("SplitMetaNamespaceKey(%q) = %q, %q, %v", tt.key, ns, name, err)
		}
		if err != nil && !errors.Is(err, ErrInvalidKey) {
			t.Errorf("SplitMetaNamespaceKey(%q) error %v does not wrap ErrInvalidKey", tt.key, err)
		}
	}
}

// FuzzSplitMetaNamespaceKey checks that splitting and joining round-trip.
func FuzzSplitMetaNamespaceKey(f *testing.F) {
	for _, s := range []string{"ns/a", "a", "/", "a/b/c", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		ns, name, err := SplitMetaNamespaceKey(key)
		if err != nil {
			return
		}
		joined := name
		if ns != "" || len(key) > 0 && key[0] == '/' {
			joined = ns + "/" + name
		}
		if joined != key {
			t.Errorf("SplitMetaNamespaceKey(%q) = %q, %q, which joins to %q", key, ns, name, joined)
		}
	})
}

func TestKeyErrorUnwraps(t *testing.T) {
	boom := errors.New("boom")
	s := NewStore(func(*corev1.Pod) (string, error) { return "", boom })
	err := s.Add(testobj.Pod("ns", "a", "1"))
	var ke *KeyError[*corev1.Pod]
	if !errors.As(err, &ke) || !errors.Is(err, boom) || ke.Obj.Name != "a" {
		t.Fatalf("Add with a failing KeyFunc: %v, want a *KeyError wrapping boom", err)
	}
}

func TestStoreBadInput(t *testing.T) {
	idx := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{
		"fails": func(p *corev1.Pod) ([]string, error) {
			if p.Labels["bad"] != "" {
				return nil, errors.New("cannot index")
			}
			return []string{p.Name}, nil
		},
	})
	good := testobj.Pod("ns", "a", "1")
	if err := idx.Add(good); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		op   func() error
		want error
	}{
		{"Add nil", func() error { return idx.Add(nil) }, ErrNilObject},
		{"Update nil", func() error { return idx.Update(nil) }, ErrNilObject},
		{"Delete nil", func() error { return idx.Delete(nil) }, ErrNilObject},
		{"Get nil", func() error { _, _, err := idx.Get(nil); return err }, ErrNilObject},
		{"Replace with nil", func() error { return idx.Replace([]*corev1.Pod{good, nil}, "") }, ErrNilObject},
		{"Add no name", func() error { return idx.Add(testobj.Pod("ns", "", "1")) }, ErrEmptyKey},
		{"Replace no name", func() error { return idx.Replace([]*corev1.Pod{testobj.Pod("ns", "", "1")}, "") }, ErrEmptyKey},
		{"ByIndex unknown", func() error { _, err := idx.ByIndex("nope", "x"); return err }, ErrNoSuchIndex},
		{"IndexKeys unknown", func() error { _, err := idx.IndexKeys("nope", "x"); return err }, ErrNoSuchIndex},
		{"Index unknown", func() error { _, err := idx.Index("nope", good); return err }, ErrNoSuchIndex},
		{"Index nil", func() error { _, err := idx.Index("fails", nil); return err }, ErrNilObject},
		{"AddIndexers duplicate", func() error {
			return idx.AddIndexers(Indexers[*corev1.Pod]{"fails": appIndex})
		}, ErrIndexConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.op(); !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want one wrapping %v", err, tt.want)
			}
			if got := idx.List(); len(got) != 1 || got[0] != good {
				t.Fatalf("store changed: %v", got)
			}
		})
	}
	for range idx.ByIndexSeq("nope", "x") {
		t.Fatal("ByIndexSeq of an unknown index yielded something")
	}
	// A failing index function fails the write and leaves the store as it was.
	bad := testobj.Pod("ns", "a", "2", "bad=yes")
	for _, op := range []func(*corev1.Pod) error{idx.Add, idx.Update} {
		if err := op(bad); err == nil {
			t.Fatal("write with a failing index function succeeded")
		}
	}
	if err := idx.Replace([]*corev1.Pod{testobj.Pod("ns", "b", "1"), bad}, ""); err == nil {
		t.Fatal("Replace with a failing index function succeeded")
	}
	if err := idx.AddIndexers(Indexers[*corev1.Pod]{"also-fails": func(*corev1.Pod) ([]string, error) {
		return nil, errors.New("no")
	}}); err == nil {
		t.Fatal("AddIndexers with a failing index function succeeded")
	}
	if got, _ := idx.GetByKey("ns/a"); got != good {
		t.Fatalf("GetByKey after failed writes = %v, want the original", got)
	}
	if keys, _ := idx.IndexKeys("fails", "a"); !slices.Equal(keys, []string{"ns/a"}) {
		t.Fatalf("index after failed writes = %v", keys)
	}
	if _, ok := idx.GetIndexers()["also-fails"]; ok {
		t.Fatal("a failed AddIndexers left its index behind")
	}
}

func TestStoreMethods(t *testing.T) {
	s := NewStore(MetaNamespaceKeyFunc[*corev1.Pod])
	a1, a2, b := testobj.Pod("ns", "a", "1"), testobj.Pod("ns", "a", "2"), testobj.Pod("", "b", "1")
	steps := []struct {
		name string
		op   func() error
		want []*corev1.Pod
	}{
		{"add", func() error { return s.Add(a1) }, []*corev1.Pod{a1}},
		{"add cluster-scoped", func() error { return s.Add(b) }, []*corev1.Pod{a1, b}},
		{"update replaces", func() error { return s.Update(a2) }, []*corev1.Pod{a2, b}},
		{"delete by key of an older object", func() error { return s.Delete(a1) }, []*corev1.Pod{b}},
		{"delete missing is fine", func() error { return s.Delete(a1) }, []*corev1.Pod{b}},
		{"replace, last duplicate wins", func() error { return s.Replace([]*corev1.Pod{a1, b, a2}, "9") }, []*corev1.Pod{a2, b}},
		{"replace with nothing", func() error { return s.Replace(nil, "") }, nil},
	}
	for _, st := range steps {
		if err := st.op(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		checkEqual(t, 0, st.name+": List", sortedPods(s.List()), sortedPods(st.want))
		if s.Len() != len(st.want) {
			t.Fatalf("%s: Len = %d, want %d", st.name, s.Len(), len(st.want))
		}
		var keys []string
		for k := range s.Keys() {
			keys = append(keys, k)
		}
		checkEqual(t, 0, st.name+": Keys", sorted(keys), sorted(s.ListKeys()))
		for _, p := range st.want {
			got, ok, err := s.Get(p)
			if err != nil || !ok || got != p {
				t.Fatalf("%s: Get(%s) = %v, %v, %v", st.name, p.Name, got, ok, err)
			}
		}
	}
	if _, ok := s.GetByKey("ns/a"); ok {
		t.Fatal("GetByKey found a key after Replace(nil)")
	}
}

// TestIteratorsMayWrite checks that an iteration holds no lock while its
// body runs: the body can write to the store without deadlocking.
func TestIteratorsMayWrite(t *testing.T) {
	idx := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]})
	for i := range 10 {
		idx.Add(testobj.Pod("ns", fmt.Sprint(i), "1"))
	}
	n := 0
	for _, p := range idx.All() {
		idx.Delete(p)
		idx.Add(testobj.Pod("other", p.Name, "2"))
		n++
	}
	for k := range idx.ByIndexSeq(NamespaceIndex, "other") {
		idx.ByIndex(NamespaceIndex, "other")
		if _, ok := idx.GetByKey(k); !ok {
			t.Fatalf("ByIndexSeq yielded %q, not stored", k)
		}
	}
	if n != 10 || idx.Len() != 10 {
		t.Fatalf("iterated %d, Len %d; want 10 and 10", n, idx.Len())
	}
	// Breaking out early is fine and the next iteration starts afresh.
	for range idx.All() {
		break
	}
	if got := len(slices.Collect(idx.Keys())); got != 10 {
		t.Fatalf("Keys after a broken iteration yields %d keys", got)
	}
}

func TestIteratorsDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers")
	}
	idx := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]})
	for i := range 1000 {
		idx.Add(testobj.Pod(fmt.Sprint("ns-", i%10), fmt.Sprint(i), "1"))
	}
	n := 0
	all := testing.AllocsPerRun(100, func() {
		for range idx.All() {
			n++
		}
	})
	byIndex := testing.AllocsPerRun(100, func() {
		for range idx.ByIndexSeq(NamespaceIndex, "ns-3") {
			n++
		}
	})
	list := testing.AllocsPerRun(100, func() { n += len(idx.List()) })
	if all != 0 || byIndex != 0 || list != 1 {
		t.Errorf("allocations: All %v, ByIndexSeq %v, List %v; want 0, 0, 1", all, byIndex, list)
	}
}

// TestUnchangedIndexValuesDoNoIndexWork poisons the buckets of an index: an
// update that keeps the object's values must not touch them, and one that
// changes them must.
func TestUnchangedIndexValuesDoNoIndexWork(t *testing.T) {
	idx := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{"app": appIndex})
	idx.Add(testobj.Pod("ns", "a", "1", "app=x"))
	saved := idx.idx.Load().buckets[0]
	idx.idx.Load().buckets[0] = nil // writing a bucket now panics
	if err := idx.Update(testobj.Pod("ns", "a", "2", "app=x")); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("an update that changed the value did not touch the buckets")
			}
		}()
		idx.Update(testobj.Pod("ns", "a", "3", "app=y"))
	}()
	idx.idx.Load().buckets[0] = saved
}

// TestStoreConcurrent runs writers, readers and AddIndexers at once; -race
// checks the locking, and the end state must match what was written.
func TestStoreConcurrent(t *testing.T) {
	idx := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 300 {
				p := testobj.Pod(fmt.Sprint("ns-", w), fmt.Sprint(i%50), fmt.Sprint(i), fmt.Sprint("app=", i%3))
				if i%7 == 6 {
					idx.Delete(p)
				} else {
					idx.Update(p)
				}
			}
		})
	}
	wg.Go(func() {
		for range 200 {
			for range idx.All() {
			}
			idx.ByIndex(NamespaceIndex, "ns-1")
			idx.ByIndex("app", "1")
			idx.List()
		}
	})
	wg.Go(func() {
		if err := idx.AddIndexers(Indexers[*corev1.Pod]{"app": appIndex}); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	// Every stored object must be in exactly the buckets of its values.
	for _, name := range []string{NamespaceIndex, "app"} {
		n := 0
		for _, v := range idx.ListIndexFuncValues(name) {
			got, _ := idx.ByIndex(name, v)
			for _, p := range got {
				vals, _ := idx.GetIndexers()[name](p)
				if !slices.Contains(vals, v) {
					t.Errorf("%s bucket %q holds %s/%s with values %v", name, v, p.Namespace, p.Name, vals)
				}
			}
			n += len(got)
		}
		if want := idx.Len(); name == NamespaceIndex && n != want {
			t.Errorf("namespace buckets hold %d objects, store %d", n, want)
		}
	}
}

func TestIndexAndIndexSeq(t *testing.T) {
	idx := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{"tags": tagsIndex})
	a := testobj.Pod("ns", "a", "1", "tags=t1,t2")
	b := testobj.Pod("ns", "b", "1", "tags=t2")
	c := testobj.Pod("ns", "c", "1", "tags=t3")
	for _, p := range []*corev1.Pod{a, b, c} {
		idx.Add(p)
	}
	probe := testobj.Pod("ns", "probe", "1", "tags=t1,t2")
	got, err := idx.Index("tags", probe)
	if err != nil {
		t.Fatal(err)
	}
	checkEqual(t, 0, "Index", sortedPods(got), []*corev1.Pod{a, b})
	seq, err := idx.IndexSeq("tags", probe)
	if err != nil {
		t.Fatal(err)
	}
	var fromSeq []*corev1.Pod
	for k, p := range seq {
		if k != mustKey(p) {
			t.Fatalf("IndexSeq yielded key %q with %s", k, mustKey(p))
		}
		fromSeq = append(fromSeq, p)
	}
	checkEqual(t, 0, "IndexSeq", sortedPods(fromSeq), []*corev1.Pod{a, b})
	if _, err := idx.IndexSeq("nope", probe); !errors.Is(err, ErrNoSuchIndex) {
		t.Fatalf("IndexSeq of an unknown index: %v", err)
	}
	keys, _ := idx.IndexKeys("tags", "t2")
	if !slices.Equal(keys, []string{"ns/a", "ns/b"}) {
		t.Fatalf("IndexKeys = %v", keys)
	}
}

// TestAllDuringWrites iterates while the loop body and another goroutine
// add, delete and replace objects: every object stored for the whole
// iteration must be yielded exactly once.
func TestAllDuringWrites(t *testing.T) {
	s := NewStore(MetaNamespaceKeyFunc[*corev1.Pod])
	var stable []*corev1.Pod
	for i := range 1000 {
		p := testobj.Pod("stable", fmt.Sprint(i), "1")
		stable = append(stable, p)
		s.Add(p)
	}
	stop := inBackground(func(i int) {
		p := testobj.Pod("volatile", fmt.Sprint(i%300), "1")
		if i%3 == 0 {
			s.Delete(p)
		} else {
			s.Add(p)
		}
	})
	defer stop()
	for round := range 20 {
		seen := map[string]int{}
		i := 0
		for k := range s.All() {
			seen[k]++
			if i++; i%97 == 0 && round%4 == 0 {
				// A relist that keeps the stable objects.
				s.Replace(append(slices.Clone(stable), testobj.Pod("volatile", "r", "1")), "")
			}
		}
		for _, p := range stable {
			if n := seen[mustKey(p)]; n != 1 {
				t.Fatalf("round %d: stable key %s yielded %d times", round, mustKey(p), n)
			}
		}
	}
}

// A relist of the very same objects is applied in place: it allocates
// nothing per object, and the contents and indexes stay right when a few
// objects change.
func TestStoreRelistInPlace(t *testing.T) {
	x := newLabelIndexer()
	var list []*corev1.Pod
	var keys []string
	for i := range 1000 {
		p := testobj.Pod(fmt.Sprint("ns-", i%3), fmt.Sprint("p", i), "1")
		p.Labels = map[string]string{"app": fmt.Sprint("a", i%7)}
		list = append(list, p)
		keys = append(keys, p.Namespace+"/"+p.Name)
	}
	if err := x.replace(list, keys, true); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(10, func() {
		if err := x.replace(list, keys, true); err != nil {
			t.Fatal(err)
		}
	}); allocs > 5 {
		t.Errorf("a relist of 1000 unchanged objects allocates %v times, want a handful", allocs)
	}
	// A few changed, one gone, one new.
	changed := slices.Clone(list)
	changed[10] = testobj.Pod("ns-1", "p10", "2")
	changed[10].Labels = map[string]string{"app": "moved"}
	changed = slices.Delete(changed, 20, 21)
	extra := testobj.Pod("ns-0", "new", "2")
	extra.Labels = map[string]string{"app": "a0"}
	changed = append(changed, extra)
	ckeys := make([]string, len(changed))
	for i, p := range changed {
		ckeys[i] = p.Namespace + "/" + p.Name
	}
	if err := x.replace(changed, ckeys, true); err != nil {
		t.Fatal(err)
	}
	fresh := newLabelIndexer()
	if err := fresh.Replace(changed, "2"); err != nil {
		t.Fatal(err)
	}
	for _, sel := range []string{"app=moved", "app=a0", "app in (a1,a2)", ""} {
		s, _ := labels.Parse(sel)
		got, _ := x.BySelector(s)
		want, _ := fresh.BySelector(s)
		if d := cmp.Diff(selectedKeys(want), selectedKeys(got)); d != "" {
			t.Errorf("BySelector(%q) after an in-place relist (-rebuilt +in place):\n%s", sel, d)
		}
	}
	for _, ns := range []string{"ns-0", "ns-1", "ns-2"} {
		got, _ := x.ByIndex(NamespaceIndex, ns)
		want, _ := fresh.ByIndex(NamespaceIndex, ns)
		if d := cmp.Diff(selectedKeys(want), selectedKeys(got)); d != "" {
			t.Errorf("ByIndex(namespace, %q) (-rebuilt +in place):\n%s", ns, d)
		}
	}
	checkLabelIndex(t, 0, x)
}
