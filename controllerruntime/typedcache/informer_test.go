package typedcache

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/typedkube/informer"
)

// events is a client-go handler that writes down each call as "add
// ns/name", "update ns/name" or "delete ns/name".
type events struct {
	mu    sync.Mutex
	calls []string
	types []string // the Go type of each object
}

func (e *events) record(verb string, obj any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o := obj.(client.Object)
	e.calls = append(e.calls, verb+" "+o.GetNamespace()+"/"+o.GetName())
	e.types = append(e.types, typeName(obj))
}

func typeName(obj any) string {
	switch obj.(type) {
	case *corev1.Pod:
		return "*v1.Pod"
	}
	return "other"
}

func (e *events) OnAdd(obj any, _ bool) { e.record("add", obj) }
func (e *events) OnUpdate(_, obj any)   { e.record("update", obj) }
func (e *events) OnDelete(obj any)      { e.record("delete", obj) }
func (e *events) has(want ...string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, w := range want {
		if !slices.Contains(e.calls, w) {
			return false
		}
	}
	return true
}

// GetInformer's informer takes client-go handlers: they hear the initial
// objects and every change; HasSyncedChecker is done once synced; after
// RemoveInformer a new informer is made, and the old one has stopped.
func TestGetInformer(t *testing.T) {
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	create(t, srv, pod("a", "p1", "n1", nil))
	c := newTestCache(t, srv, scheme, cache.Options{}, Options{})
	start(t, c)
	ctx := timeout(t)
	inf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	if !inf.HasSynced() {
		t.Error("GetInformer returned before the informer synced")
	}
	select {
	case <-inf.HasSyncedChecker().Done():
	default:
		t.Error("HasSyncedChecker is not done")
	}
	var ev events
	reg, err := inf.AddEventHandler(&ev)
	if err != nil {
		t.Fatal(err)
	}
	p2 := pod("a", "p2", "n1", nil)
	create(t, srv, p2)
	p2.Spec.NodeName = "n2"
	if err := srv.Update(p2); err != nil {
		t.Fatal(err)
	}
	if err := srv.Delete(p2); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the handler's calls", func() bool { return ev.has("add a/p1", "add a/p2", "update a/p2", "delete a/p2") })
	if slices.ContainsFunc(ev.types, func(s string) bool { return s != "*v1.Pod" }) {
		t.Errorf("the handler got %v", ev.types)
	}
	if err := inf.RemoveEventHandler(reg); err != nil {
		t.Error(err)
	}
	kinf, err := c.GetInformerForKind(ctx, corev1.SchemeGroupVersion.WithKind("Pod"))
	if err != nil || !kinf.HasSynced() {
		t.Errorf("GetInformerForKind = %v, %v", kinf, err)
	}
	if err := c.RemoveInformer(ctx, &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	if !inf.IsStopped() {
		t.Error("the removed informer has not stopped")
	}
	inf2, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil || inf2.IsStopped() {
		t.Fatalf("GetInformer after RemoveInformer = %v, %v", inf2, err)
	}
	if err := c.RemoveInformer(ctx, &corev1.ConfigMap{}); err != nil {
		t.Errorf("RemoveInformer of a kind without an informer = %v", err)
	}
}

// An informer whose lists are Forbidden fails its reads, GetInformer and
// WaitForSync as soon as the server answers, with the Forbidden error, not
// when the context ends (which here it never does). WaitForCacheSync waits
// through the failure, as a manager needs, and returns true once the list
// is allowed and the informer syncs.
func TestSyncFailure(t *testing.T) {
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	srv.Fail(podsGVR, http.StatusForbidden)
	var handled sync.WaitGroup
	handled.Add(1)
	var once sync.Once
	c := newTestCache(t, srv, scheme, cache.Options{
		DefaultWatchErrorHandler: func(_ context.Context, r *toolscache.Reflector, err error) {
			if r != nil && apierrors.IsForbidden(err) {
				once.Do(handled.Done)
			}
		},
	}, Options{})
	start(t, c)
	ctx := context.Background() // only the failure can end the waits
	err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "p"}, &corev1.Pod{})
	var syncErr *informer.SyncError
	if !apierrors.IsForbidden(err) || !errors.As(err, &syncErr) {
		t.Errorf("Get = %v, want a Forbidden *informer.SyncError", err)
	}
	if err := c.List(ctx, &corev1.PodList{}); !apierrors.IsForbidden(err) {
		t.Errorf("List = %v, want Forbidden", err)
	}
	if _, err := c.GetInformer(ctx, &corev1.Pod{}); !apierrors.IsForbidden(err) {
		t.Errorf("GetInformer = %v, want Forbidden", err)
	}
	if err := c.WaitForSync(ctx); !apierrors.IsForbidden(err) {
		t.Errorf("WaitForSync = %v, want Forbidden", err)
	}
	handled.Wait() // DefaultWatchErrorHandler heard it, with a Reflector
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if c.WaitForCacheSync(short) {
		t.Error("WaitForCacheSync = true while the list is Forbidden")
	}
	waited := make(chan bool, 1)
	go func() { waited <- c.WaitForCacheSync(timeout(t)) }()
	// Once allowed, the informer syncs, WaitForCacheSync returns true, and
	// reads work.
	srv.Fail(podsGVR, 0)
	create(t, srv, pod("a", "p", "n1", nil))
	eventually(t, "a Get once the list is allowed", func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "p"}, &corev1.Pod{}) == nil
	})
	if err := c.WaitForSync(timeout(t)); err != nil {
		t.Errorf("WaitForSync after the list was allowed = %v", err)
	}
	if !<-waited {
		t.Error("WaitForCacheSync = false after the list was allowed")
	}
}

// A context that ends while a read waits for its informer to sync ends
// the read with controller-runtime's Timeout error.
func TestReadTimeout(t *testing.T) {
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	srv.Fail(podsGVR, http.StatusServiceUnavailable) // retried quietly: no sync failure
	c := newTestCache(t, srv, scheme, cache.Options{DefaultWatchErrorHandler: func(context.Context, *toolscache.Reflector, error) {}}, Options{})
	start(t, c)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "p"}, &corev1.Pod{}); !apierrors.IsTimeout(err) {
		t.Errorf("Get = %v, want Timeout", err)
	}
}

// With a namespace map, GetInformer waits for each namespace's informer as
// soon as it makes it, before it makes the next: with a context already
// done, an informer that has not synced fails the call at once, and the
// informers of the namespaces after it are not made. (Made first and
// waited for after, the first had the time the others took to be made to
// sync, and the call then succeeded or not by chance.)
func TestGetInformerWaitsAsItMakes(t *testing.T) {
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	srv.Fail(podsGVR, http.StatusInternalServerError) // the informers never sync
	c := newTestCache(t, srv, scheme, cache.Options{DefaultNamespaces: map[string]cache.Config{"a": {}, "b": {}}}, Options{})
	start(t, c)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.GetInformer(done, &corev1.Pod{}); !apierrors.IsTimeout(err) {
		t.Errorf("GetInformer with a done context = %v, want a Timeout", err)
	}
	made := 0
	for _, s := range c.scopes {
		if s.lookup(entryKey{corev1.SchemeGroupVersion.WithKind("Pod"), typedRep}) != nil {
			made++
		}
	}
	if made != 1 {
		t.Errorf("%d informers made of 2, want only the first", made)
	}
}
