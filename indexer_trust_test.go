package informer

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/typedkube/informer/internal/testobj"
)

// An index function that returns the same buffer on every call must not
// corrupt the index (issue 10, item 5): the sequence of the issue, compared
// with client-go's indexer given the same function. Before, ByIndex("app",
// "y") was empty after deleting a, and deleting b panicked.
func TestIndexerReusedBuffer(t *testing.T) {
	buf := make([]string, 1)
	ours := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{"app": func(p *corev1.Pod) ([]string, error) {
		buf[0] = p.Labels["app"]
		return buf, nil
	}})
	theirBuf := make([]string, 1)
	theirs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{"app": func(obj any) ([]string, error) {
		theirBuf[0] = obj.(*corev1.Pod).Labels["app"]
		return theirBuf, nil
	}})
	a, b := testobj.Pod("ns", "a", "", "app=x"), testobj.Pod("ns", "b", "", "app=y")
	check := func(step string) {
		t.Helper()
		for _, v := range []string{"x", "y"} {
			gotPods, err := ours.ByIndex("app", v)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]any, len(gotPods))
			for i, p := range gotPods {
				got[i] = p
			}
			want, err := theirs.ByIndex("app", v)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(podKeys(want), podKeys(got)); diff != "" {
				t.Errorf("%s: ByIndex(app, %s) (-client-go +ours):\n%s", step, v, diff)
			}
		}
		got, want := ours.ListIndexFuncValues("app"), theirs.ListIndexFuncValues("app")
		slices.Sort(got)
		slices.Sort(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: ListIndexFuncValues (-client-go +ours):\n%s", step, diff)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ours.Add(a))
	must(theirs.Add(a))
	must(ours.Add(b))
	must(theirs.Add(b))
	check("after adding a and b")
	must(ours.Delete(a))
	must(theirs.Delete(a))
	check("after deleting a")
	must(ours.Delete(b))
	must(theirs.Delete(b))
	check("after deleting b")
}

func podKeys(objs []any) []string {
	out := []string{}
	for _, o := range objs {
		switch p := o.(type) {
		case *corev1.Pod:
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	slices.Sort(out)
	return out
}

// A stored object whose namespace is changed in place (which callers must
// not do) and is then deleted by its original key leaves the namespace
// index consistent and does not panic: the index keeps its own copy of the
// values, not the object's memory that MetaNamespaceIndexFunc returns.
func TestIndexerMutatedObjectDeletedByKey(t *testing.T) {
	x := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]})
	p := testobj.Pod("a", "web", "")
	if err := x.Add(p); err != nil {
		t.Fatal(err)
	}
	p.Namespace = "b" // a mutation of a stored object
	if got, _ := x.ByIndex(NamespaceIndex, "a"); len(got) != 1 {
		t.Errorf("the mutation changed the index: ByIndex(a) has %d objects, want 1", len(got))
	}
	if _, ok := x.deleteKey("a/web"); !ok {
		t.Fatal("deleteKey(a/web) found nothing")
	}
	for _, ns := range []string{"a", "b"} {
		if got, _ := x.ByIndex(NamespaceIndex, ns); len(got) != 0 {
			t.Errorf("ByIndex(%s) after the delete: %d objects", ns, len(got))
		}
	}
	if vals := x.ListIndexFuncValues(NamespaceIndex); len(vals) != 0 {
		t.Errorf("index values left: %q", vals)
	}
}
