package informer_test

import (
	"context"
	"testing"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
)

// Stats.StoreBytes counts the cached objects as they come and go: more
// with more objects, and back to its value for an empty cache once the
// source deletes them all.
func TestStatsStoreBytes(t *testing.T) {
	src := informertest.NewSource[*corev1.Pod]()
	inf, err := informer.NewSharedIndexInformer[*corev1.Pod](src, informer.SharedIndexInformerOptions[*corev1.Pod]{Name: "pods"})
	if err != nil {
		t.Fatal(err)
	}
	empty := inf.Stats().StoreBytes
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitStats(t, inf, "the sync", func(st informer.Stats) bool { return st.Synced })
	pods := testobj.BenchPods(50, 2)
	for _, p := range pods {
		if _, err := src.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	full := waitStats(t, inf, "50 objects", func(st informer.Stats) bool { return st.Objects == 50 }).StoreBytes
	// A Pod of BenchPods holds a few KiB.
	if per := (full - empty) / 50; per < 1000 || per > 20000 {
		t.Errorf("StoreBytes counts %d bytes per Pod, want a few KiB (empty %d, full %d)", per, empty, full)
	}
	for _, p := range pods {
		if _, err := src.Delete(p); err != nil {
			t.Fatal(err)
		}
	}
	st := waitStats(t, inf, "no objects", func(st informer.Stats) bool { return st.Objects == 0 })
	if st.StoreBytes != empty {
		t.Errorf("StoreBytes is %d once every object is deleted, want %d, its value when empty", st.StoreBytes, empty)
	}
}
