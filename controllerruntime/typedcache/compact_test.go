package typedcache

import (
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/wire"
)

// A cache whose informers keep compact stores (Options.Informer.Compact:
// each object kept as its protobuf bytes, decoded on read) answers Get and
// List as one of decoded objects does: the same Pods, equal under go-cmp,
// for every list of TestList.
func TestCompactStore(t *testing.T) {
	compact := readFixture(t, cache.Options{}, Options{Informer: informer.InformerOptions{Compact: true}})
	decoded := readFixture(t, cache.Options{}, Options{})
	ctx := timeout(t)
	for _, key := range []client.ObjectKey{{Namespace: "a", Name: "web-1"}, {Namespace: "b", Name: "web-1"}} {
		var got, want corev1.Pod
		if err := compact.Get(ctx, key, &got); err != nil {
			t.Fatalf("Get %v from the compact cache: %v", key, err)
		}
		if err := decoded.Get(ctx, key, &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&want, &got); diff != "" {
			t.Errorf("Get %v (-decoded +compact):\n%s", key, diff)
		}
	}
	for _, opts := range [][]client.ListOption{
		nil,
		{client.InNamespace("a")},
		{client.MatchingLabels{"app": "web"}},
		{client.InNamespace("b"), client.MatchingLabels{"app": "web"}},
		{client.MatchingLabelsSelector{Selector: mustSelector(t, "app notin (web)")}},
	} {
		var got, want corev1.PodList
		if err := compact.List(ctx, &got, opts...); err != nil {
			t.Fatalf("List %v from the compact cache: %v", opts, err)
		}
		if err := decoded.List(ctx, &want, opts...); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(names(t, &want), names(t, &got)); diff != "" {
			t.Errorf("List %v (-decoded +compact):\n%s", opts, diff)
		}
		for i := range got.Items {
			if diff := cmp.Diff(&want.Items[i], &got.Items[i]); diff != "" {
				t.Errorf("List %v item %d (-decoded +compact):\n%s", opts, i, diff)
			}
		}
	}
}

// Every PartialObjectMetadata a compact cache hands out carries its kind,
// as controller-runtime's cache sets it and apiutil.GVKForObject needs it:
// unsafe reads and the objects handed to handlers, also once they have left
// the compact store's cache of decoded objects (wire.DecodedCacheSize).
func TestCompactMetadataKeepsKind(t *testing.T) {
	const n = wire.DecodedCacheSize + 200
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	for i := range n {
		create(t, srv, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: fmt.Sprintf("cm-%04d", i)}})
	}
	c := newTestCache(t, srv, scheme, cache.Options{}, Options{Informer: informer.InformerOptions{Compact: true}})
	start(t, c)
	ctx := timeout(t)
	want := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(want)
	inf, err := c.GetInformer(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var delivered, wrong int
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		mu.Lock()
		defer mu.Unlock()
		delivered++
		if m, ok := obj.(*metav1.PartialObjectMetadata); !ok || m.GroupVersionKind() != want {
			wrong++
		}
	}}); err != nil {
		t.Fatal(err)
	}
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("not synced")
	}
	for _, unsafe := range []bool{true, false} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
		if err := c.List(ctx, list, &client.ListOptions{UnsafeDisableDeepCopy: &unsafe}); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != n {
			t.Fatalf("listed %d, want %d", len(list.Items), n)
		}
		for i := range list.Items {
			if gvk := list.Items[i].GroupVersionKind(); gvk != want {
				t.Fatalf("unsafe %v: item %s has kind %v, want %v", unsafe, list.Items[i].Name, gvk, want)
			}
		}
	}
	eventually(t, "every object delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return delivered == n
	})
	if wrong > 0 {
		t.Errorf("%d of %d objects handed to a handler without their kind", wrong, n)
	}
}

// Get from a compact cache hands each reader an object of its own, also
// when the store decodes the object for that read alone rather than
// copying one it holds (informer.Store.GetByKeyOwned): two reads of a Pod
// are two objects, a write to one changes neither the other nor the
// cache, and siblings, whose labels the store's decoded objects share,
// come with labels of their own.
func TestCompactGetOwnsItsObject(t *testing.T) {
	const n = wire.DecodedCacheSize + 200 // more than the store keeps decoded
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	for i := range n {
		p := pod("a", fmt.Sprintf("web-%04d", i), "node-1", map[string]string{"app": "web", "tier": "front"})
		p.Annotations = map[string]string{"owner": "team-a"}
		create(t, srv, p)
	}
	c := newTestCache(t, srv, scheme, cache.Options{}, Options{Informer: informer.InformerOptions{Compact: true}})
	start(t, c)
	ctx := timeout(t)
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("not synced")
	}
	// Reading the Pods in order wraps the store's cache of decoded objects
	// around: the first ones are decoded again for their second read.
	get := func(i int) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: fmt.Sprintf("web-%04d", i)}, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for i := range n {
		first, second, sibling := get(i), get(i), get((i+1)%n)
		if diff := cmp.Diff(first, second); diff != "" {
			t.Fatalf("two reads of Pod %d differ (-first +second):\n%s", i, diff)
		}
		if first.GroupVersionKind() != corev1.SchemeGroupVersion.WithKind("Pod") {
			t.Fatalf("Pod %d read without its kind: %v", i, first.GroupVersionKind())
		}
		for _, m := range []map[string]string{second.Labels, sibling.Labels} {
			if reflect.ValueOf(first.Labels).Pointer() == reflect.ValueOf(m).Pointer() {
				t.Fatalf("Pod %d: two reads share a labels map", i)
			}
		}
		want := second.DeepCopy()
		first.Labels["app"] = "written"
		first.Annotations["owner"] = "written"
		first.Spec.Containers[0].Image = "written"
		if diff := cmp.Diff(want, second); diff != "" {
			t.Fatalf("a write to one read of Pod %d changed another (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff(want, get(i)); diff != "" {
			t.Fatalf("a write to a read of Pod %d changed the cache (-want +got):\n%s", i, diff)
		}
		if sibling.Labels["app"] != "web" {
			t.Fatalf("a write to Pod %d's labels changed Pod %d's", i, (i+1)%n)
		}
	}
}
