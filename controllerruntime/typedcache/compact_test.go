package typedcache

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/typedkube/informer"
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
