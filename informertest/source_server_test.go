package informertest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedkube/informer"
)

// TestWatchFromZeroSendsCurrentState: a watch from "" or "0" starts with
// an ADDED event for every object there is, as the API server's does (it
// used to start with nothing).
func TestWatchFromZeroSendsCurrentState(t *testing.T) {
	src := NewSource(pod("default", "a", nil), pod("default", "b", map[string]string{"app": "web"}))
	for _, rv := range []string{"", "0"} {
		w, err := src.Watch(context.Background(), metav1.ListOptions{ResourceVersion: rv, LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		must(t)(src.Update(pod("default", "b", map[string]string{"app": "web", "v": rv + "x"})))
		var got []string
		for range 2 {
			select {
			case ev := <-w.ResultChan():
				got = append(got, string(ev.Type)+" "+ev.Object.(*corev1.Pod).Name)
			case <-time.After(10 * time.Second):
				t.Fatalf("Watch(resourceVersion=%q): 10s without an event after %q", rv, got)
			}
		}
		w.Stop()
		if want := []string{"ADDED b", "MODIFIED b"}; got[0] != want[0] || got[1] != want[1] {
			t.Errorf("Watch(resourceVersion=%q): events %q, want %q", rv, got, want)
		}
	}
}

// TestNoOpUpdate: an update that changes nothing but the resource version
// is not a change, as on the API server: no new version, no event (it used
// to be both).
func TestNoOpUpdate(t *testing.T) {
	src := NewSource(pod("default", "a", map[string]string{"app": "web"}))
	before := src.ResourceVersion()
	w, err := src.Watch(context.Background(), metav1.ListOptions{ResourceVersion: before})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	same := src.Objects()[0].DeepCopy()
	same.ResourceVersion = "" // as a client that does not send it
	if got := must(t)(src.Update(same)); got.ResourceVersion != before || src.ResourceVersion() != before {
		t.Errorf("no-op Update: resource version %s -> %s (source %s), want unchanged", before, got.ResourceVersion, src.ResourceVersion())
	}
	changed := must(t)(src.Update(pod("default", "a", map[string]string{"app": "db"})))
	n, _ := strconv.Atoi(before)
	if changed.ResourceVersion != strconv.Itoa(n+1) {
		t.Errorf("the first real update has resource version %s, want %d", changed.ResourceVersion, n+1)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Modified || ev.Object.(*corev1.Pod).ResourceVersion != changed.ResourceVersion {
			t.Errorf("first event %s rv=%s, want the real update's MODIFIED rv=%s", ev.Type, ev.Object.(*corev1.Pod).ResourceVersion, changed.ResourceVersion)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event for the real update")
	}
}

// TestWatchEndedByContextIsForgotten: a watch whose context ended is no
// longer sent to (it used to stay registered, its queue growing with every
// later change).
func TestWatchEndedByContextIsForgotten(t *testing.T) {
	src := NewSource(pod("default", "a", nil))
	ctx, cancel := context.WithCancel(context.Background())
	w, err := src.Watch(ctx, metav1.ListOptions{ResourceVersion: src.ResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	for range w.ResultChan() {
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		src.mu.Lock()
		n := len(src.watchers)
		src.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10s after the watch's context ended, the Source still sends to %d watcher(s)", n)
		}
	}
	w.Stop() // a Stop after the end is harmless
}

// TestUpdateConflict: an update naming a resource version other than the
// stored object's is a Conflict, as on the API server; one naming none
// updates unconditionally.
func TestUpdateConflict(t *testing.T) {
	src := NewSource(pod("default", "a", nil))
	first := src.Objects()[0]
	must(t)(src.Update(pod("default", "a", map[string]string{"v": "2"}))) // no resource version
	stale := first.DeepCopy()
	stale.Labels = map[string]string{"v": "3"}
	if _, err := src.Update(stale); !apierrors.IsConflict(err) {
		t.Errorf("update at stale resource version %s = %v, want a Conflict", stale.ResourceVersion, err)
	}
	current := src.Objects()[0].DeepCopy()
	current.Labels = map[string]string{"v": "3"}
	if got := must(t)(src.Update(current)); got.Labels["v"] != "3" {
		t.Errorf("update at the current resource version: labels %v", got.Labels)
	}
}

// TestEmptySourceListReadsOwnWrites: an informer in list+watch mode over a
// Source that is empty when it lists reads its own writes: the wait for a
// create's resource version returns once the create is in the cache.
// Regression: the LIST of an empty Source answered resourceVersion "0",
// which the API server never does; the informer then watched from "0",
// whose ADDED events are a replay in no order, and the wait lasted until
// its context ended.
func TestEmptySourceListReadsOwnWrites(t *testing.T) {
	src := NewSource[*corev1.Pod]()
	inf, _, ctx := run(t, src, informer.SharedIndexInformerOptions[*corev1.Pod]{
		Reflector: informer.ReflectorOptions{WatchList: informer.WatchListOff},
	})
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, name := range []string{"a", "b"} {
		p := must(t)(src.Add(pod("default", name, nil)))
		l, err := inf.Lister().AtLeast(wait, p.ResourceVersion)
		if err != nil {
			t.Fatalf("create of %s: %v", name, err)
		}
		if _, err := l.ByNamespace("default").Get(name); err != nil {
			t.Fatalf("after waiting for %s: %v", p.ResourceVersion, err)
		}
	}
}

// TestListExactResourceVersion: a list with ResourceVersionMatchExact
// returns the objects as they were at that version, as the API server's
// does (it used to return the current ones, with the current version); a
// version older than the history is 410 Gone, a newer one a timeout.
func TestListExactResourceVersion(t *testing.T) {
	src := NewSource(pod("default", "a", map[string]string{"app": "web"}), pod("default", "b", map[string]string{"app": "web"}))
	at := src.ResourceVersion()
	must(t)(src.Update(pod("default", "a", map[string]string{"app": "web", "v": "2"})))
	must(t)(src.Delete(pod("default", "b", nil)))
	must(t)(src.Add(pod("default", "c", map[string]string{"app": "web"})))
	must(t)(src.Add(pod("default", "d", nil)))
	page, err := src.List(context.Background(), metav1.ListOptions{ResourceVersion: at, ResourceVersionMatch: metav1.ResourceVersionMatchExact, LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range page.Items {
		got = append(got, p.Name+"@"+p.ResourceVersion)
	}
	if want := "a@2 b@3"; page.ResourceVersion != at || strings.Join(got, " ") != want {
		t.Errorf("exact list at %s: %q at %s, want %q at %s", at, got, page.ResourceVersion, want, at)
	}
	n, _ := strconv.Atoi(src.ResourceVersion())
	if _, err := src.List(context.Background(), metav1.ListOptions{ResourceVersion: strconv.Itoa(n + 1), ResourceVersionMatch: metav1.ResourceVersionMatchExact}); !apierrors.IsTimeout(err) {
		t.Errorf("exact list at a future version: %v, want a timeout", err)
	}
	src.Expire()
	if _, err := src.List(context.Background(), metav1.ListOptions{ResourceVersion: at, ResourceVersionMatch: metav1.ResourceVersionMatchExact}); !apierrors.IsResourceExpired(err) {
		t.Errorf("exact list before the history: %v, want Expired (410)", err)
	}
}
