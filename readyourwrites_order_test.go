package informer

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// fakeWatchSource lists page and then serves w: a source whose versions
// and replays the test chooses.
func fakeWatchSource(page *ListPage[*corev1.Pod], w watch.Interface) ListerWatcher[*corev1.Pod] {
	return ListWatchFuncs[*corev1.Pod]{
		ListFunc: func(context.Context, metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
			return page, nil
		},
		WatchFunc: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return w, nil },
	}
}

// TestAppliedVersionKeepsComparable: once the cache has applied version 5,
// an event whose version cannot be compared does not replace it, and a
// wait for a version up to 5 returns (it used to be replaced, and the wait
// to last until its context ended).
func TestAppliedVersionKeepsComparable(t *testing.T) {
	fw := watch.NewFake()
	page := &ListPage[*corev1.Pod]{ListMeta: metav1.ListMeta{ResourceVersion: "5"}}
	inf, err := NewSharedIndexInformer(fakeWatchSource(page, fw), SharedIndexInformerOptions[*corev1.Pod]{Reflector: ReflectorOptions{WatchList: WatchListOff}})
	if err != nil {
		t.Fatal(err)
	}
	startInformer(t, inf)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := inf.WaitForResourceVersion(ctx, "5"); err != nil {
		t.Fatal(err)
	}
	fw.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "x6"}})
	waitUntil(t, "ns/a in the cache", func() bool { _, ok := inf.GetIndexer().GetByKey("ns/a"); return ok })
	if rv, _ := inf.AppliedResourceVersion(); rv != "5" {
		t.Errorf("AppliedResourceVersion = %q after an event at x6, want 5", rv)
	}
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	if err := inf.WaitForResourceVersion(short, "3"); err != nil {
		t.Errorf("wait for 3 once 5 was applied: %v", err)
	}
	// A comparable version replaces one that is not.
	var a appliedVersion
	a.advance("x6")
	a.advance("4")
	a.advance("y7")
	if a.rv != "4" {
		t.Errorf("after x6, 4 and y7 the applied version is %q, want 4", a.rv)
	}
}

// TestReplayedAddsDoNotAdvance: a watch from "" (after a list that gave no
// resource version) starts with ADDED events for what exists, in no
// order. Their versions do not count as applied until another kind of
// event comes, as for the Reflector's own version: a wait for 7 does not
// return when b@9 is replayed while a@7 is still to come (it used to).
func TestReplayedAddsDoNotAdvance(t *testing.T) {
	fw := watch.NewFake()
	inf, err := NewSharedIndexInformer(fakeWatchSource(&ListPage[*corev1.Pod]{}, fw), SharedIndexInformerOptions[*corev1.Pod]{Reflector: ReflectorOptions{WatchList: WatchListOff}})
	if err != nil {
		t.Fatal(err)
	}
	startInformer(t, inf)
	waitUntil(t, "the informer synced", inf.HasSynced)
	fw.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", ResourceVersion: "9"}})
	waitUntil(t, "ns/b in the cache", func() bool { _, ok := inf.GetIndexer().GetByKey("ns/b"); return ok })
	if rv, ok := inf.AppliedResourceVersion(); ok {
		t.Errorf("AppliedResourceVersion = %q after a replayed add only; want none", rv)
	}
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := inf.WaitForResourceVersion(short, "7"); err == nil {
		_, has := inf.GetIndexer().GetByKey("ns/a")
		t.Errorf("WaitForResourceVersion(7) returned after the replay of b@9 alone (a@7 cached: %v)", has)
	}
	fw.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "7"}})
	fw.Modify(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "10"}})
	ctx, cancel2 := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel2()
	if err := inf.WaitForResourceVersion(ctx, "10"); err != nil {
		t.Fatalf("after the first modification: %v", err)
	}
	if _, ok := inf.GetIndexer().GetByKey("ns/a"); !ok {
		t.Error("version 10 applied, but ns/a is not cached")
	}
}
