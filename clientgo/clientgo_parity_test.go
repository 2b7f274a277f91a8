package clientgo

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
)

// TestRemoveForeignRegistration: another informer's registration is an
// error wrapping ErrForeignRegistration, and its handler goes on (it used
// to be stopped, silently, while still registered).
func TestRemoveForeignRegistration(t *testing.T) {
	srcB := informertest.NewSource(pod("b", "y", nil))
	a, b := newAdapted(t, informertest.NewSource(pod("a", "x", nil))), newAdapted(t, srcB)
	rec := newCalls()
	regB, err := b.AddEventHandler(rec.handler())
	if err != nil {
		t.Fatal(err)
	}
	start(t, a)
	start(t, b)
	rec.waitFor(t, 1) // add y true
	if err := a.RemoveEventHandler(regB); !errors.Is(err, ErrForeignRegistration) {
		t.Errorf("RemoveEventHandler with another informer's registration = %v, want ErrForeignRegistration", err)
	}
	if err := cache.ShutDownEventHandler(a, regB); !errors.Is(err, ErrForeignRegistration) {
		t.Errorf("ShutDownEventHandler with another informer's registration = %v, want ErrForeignRegistration", err)
	}
	if _, err := srcB.Add(pod("b", "z", nil)); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, 2) // add z false: B's handler still gets B's events
}

// TestLastStoreSyncResourceVersionOnWrites: the adapter records the
// resource version of every write, as client-go's store does.
func TestLastStoreSyncResourceVersionOnWrites(t *testing.T) {
	ours := Indexer(informer.NewIndexer(informer.MetaNamespaceKeyFunc[*corev1.Pod], nil))
	theirs := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{})
	withRV := func(name, rv string) *corev1.Pod {
		p := pod("a", name, nil)
		p.ResourceVersion = rv
		return p
	}
	steps := []struct {
		name  string
		write func(cache.Indexer) error
	}{
		{"Replace(rv 3)", func(x cache.Indexer) error { return x.Replace(nil, "3") }},
		{"Add(rv 5)", func(x cache.Indexer) error { return x.Add(withRV("web", "5")) }},
		{"Update(rv 7)", func(x cache.Indexer) error { return x.Update(withRV("web", "7")) }},
		{"Add(rv 8)", func(x cache.Indexer) error { return x.Add(withRV("db", "8")) }},
		{"Delete(rv 9)", func(x cache.Indexer) error { return x.Delete(withRV("db", "9")) }},
		{"Delete(a tombstone by key)", func(x cache.Indexer) error { return x.Delete(cache.DeletedFinalStateUnknown{Key: "a/web"}) }},
		{"Bookmark(12)", func(x cache.Indexer) error { x.Bookmark("12"); return nil }},
		{"Add(no rv)", func(x cache.Indexer) error { return x.Add(withRV("cache", "")) }},
	}
	for _, st := range steps {
		errO, errT := st.write(ours), st.write(theirs)
		if (errO == nil) != (errT == nil) {
			t.Fatalf("%s: ours %v, client-go's %v", st.name, errO, errT)
		}
		if got, want := ours.LastStoreSyncResourceVersion(), theirs.LastStoreSyncResourceVersion(); got != want {
			t.Errorf("after %s: LastStoreSyncResourceVersion = %q, client-go's %q", st.name, got, want)
		}
	}
}

// TestExplicitKeyAndBareTombstone: Get and Delete take a cache.ExplicitKey
// or a tombstone without its object for the key alone, as client-go's key
// functions do (both used to be ErrWrongType).
func TestExplicitKeyAndBareTombstone(t *testing.T) {
	ours := Indexer(informer.NewIndexer(informer.MetaNamespaceKeyFunc[*corev1.Pod], nil))
	theirs := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{})
	for _, x := range []cache.Indexer{ours, theirs} {
		for _, p := range []*corev1.Pod{pod("a", "web", nil), pod("a", "db", nil)} {
			if err := x.Add(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, key := range []any{cache.ExplicitKey("a/web"), cache.ExplicitKey("a/none"), cache.DeletedFinalStateUnknown{Key: "a/db"}} {
		itemT, okT, errT := theirs.Get(key)
		itemO, okO, errO := ours.Get(key)
		if okT != okO || (errT == nil) != (errO == nil) || podName(itemT) != podName(itemO) {
			t.Errorf("Get(%#v): ours (%s, %v, %v), client-go's (%s, %v, %v)", key, podName(itemO), okO, errO, podName(itemT), okT, errT)
		}
	}
	for _, key := range []any{cache.DeletedFinalStateUnknown{Key: "a/db"}, cache.DeletedFinalStateUnknown{Key: "a/none"}} {
		errT := theirs.Delete(key)
		errO := ours.Delete(key)
		if (errT == nil) != (errO == nil) {
			t.Errorf("Delete(%#v): ours %v, client-go's %v", key, errO, errT)
		}
	}
	if got, want := ours.ListKeys(), theirs.ListKeys(); len(got) != 1 || len(want) != 1 || got[0] != want[0] {
		t.Errorf("keys left: ours %v, client-go's %v", got, want)
	}
}

func podName(obj any) string {
	if p, ok := obj.(*corev1.Pod); ok {
		return p.Name
	}
	return "none"
}

// TestSharedIndexInformerUnstructured: an informer of
// *unstructured.Unstructured (ForUnstructured's) adapts without a panic
// (client-go read the type of a nil *Unstructured).
func TestSharedIndexInformerUnstructured(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetNamespace("default")
	u.SetName("w")
	typed, err := informer.NewSharedIndexInformer(informertest.NewSource(u), informer.SharedIndexInformerOptions[*unstructured.Unstructured]{})
	if err != nil {
		t.Fatal(err)
	}
	inf := SharedIndexInformer(typed)
	stop := start(t, inf)
	defer stop()
	if !cache.WaitForCacheSync(t.Context().Done(), inf.HasSynced) {
		t.Fatal("not synced")
	}
	if _, ok, err := inf.GetStore().GetByKey("default/w"); !ok || err != nil {
		t.Errorf("GetByKey(default/w) = %v, %v", ok, err)
	}
}

// ListerWatcher keeps the ShardInfo a server that filtered a list by
// ShardSelector echoes, with the rest of the list metadata, so that a
// sharded informer over it knows the server filtered.
func TestListerWatcherKeepsShardInfo(t *testing.T) {
	info := &metav1.ShardInfo{Selector: "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"}
	lw := ListerWatcher[*corev1.Pod](&cache.ListWatch{ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "5", ShardInfo: info}, Items: []corev1.Pod{*pod("a", "x", nil)}}, nil
	}})
	page, err := lw.List(t.Context(), metav1.ListOptions{ShardSelector: info.Selector})
	if err != nil {
		t.Fatal(err)
	}
	if page.ResourceVersion != "5" || page.ShardInfo == nil || *page.ShardInfo != *info || len(page.Items) != 1 {
		t.Errorf("page %+v, want resourceVersion 5, the shard info %v and one Pod", page.ListMeta, info)
	}
}
