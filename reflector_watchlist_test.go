package informer

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/wire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Namespaces and names whose keys order differently from the pairs they
// are made of ("a/x" is after "a-b/x", '/' being after '-'), and a
// cluster-scoped object's key, its name alone.
var (
	collectNamespaces = []string{"", "a", "a-b", "ab", "a/b"}
	collectNames      = []string{"x", "y", "x-1", "a", "a-b/x"}
)

// collectModel is what a watch-list stream's initial events leave, kept
// the plain way: the latest object of each key, the keys in the order they
// first came (again after a deletion).
type collectModel struct {
	objs  map[string]*corev1.Pod
	order []string
}

func (m *collectModel) apply(t watch.EventType, p *corev1.Pod) {
	key := p.Name
	if p.Namespace != "" {
		key = p.Namespace + "/" + p.Name
	}
	_, ok := m.objs[key]
	switch {
	case t == watch.Deleted && ok:
		delete(m.objs, key)
		m.order = slices.DeleteFunc(m.order, func(k string) bool { return k == key })
	case t == watch.Deleted:
	case ok:
		m.objs[key] = p
	default:
		m.objs[key] = p
		m.order = append(m.order, key)
	}
}

func (m *collectModel) list() []*corev1.Pod {
	var out []*corev1.Pod
	for _, k := range m.order {
		out = append(out, m.objs[k])
	}
	return out
}

// FuzzCollection checks a watch-list stream's collection against the model,
// in order and out of it: each byte pair is an event (its type, the
// object's key), each object told apart by its resource version. A type of
// 3 is an ADDED event whose object comes as a record (streamedRecord), as
// a compact store's source sends the initial ones.
func FuzzCollection(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 0, 3, 0, 4})           // ascending Adds
	f.Add([]byte{0, 4, 0, 2, 0, 3})                 // out of order
	f.Add([]byte{0, 1, 0, 1, 1, 1, 2, 1, 0, 1})     // a duplicate, a change, a deletion, an Add again
	f.Add([]byte{0, 5, 0, 10, 0, 15, 2, 10, 0, 20}) // across namespaces, then a deletion
	f.Add([]byte{3, 1, 3, 2, 3, 3, 3, 4})           // ascending records
	f.Add([]byte{0, 1, 0, 4, 2, 1, 3, 2, 3, 1})     // objects, a deletion, then records out of order
	f.Add([]byte{3, 3, 3, 1, 1, 3, 2, 1, 0, 7})     // records, a change and a deletion, an object
	types := []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Added}
	codec := wire.NewCompact(podDecoder(), 0)
	f.Fuzz(func(t *testing.T, ops []byte) {
		var got collection[*corev1.Pod]
		want := collectModel{objs: map[string]*corev1.Pod{}}
		for i := 0; i+1 < len(ops); i += 2 {
			typ := types[int(ops[i])%len(types)]
			k := int(ops[i+1]) % (len(collectNamespaces) * len(collectNames))
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
				Namespace:       collectNamespaces[k/len(collectNames)],
				Name:            collectNames[k%len(collectNames)],
				ResourceVersion: string(rune('A' + i/2)),
			}}
			if int(ops[i])%len(types) == 3 {
				got.applyRecord(streamedRecordOf(t, codec, p))
			} else if err := got.apply(typ, p); err != nil {
				t.Fatal(err)
			}
			want.apply(typ, p)
		}
		// An empty list is nil or not as deletions left it; both are empty.
		if w, g := want.list(), collected(t, &got); len(w)+len(g) > 0 {
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("collected (-want +got):\n%s", diff)
			}
		}
	})
}

// streamedRecordOf returns p as a compact store's source streams it: its
// record, made by codec of its protobuf, key and labels.
func streamedRecordOf(t testing.TB, codec *wire.Compact[*corev1.Pod], p *corev1.Pod) *streamedRecord[*corev1.Pod] {
	t.Helper()
	return &streamedRecord[*corev1.Pod]{e: listedRecords(t, codec, []*corev1.Pod{p}).items[0], codec: codec}
}

// collected returns the objects c holds, in order: its items, or its
// records decoded once one came; the two are never both held.
func collected(t testing.TB, c *collection[*corev1.Pod]) []*corev1.Pod {
	t.Helper()
	items, enc := c.list()
	if enc == nil {
		return items
	}
	if len(items) != 0 {
		t.Fatalf("collected %d objects beside %d records", len(items), enc.len())
	}
	objs, keys, err := enc.decoded()
	if err != nil {
		t.Fatal(err)
	}
	for i, obj := range objs {
		if k, _ := MetaNamespaceKeyFunc(obj); k != keys[i] {
			t.Errorf("record %d keyed %q holds %q", i, keys[i], k)
		}
	}
	return objs
}

// TestCollectionInOrderKeepsNoIndex checks that a stream whose objects come
// in the order of their keys, as an API server sends them, is collected
// without an index of keys, and that the first object out of order makes
// one that finds every object before it.
func TestCollectionInOrderKeepsNoIndex(t *testing.T) {
	pod := func(ns, name, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
	}
	var c collection[*corev1.Pod]
	in := []*corev1.Pod{pod("a-b", "x", "1"), pod("a", "x", "2"), pod("a", "y", "3"), pod("b", "a", "4"), pod("", "node-a", "5")}
	for _, p := range in {
		if err := c.apply(watch.Added, p); err != nil {
			t.Fatal(err)
		}
	}
	if c.index != nil {
		t.Fatalf("objects in key order made an index of %d keys", len(c.index))
	}
	again := pod("a", "x", "6") // the same key again: out of order
	if err := c.apply(watch.Added, again); err != nil {
		t.Fatal(err)
	}
	if len(c.index) != len(in) {
		t.Fatalf("the index has %d keys, want %d", len(c.index), len(in))
	}
	want := slices.Clone(in)
	want[1] = again
	if diff := cmp.Diff(want, collected(t, &c)); diff != "" {
		t.Errorf("collected (-want +got):\n%s", diff)
	}
}

// TestCollectionRecordsInOrderKeepNoIndex checks that records in the order
// of their keys are collected without an index too, after the objects that
// came before the first record, and that the collection then holds those
// objects as objects to encode.
func TestCollectionRecordsInOrderKeepNoIndex(t *testing.T) {
	pod := func(ns, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"}}
	}
	codec := wire.NewCompact(podDecoder(), 0)
	var c collection[*corev1.Pod]
	in := []*corev1.Pod{pod("a", "x"), pod("a", "y"), pod("b", "a"), pod("c", "a")}
	if err := c.apply(watch.Added, in[0]); err != nil {
		t.Fatal(err)
	}
	for _, p := range in[1:] {
		c.applyRecord(streamedRecordOf(t, codec, p))
	}
	if c.index != nil || len(c.items) != 0 {
		t.Fatalf("records in key order made an index of %d keys, %d objects held apart", len(c.index), len(c.items))
	}
	_, enc := c.list()
	if enc.len() != len(in) || !enc.items[0].decoded || enc.items[0].obj != in[0] || enc.items[1].rec == nil {
		t.Fatalf("collected %+v, want the first object as it came and records after it", enc)
	}
	if diff := cmp.Diff(in, collected(t, &c)); diff != "" {
		t.Errorf("collected (-want +got):\n%s", diff)
	}
}

// TestCollectionRefusesNoName checks that an object without a name is
// refused, in order or not, and changes nothing.
func TestCollectionRefusesNoName(t *testing.T) {
	var c collection[*corev1.Pod]
	if err := c.apply(watch.Added, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a"}}); !errors.Is(err, errNoKey) || !errors.Is(err, ErrEmptyKey) {
		t.Fatalf("apply: %v, want errNoKey and ErrEmptyKey", err)
	}
	if got := collected(t, &c); len(got) != 0 || c.index != nil {
		t.Fatalf("a refused object was collected: %v", got)
	}
}

// FuzzCompareKeys checks compareKeys against comparing the keys made.
func FuzzCompareKeys(f *testing.F) {
	f.Add("a", "x", "a-b", "x")
	f.Add("", "a/x", "a", "x")
	f.Add("a", "", "", "a/")
	f.Add("ab", "c", "a", "bc")
	f.Fuzz(func(t *testing.T, ans, aname, bns, bname string) {
		a := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ans, Name: aname}}
		b := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: bns, Name: bname}}
		key := func(p *corev1.Pod) string {
			if p.Namespace == "" {
				return p.Name
			}
			return strings.Join([]string{p.Namespace, p.Name}, "/")
		}
		if got, want := compareKeys(a, b), strings.Compare(key(a), key(b)); got != want {
			t.Errorf("compareKeys(%q, %q) = %d, want %d", key(a), key(b), got, want)
		}
	})
}
