package informer

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestItemsOfCopies checks that list items are copied out of the list's
// array, so that a cached object does not keep its page alive.
func TestItemsOfCopies(t *testing.T) {
	items, err := itemsOf[*corev1.Pod](reflect.TypeFor[*corev1.Pod](), reflect.TypeFor[*corev1.PodList]())
	if err != nil {
		t.Fatal(err)
	}
	list := &corev1.PodList{Items: []corev1.Pod{{}, {}}}
	list.Items[0].Name, list.Items[1].Name = "a", "b"
	got := items(list)
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Fatalf("items = %v", got)
	}
	for i := range got {
		if got[i] == &list.Items[i] {
			t.Fatalf("item %d points into the list's array", i)
		}
	}
	if _, err := itemsOf[*corev1.Pod](reflect.TypeFor[*corev1.Pod](), reflect.TypeFor[*corev1.ConfigMapList]()); err == nil {
		t.Fatal("a list of other items was accepted")
	}
}
