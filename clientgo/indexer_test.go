package clientgo

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
	"github.com/typedkube/informer/wire"
)

func pod(ns, name string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
}

func names(ps []*corev1.Pod) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Namespace + "/" + p.Name
	}
	slices.Sort(out)
	return out
}

// A generated lister reads our informer's cache through Indexer and answers
// as it does over client-go's own indexer holding the same objects.
func TestGeneratedListerOverOurCache(t *testing.T) {
	objs := []*corev1.Pod{
		pod("a", "web", map[string]string{"app": "web"}), pod("a", "db", map[string]string{"app": "db"}),
		pod("b", "web", map[string]string{"app": "web"}), pod("c", "job", nil),
	}
	src := informertest.NewSource(objs...)
	inf, err := informer.NewSharedIndexInformer(src, informer.SharedIndexInformerOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("cache.WaitForCacheSync on our informer failed")
	}

	ours := corev1listers.NewPodLister(Indexer(inf.GetIndexer()))
	ref := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range src.Objects() {
		if err := ref.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	theirs := corev1listers.NewPodLister(ref)
	for _, sel := range []labels.Selector{labels.Everything(), labels.SelectorFromSet(labels.Set{"app": "web"})} {
		got, err1 := ours.List(sel)
		want, err2 := theirs.List(sel)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if diff := cmp.Diff(names(want), names(got)); diff != "" {
			t.Errorf("List(%v) (-client-go +ours):\n%s", sel, diff)
		}
		for _, ns := range []string{"", "a", "b", "none"} {
			got, err1 := ours.Pods(ns).List(sel)
			want, err2 := theirs.Pods(ns).List(sel)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if diff := cmp.Diff(names(want), names(got)); diff != "" {
				t.Errorf("Pods(%q).List(%v) (-client-go +ours):\n%s", ns, sel, diff)
			}
		}
	}
	// The listers ask the namespace index with a bare ObjectMeta: it must be
	// answered from the index, not by the slow scan client-go falls back to
	// on an error.
	byNS, err := Indexer(inf.GetIndexer()).Index(cache.NamespaceIndex, &metav1.ObjectMeta{Namespace: "a"})
	if err != nil || len(byNS) != 2 {
		t.Errorf("Index(namespace, ObjectMeta{a}) = %d objects, %v; want 2", len(byNS), err)
	}
	if p, err := ours.Pods("a").Get("db"); err != nil || p.Name != "db" {
		t.Errorf("Get(a/db) = %v, %v", p, err)
	}
	if _, err := ours.Pods("a").Get("nope"); !apierrors.IsNotFound(err) {
		t.Errorf("Get(a/nope) = %v, want NotFound", err)
	}
}

// Writes, index functions and resource versions through the adapter.
func TestIndexerAdapter(t *testing.T) {
	x := informer.NewIndexer(informer.MetaNamespaceKeyFunc[*corev1.Pod], informer.Indexers[*corev1.Pod]{})
	a := Indexer(x)
	if err := a.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}); !errors.Is(err, ErrWrongType) {
		t.Errorf("Add of a ConfigMap: %v, want ErrWrongType", err)
	}
	if err := a.AddIndexers(cache.Indexers{"app": func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Labels["app"]}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	if err := a.Replace([]any{pod("a", "web", map[string]string{"app": "web"}), pod("a", "db", nil)}, "7"); err != nil {
		t.Fatal(err)
	}
	if rv := a.LastStoreSyncResourceVersion(); rv != "7" {
		t.Errorf("LastStoreSyncResourceVersion = %q, want 7", rv)
	}
	got, err := a.ByIndex("app", "web")
	if err != nil || len(got) != 1 || got[0].(*corev1.Pod).Name != "web" {
		t.Errorf("ByIndex(app, web) = %v, %v", got, err)
	}
	if vals, err := a.GetIndexers()["app"](pod("x", "y", map[string]string{"app": "z"})); err != nil || !slices.Equal(vals, []string{"z"}) {
		t.Errorf("GetIndexers()[app] = %v, %v", vals, err)
	}
	if err := a.Delete(cache.DeletedFinalStateUnknown{Key: "a/db", Obj: pod("a", "db", nil)}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := a.GetByKey("a/db"); ok {
		t.Error("a/db is still there after deleting its tombstone")
	}
	if keys := a.ListKeys(); !slices.Equal(keys, []string{"a/web"}) {
		t.Errorf("ListKeys = %v", keys)
	}
}

// podNameOnly is a projection of a Pod, for TestGenericListerOverProjection.
type podNameOnly struct {
	wire.Meta[podNameOnly]
}

// Over a projection's cache, which generated listers cannot read (they
// assert *corev1.Pod), client-go's generic lister works, as Indexer's doc
// says.
func TestGenericListerOverProjection(t *testing.T) {
	x := informer.NewIndexer(informer.MetaNamespaceKeyFunc[*podNameOnly], informer.Indexers[*podNameOnly]{informer.NamespaceIndex: informer.MetaNamespaceIndexFunc[*podNameOnly]})
	for _, name := range []string{"web", "db"} {
		p := &podNameOnly{}
		p.Namespace, p.Name = "a", name
		if err := x.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	lister := cache.NewGenericLister(Indexer(x), corev1.Resource("pods"))
	objs, err := lister.ByNamespace("a").List(labels.Everything())
	if err != nil || len(objs) != 2 {
		t.Fatalf("List = %v, %v; want the two projections", objs, err)
	}
	got, err := lister.ByNamespace("a").Get("web")
	if p, ok := got.(*podNameOnly); err != nil || !ok || p.Name != "web" {
		t.Errorf("Get(a/web) = %v, %v", got, err)
	}
}

// Index with a bare ObjectMeta runs the index function on an object of the
// cache's type carrying its namespace, name, labels and annotations: a
// built-in type's, a projection's wire.Meta and an unstructured object's.
func TestIndexWithBareMeta(t *testing.T) {
	query := &metav1.ObjectMeta{Namespace: "a", Name: "q", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"team": "x"}}
	key := func(ns, name, app, team string) string { return ns + "/" + name + " " + app + " " + team }
	indexers := func(get func(obj any) metav1.Object) cache.Indexers {
		return cache.Indexers{"meta": func(obj any) ([]string, error) {
			m := get(obj)
			return []string{key(m.GetNamespace(), m.GetName(), m.GetLabels()["app"], m.GetAnnotations()["team"])}, nil
		}}
	}
	want := key("a", "q", "web", "x")
	stored := func(a cache.Indexer, obj any) {
		t.Helper()
		if err := a.AddIndexers(indexers(func(obj any) metav1.Object { return obj.(metav1.Object) })); err != nil {
			t.Fatal(err)
		}
		if err := a.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		a    func() cache.Indexer
	}{
		{"a built-in type", func() cache.Indexer {
			a := Indexer(informer.NewIndexer(informer.MetaNamespaceKeyFunc[*corev1.Pod], informer.Indexers[*corev1.Pod]{}))
			stored(a, &corev1.Pod{ObjectMeta: *query})
			return a
		}},
		{"a projection", func() cache.Indexer {
			a := Indexer(informer.NewIndexer(informer.MetaNamespaceKeyFunc[*podNameOnly], informer.Indexers[*podNameOnly]{}))
			p := &podNameOnly{}
			p.Namespace, p.Name, p.Labels, p.Annotations = query.Namespace, query.Name, query.Labels, query.Annotations
			stored(a, p)
			return a
		}},
		{"unstructured", func() cache.Indexer {
			a := Indexer(informer.NewIndexer(informer.MetaNamespaceKeyFunc[*unstructured.Unstructured], informer.Indexers[*unstructured.Unstructured]{}))
			u := &unstructured.Unstructured{}
			u.SetNamespace(query.Namespace)
			u.SetName(query.Name)
			u.SetLabels(query.Labels)
			u.SetAnnotations(query.Annotations)
			stored(a, u)
			return a
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.a().Index("meta", query)
			if err != nil || len(got) != 1 {
				t.Fatalf("Index(meta, %s) = %d objects, %v; want 1", want, len(got), err)
			}
		})
	}
}
