package informer

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
// object's key), each object told apart by its resource version.
func FuzzCollection(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 0, 3, 0, 4})           // ascending Adds
	f.Add([]byte{0, 4, 0, 2, 0, 3})                 // out of order
	f.Add([]byte{0, 1, 0, 1, 1, 1, 2, 1, 0, 1})     // a duplicate, a change, a deletion, an Add again
	f.Add([]byte{0, 5, 0, 10, 0, 15, 2, 10, 0, 20}) // across namespaces, then a deletion
	types := []watch.EventType{watch.Added, watch.Modified, watch.Deleted}
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
			if err := got.apply(typ, p); err != nil {
				t.Fatal(err)
			}
			want.apply(typ, p)
		}
		// An empty list is nil or not as deletions left it; both are empty.
		if w, g := want.list(), got.list(); len(w)+len(g) > 0 {
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("collected (-want +got):\n%s", diff)
			}
		}
	})
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
	if diff := cmp.Diff(want, c.list()); diff != "" {
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
	if len(c.list()) != 0 || c.index != nil {
		t.Fatalf("a refused object was collected: %v", c.list())
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
