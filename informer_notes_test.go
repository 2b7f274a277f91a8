package informer

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestReuseNotes: the processing goroutine's notifications are kept for the
// next batch when a full batch made them, however append grew them on the
// way (so that each batch does not make them again), and let go when a
// relist made one for each of many objects; what is kept is emptied, so
// that it holds no object.
func TestReuseNotes(t *testing.T) {
	fill := func(n int) []notification[*corev1.Pod] {
		var notes []notification[*corev1.Pod]
		for range n {
			notes = append(notes, notification[*corev1.Pod]{kind: nAdd, key: "ns/a", new: &corev1.Pod{}})
		}
		return notes
	}
	batch := fill(maxBatch)
	kept := reuseNotes(batch)
	if len(kept) != 0 || cap(kept) != cap(batch) {
		t.Fatalf("a full batch's notifications (cap %d) were not kept: len %d, cap %d", cap(batch), len(kept), cap(kept))
	}
	for i, n := range batch {
		if n.new != nil || n.key != "" {
			t.Fatalf("notification %d still holds %q", i, n.key)
		}
	}
	if got := reuseNotes(fill(10 * maxBatch)); got != nil {
		t.Errorf("a relist's notifications (cap %d) were kept", cap(got))
	}
}

// TestNoNotesWithoutHandlers: an informer no handler listens to (a cache
// read through its Lister alone, as many of a controller-runtime cache's
// are) applies adds, updates, deletes and relists to its cache and makes
// no notification of them, so that a relist of many objects neither builds
// one for each nor leaves them in the processing goroutine's buffer; the
// same events with a handler make one each.
func TestNoNotesWithoutHandlers(t *testing.T) {
	pod := func(name, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	for _, handlers := range []int{0, 1} {
		t.Run(fmt.Sprintf("handlers=%d", handlers), func(t *testing.T) {
			inf, err := NewSharedIndexInformer(ListerWatcher[*corev1.Pod](&ListWatchFuncs[*corev1.Pod]{}), SharedIndexInformerOptions[*corev1.Pod]{})
			if err != nil {
				t.Fatal(err)
			}
			if handlers > 0 {
				if _, err := inf.AddEventHandler(ResourceEventHandlerFuncs[*corev1.Pod]{}); err != nil {
					t.Fatal(err)
				}
			}
			inf.procMu.Lock()
			defer inf.procMu.Unlock()
			inf.current = inf.listeners // as Run sets it
			ctx := t.Context()
			events := []event[*corev1.Pod]{
				{kind: evAdd, key: "ns/a", obj: pod("a", "1")},
				{kind: evUpdate, key: "ns/a", obj: pod("a", "2")},
				{kind: evAdd, key: "ns/b", obj: pod("b", "3")},
				{kind: evDelete, key: "ns/b", obj: pod("b", "3")},
				{kind: evReplace, more: &eventMore[*corev1.Pod]{list: []*corev1.Pod{pod("c", "4"), pod("d", "5")}, keys: []string{"ns/c", "ns/d"}, rv: "5"}},
				{kind: evReplace, more: &eventMore[*corev1.Pod]{list: []*corev1.Pod{pod("c", "6")}, keys: []string{"ns/c"}, rv: "6"}},
			}
			// With a handler: add, update, add, delete; a delete of ns/a and
			// two adds; a delete of ns/d and an update of ns/c.
			want := map[int]int{0: 0, 1: 9}[handlers]
			var notes []notification[*corev1.Pod]
			for i := range events {
				notes = inf.applyEvent(ctx, &events[i], false, notes)
			}
			if len(notes) != want {
				t.Errorf("%d notifications, want %d: %+v", len(notes), want, notes)
			}
			if keys := inf.indexer.ListKeys(); len(keys) != 1 || keys[0] != "ns/c" {
				t.Errorf("the cache holds %v, want [ns/c]", keys)
			}
			if got, _ := inf.indexer.GetByKey("ns/c"); got == nil || got.ResourceVersion != "6" {
				t.Errorf("ns/c is %v, want the relist's (resource version 6)", got)
			}
		})
	}
}
