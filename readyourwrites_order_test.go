package informer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// TestRecordApplied: what a batch of applied events does to the applied
// version. A watch's replay (ADDED events of a watch from "" or "0", in no
// order) moves it nowhere; the next event of another kind does. A relist
// that answered "0" or "" keeps the version from before it and leaves it
// there, whatever events follow, until a relist answers a version.
func TestRecordApplied(t *testing.T) {
	pod := func(rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: rv}}
	}
	add := func(rv string) event[*corev1.Pod] { return event[*corev1.Pod]{kind: evAdd, obj: pod(rv)} }
	replayed := func(rv string) event[*corev1.Pod] {
		return event[*corev1.Pod]{kind: evAdd, replayed: true, obj: pod(rv)}
	}
	update := func(rv string) event[*corev1.Pod] { return event[*corev1.Pod]{kind: evUpdate, obj: pod(rv)} }
	relist := func(rv string) event[*corev1.Pod] {
		return event[*corev1.Pod]{kind: evReplace, more: &eventMore[*corev1.Pod]{rv: rv}}
	}
	bookmark := func(rv string) event[*corev1.Pod] {
		return event[*corev1.Pod]{kind: evBookmark, more: &eventMore[*corev1.Pod]{rv: rv}}
	}
	type batch = []event[*corev1.Pod]
	for _, tc := range []struct {
		name            string
		batches         []batch
		wantRV          string
		wantUnversioned bool
	}{
		{"relist then changes", []batch{{relist("5"), add("6")}, {update("7")}}, "7", false},
		{"a replay moves nothing", []batch{{relist("5")}, {replayed("9"), replayed("7")}}, "5", false},
		{"until another kind of event", []batch{{relist("5")}, {replayed("9")}, {replayed("7"), update("10")}}, "10", false},
		{"unversioned list", []batch{{relist("0"), replayed("3")}}, "", true},
		{"unversioned list keeps the version from before", []batch{{relist("5")}, {relist("")}}, "5", true},
		{"nothing moves it after an unversioned list", []batch{{relist("5"), relist("0"), update("8")}, {bookmark("9"), add("10")}}, "5", true},
		{"until a list answers a version", []batch{{relist("0"), update("8")}, {relist("9"), update("11")}}, "11", false},
		{"the last relist of a batch counts", []batch{{relist("9"), update("11"), relist("0"), update("12")}}, "11", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a appliedVersion
			for _, b := range tc.batches {
				recordApplied(&a, b)
			}
			if a.rv != tc.wantRV || a.unversioned != tc.wantUnversioned {
				t.Errorf("applied %q, unversioned %v; want %q, %v", a.rv, a.unversioned, tc.wantRV, tc.wantUnversioned)
			}
		})
	}
}

// scriptedSource answers its lists with pages in turn (the last one for
// every list after it) and hands each watch it serves to the test.
type scriptedSource struct {
	mu      sync.Mutex // guards pages, lists
	pages   []*ListPage[*corev1.Pod]
	lists   int
	watches chan *watch.FakeWatcher
}

func (s *scriptedSource) List(context.Context, metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pages[min(s.lists, len(s.pages)-1)]
	s.lists++
	return &ListPage[*corev1.Pod]{Items: slices.Clone(p.Items), ListMeta: p.ListMeta}, nil
}

func (s *scriptedSource) Watch(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	w := watch.NewFake()
	select {
	case s.watches <- w:
		return w, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestWaitForResourceVersionUnversionedList: a source whose list answers
// resourceVersion "0" or "" (a fake; kube-apiserver never does) makes
// every wait for a version the cache has not applied fail at once with
// ErrUnversionedList, a wait blocked before that list included, whatever
// events follow, and the version applied before the list stays readable;
// a later list that answers a version ends it. Before, such a wait lasted
// until its context ended.
func TestWaitForResourceVersionUnversionedList(t *testing.T) {
	for _, listed := range []string{"0", ""} {
		t.Run(fmt.Sprintf("listed=%q", listed), func(t *testing.T) {
			a9 := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "9"}}
			src := &scriptedSource{
				pages: []*ListPage[*corev1.Pod]{
					{ListMeta: metav1.ListMeta{ResourceVersion: "5"}},
					{ListMeta: metav1.ListMeta{ResourceVersion: listed}},
					{Items: []*corev1.Pod{a9}, ListMeta: metav1.ListMeta{ResourceVersion: "9"}},
				},
				watches: make(chan *watch.FakeWatcher, 4),
			}
			inf, err := NewSharedIndexInformer[*corev1.Pod](src, SharedIndexInformerOptions[*corev1.Pod]{Reflector: ReflectorOptions{
				WatchList: WatchListOff,
				Backoff:   Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond},
			}})
			if err != nil {
				t.Fatal(err)
			}
			startInformer(t, inf)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if err := inf.WaitForResourceVersion(ctx, "5"); err != nil {
				t.Fatal(err)
			}
			expired := apierrors.NewResourceExpired("too old").ErrStatus
			checkUnversioned := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, ErrUnversionedList) || !errors.Is(err, ErrNotInOrder) || ctx.Err() != nil {
					t.Fatalf("%s: %v; want ErrUnversionedList (and ErrNotInOrder) at once", what, err)
				}
				if want := fmt.Sprintf("list answered resourceVersion %q", listed); !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %v; want it to say %s", what, err, want)
				}
			}

			// A wait for 9 blocks until the relist answers listed, then fails.
			waitErr := make(chan error, 1)
			go func() { waitErr <- inf.WaitForResourceVersion(ctx, "9") }()
			waitUntil(t, "the wait for 9 to block", func() bool {
				inf.applied.mu.Lock()
				defer inf.applied.mu.Unlock()
				return inf.applied.wake != nil
			})
			(<-src.watches).Error(&expired)
			checkUnversioned("the wait for 9 across the relist", <-waitErr)
			if err := inf.WaitForResourceVersion(ctx, "5"); err != nil {
				t.Errorf("the wait for 5, applied before the relist: %v", err)
			}

			// The watch from listed replays a@8 and then changes it: the
			// cache holds a@9, but nothing says what else it holds.
			w := <-src.watches
			w.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "8"}})
			w.Modify(a9)
			waitUntil(t, "ns/a@9 in the cache", func() bool {
				p, ok := inf.GetIndexer().GetByKey("ns/a")
				return ok && p.ResourceVersion == "9"
			})
			_, err = inf.Lister().AtLeast(ctx, "9")
			checkUnversioned("the wait for 9 after the watch's MODIFIED a@9", err)
			if rv, ok := inf.AppliedResourceVersion(); rv != "5" || !ok {
				t.Errorf("AppliedResourceVersion = %q, %v; want 5, true", rv, ok)
			}

			// A relist that answers a version ends it.
			w.Error(&expired)
			waitUntil(t, "the relist at 9 applied", func() bool { rv, _ := inf.AppliedResourceVersion(); return rv == "9" })
			if _, err := inf.Lister().AtLeast(ctx, "9"); err != nil {
				t.Errorf("the wait for 9 after the relist at 9: %v", err)
			}
		})
	}
}

// TestWaitForResourceVersionUnversionedWatchList: a watch-list stream whose
// initial-events-end bookmark says resourceVersion "0" counts as a list
// that answered "0": a wait fails at once with ErrUnversionedList rather
// than waiting for its context.
func TestWaitForResourceVersionUnversionedWatchList(t *testing.T) {
	src := &scriptedSource{pages: []*ListPage[*corev1.Pod]{{}}, watches: make(chan *watch.FakeWatcher, 4)}
	inf, err := NewSharedIndexInformer[*corev1.Pod](src, SharedIndexInformerOptions[*corev1.Pod]{Reflector: ReflectorOptions{WatchList: WatchListOn}})
	if err != nil {
		t.Fatal(err)
	}
	startInformer(t, inf)
	(<-src.watches).Action(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: "0", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"},
	}})
	waitUntil(t, "the informer synced", inf.HasSynced)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := inf.WaitForResourceVersion(ctx, "3"); !errors.Is(err, ErrUnversionedList) || ctx.Err() != nil {
		t.Errorf("wait for 3 after a stream that ended at \"0\": %v; want ErrUnversionedList at once", err)
	}
}
