package typedcache

import (
	"fmt"
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
