package informertest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/typedkube/informer"
)

func pod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

// run starts an informer over src with a Recorder and waits for it to sync.
func run(t *testing.T, src informer.ListerWatcher[*corev1.Pod], opts informer.SharedIndexInformerOptions[*corev1.Pod]) (*informer.SharedIndexInformer[*corev1.Pod], *Recorder[*corev1.Pod], context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	inf, err := informer.NewSharedIndexInformer(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	rec := &Recorder[*corev1.Pod]{}
	reg, err := inf.AddEventHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	if err := informer.WaitForCacheSync(ctx, inf, reg); err != nil {
		t.Fatal(err)
	}
	return inf, rec, ctx
}

func must(t *testing.T) func(*corev1.Pod, error) *corev1.Pod {
	return func(obj *corev1.Pod, err error) *corev1.Pod {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return obj
	}
}

func summarize(calls []Call[*corev1.Pod]) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.String()
	}
	return out
}

// An informer in its default watch-list mode syncs on a Source from the
// watch-list stream alone, then sees every change in order.
func TestSourceWatchListSyncAndChanges(t *testing.T) {
	src := NewSource(pod("default", "a", nil), pod("default", "b", nil))
	inf, rec, ctx := run(t, src, informer.SharedIndexInformerOptions[*corev1.Pod]{})
	if src.Lists() != 0 {
		t.Errorf("the informer listed %d times; a watch-list stream should have been enough", src.Lists())
	}
	a := must(t)(src.Update(pod("default", "a", map[string]string{"x": "1"})))
	must(t)(src.Delete(pod("default", "b", nil)))
	c := must(t)(src.Add(pod("other", "c", nil)))
	if err := rec.WaitForKey(ctx, OnAdd, "other/c", c.ResourceVersion); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"OnAdd default/a rv=2 initial", "OnAdd default/b rv=3 initial",
		"OnUpdate default/a rv=4", "OnDelete default/b rv=5", "OnAdd other/c rv=6",
	}
	if diff := cmp.Diff(want, summarize(rec.Calls())); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	got, ok := inf.GetIndexer().GetByKey("default/a")
	if !ok || got.Labels["x"] != "1" || got.ResourceVersion != a.ResourceVersion {
		t.Errorf("cached default/a = %v, %v; want the update", got, ok)
	}
}

// A Source copies objects in and out: the test's own objects are never
// stamped or shared.
func TestSourceCopies(t *testing.T) {
	p := pod("default", "a", nil)
	src := NewSource[*corev1.Pod]()
	stored := must(t)(src.Add(p))
	if p.ResourceVersion != "" || stored == p {
		t.Errorf("Add changed or kept the caller's object: rv %q, same pointer %v", p.ResourceVersion, stored == p)
	}
}

func TestSourceErrors(t *testing.T) {
	src := NewSource(pod("default", "a", nil))
	if _, err := src.Add(pod("default", "a", nil)); !apierrors.IsAlreadyExists(err) {
		t.Errorf("Add of an existing key: %v, want AlreadyExists", err)
	}
	if _, err := src.Update(pod("default", "zz", nil)); !apierrors.IsNotFound(err) {
		t.Errorf("Update of a missing key: %v, want NotFound", err)
	}
	if _, err := src.Delete(pod("default", "zz", nil)); !apierrors.IsNotFound(err) {
		t.Errorf("Delete of a missing key: %v, want NotFound", err)
	}
	if _, err := src.Add(nil); err == nil {
		t.Error("Add(nil) succeeded")
	}
	if _, err := src.Add(pod("default", "", nil)); err == nil {
		t.Error("Add of an object without a name succeeded")
	}
	ctx := context.Background()
	if _, err := src.List(ctx, metav1.ListOptions{LabelSelector: "a in in"}); !apierrors.IsBadRequest(err) {
		t.Errorf("List with a bad selector: %v, want BadRequest", err)
	}
	if _, err := src.Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=x"}); !apierrors.IsBadRequest(err) {
		t.Errorf("Watch on an unsupported field: %v, want BadRequest", err)
	}
	must(t)(src.Add(pod("default", "b", nil)))
	src.Expire()
	if _, err := src.Watch(ctx, metav1.ListOptions{ResourceVersion: "0"}); err != nil {
		t.Errorf("Watch from 0 after Expire: %v", err)
	}
	if _, err := src.Watch(ctx, metav1.ListOptions{ResourceVersion: "3"}); err != nil {
		t.Errorf("Watch from the version Expire kept: %v", err)
	}
	src.DropWatches()
	if _, err := src.Watch(ctx, metav1.ListOptions{ResourceVersion: "2"}); !apierrors.IsResourceExpired(err) {
		t.Errorf("Watch from before Expire: %v, want Expired (410)", err)
	}
}

// Relist with changes missed while offline: the informer relists and
// reports the deletions it infers as final state unknown.
func TestSourceRelistAfterMissedChanges(t *testing.T) {
	src := NewSource(pod("default", "a", nil), pod("default", "b", nil))
	_, rec, ctx := run(t, src, informer.SharedIndexInformerOptions[*corev1.Pod]{
		Reflector: informer.ReflectorOptions{Backoff: informer.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond}},
	})
	watches := src.Watches()
	src.Offline()
	must(t)(src.Delete(pod("default", "a", nil)))
	must(t)(src.Add(pod("default", "c", nil)))
	src.Expire()
	src.Online()
	if err := rec.WaitForKey(ctx, OnAdd, "default/c", ""); err != nil {
		t.Fatal(err)
	}
	if src.Watches() <= watches {
		t.Errorf("no new watch after Offline/Online")
	}
	var del *Call[*corev1.Pod]
	for _, c := range rec.Calls() {
		if c.Kind == OnDelete {
			del = &c
		}
	}
	if del == nil || del.Key != "default/a" || !del.FinalStateUnknown {
		t.Errorf("delete seen: %v; want default/a with final state unknown", del)
	}
}

// With a label selector, a watch reports an object leaving the selection as
// a deletion and one entering it as an add, as the API server does.
func TestSourceSelectorTransitions(t *testing.T) {
	src := NewSource(pod("default", "a", map[string]string{"app": "web"}), pod("default", "b", nil))
	ctx := context.Background()
	w, err := src.Watch(ctx, metav1.ListOptions{LabelSelector: "app=web", SendInitialEvents: ptr.To(true)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	must(t)(src.Update(pod("default", "a", map[string]string{"v": "2"})))     // leaves
	must(t)(src.Update(pod("default", "b", map[string]string{"app": "web"}))) // enters
	must(t)(src.Update(pod("default", "b", map[string]string{"app": "web", "v": "2"})))
	must(t)(src.Delete(pod("default", "a", nil))) // not selected: not sent
	var got []string
	for range 5 {
		ev := <-w.ResultChan()
		p := ev.Object.(*corev1.Pod)
		s := string(ev.Type) + " " + p.Name + " rv=" + p.ResourceVersion
		if ev.Type == watch.Bookmark {
			s = string(ev.Type) + " " + p.Annotations[metav1.InitialEventsAnnotationKey]
		}
		got = append(got, s)
	}
	// Leaving the selection, a is deleted with its last selected state (its
	// labels at rv 2), stamped with the version of the change (rv 4), as the
	// API server does.
	want := []string{"ADDED a rv=2", "BOOKMARK true", "DELETED a rv=4", "ADDED b rv=5", "MODIFIED b rv=6"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	list, err := src.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=b"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "b" {
		t.Errorf("List by metadata.name: %v, %v", list, err)
	}
}

// A list that fails with Forbidden reaches the watch error handler, and a
// sync wait ends with an error saying what did not sync.
func TestSourceListErrorReachesInformer(t *testing.T) {
	src := NewSource(pod("default", "a", nil))
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no RBAC"))
	src.SetListError(forbidden)
	src.SetWatchError(forbidden)
	reported := make(chan error, 100)
	inf, err := informer.NewSharedIndexInformer(src, informer.SharedIndexInformerOptions[*corev1.Pod]{
		Reflector: informer.ReflectorOptions{WatchErrorHandler: func(_ context.Context, err error) {
			select {
			case reported <- err:
			default:
			}
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := <-reported; !apierrors.IsForbidden(err) {
		t.Errorf("reported %v, want Forbidden", err)
	}
	waitCtx, waitCancel := context.WithCancel(ctx)
	waitCancel()
	if err := informer.WaitForCacheSync(waitCtx, inf); err == nil {
		t.Error("WaitForCacheSync succeeded on a source that refuses every list")
	}
}

// A bookmark reaches watchers that asked for bookmarks and moves the
// informer's resource version.
func TestSourceBookmark(t *testing.T) {
	src := NewSource(pod("default", "a", nil))
	ctx := context.Background()
	with, err := src.Watch(ctx, metav1.ListOptions{ResourceVersion: "2", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer with.Stop()
	without, err := src.Watch(ctx, metav1.ListOptions{ResourceVersion: "2"})
	if err != nil {
		t.Fatal(err)
	}
	defer without.Stop()
	src.Bookmark()
	must(t)(src.Add(pod("default", "b", nil)))
	if ev := <-with.ResultChan(); ev.Type != watch.Bookmark || ev.Object.(*corev1.Pod).ResourceVersion != "2" {
		t.Errorf("first event with bookmarks: %v", ev)
	}
	if ev := <-without.ResultChan(); ev.Type != watch.Added {
		t.Errorf("first event without bookmarks: %v, want the ADDED of b", ev)
	}
}

// A wait that cannot finish says what it waited for and what it got.
func TestRecorderWaitExplains(t *testing.T) {
	var rec Recorder[*corev1.Pod]
	rec.OnAdd(pod("default", "a", nil), true)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("test gave up"))
	err := rec.WaitForCalls(ctx, 3)
	if err == nil {
		t.Fatal("WaitForCalls(3) with one call returned nil")
	}
	for _, want := range []string{"3 calls", "test gave up", "1 calls received", "OnAdd default/a initial"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if err := rec.WaitForCalls(ctx, 1); err != nil {
		t.Errorf("WaitForCalls(1) with one call: %v", err)
	}
}

// Waiters are woken by calls, not by polling: a waiter blocked in WaitFor
// returns once the call it waits for arrives from another goroutine.
func TestRecorderWakesWaiter(t *testing.T) {
	var rec Recorder[*corev1.Pod]
	done := make(chan error)
	go func() { done <- rec.WaitForKey(context.Background(), OnDelete, "default/a", "") }()
	rec.OnAdd(pod("default", "a", nil), false)
	rec.OnDelete(informer.DeletedObject[*corev1.Pod]{Key: "default/a", Obj: pod("default", "a", nil)})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rec.Len() != 2 {
		t.Errorf("Len = %d, want 2", rec.Len())
	}
}
