package informer

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
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
