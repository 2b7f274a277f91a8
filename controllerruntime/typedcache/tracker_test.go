package typedcache

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// The tracker keeps the newest version written per object until a read has
// seen it, the writes in flight until they return, and the deletions until
// a read has seen them; a read of one object, or of one namespace, waits
// for its own only.
func TestWriteTracker(t *testing.T) {
	tr := newWriteTracker()
	a1 := client.ObjectKey{Namespace: "a", Name: "1"}
	a2 := client.ObjectKey{Namespace: "a", Name: "2"}
	b1 := client.ObjectKey{Namespace: "b", Name: "1"}
	done := tr.begin(a1)
	if got := len(tr.inFlight(&a1)); got != 1 {
		t.Errorf("%d writes of a/1 in flight, want 1", got)
	}
	if got := len(tr.inFlight(&a2)); got != 0 {
		t.Errorf("%d writes of a/2 in flight, want 0", got)
	}
	tr.wrote(a1, "20")
	tr.end(a1, done)
	select {
	case <-done:
	default:
		t.Error("the write's channel is open after end")
	}
	tr.wrote(a1, "10") // older: kept out
	tr.wrote(a2, "15")
	tr.wrote(b1, "30")
	tr.wrote(b1, "") // a dry run's: nothing to wait for
	tr.deleting(a2, "uid-2")
	rvs, deletes := tr.pending(&a1, "")
	if diff := cmp.Diff(map[client.ObjectKey]string{a1: "20"}, rvs); diff != "" || deletes != nil {
		t.Errorf("pending of a/1 (-want +got):\n%s; deletes %v", diff, deletes)
	}
	rvs, deletes = tr.pending(nil, "a")
	if diff := cmp.Diff(map[client.ObjectKey]string{a1: "20", a2: "15"}, rvs); diff != "" {
		t.Errorf("pending in a (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[client.ObjectKey][]types.UID{a2: {"uid-2"}}, deletes); diff != "" {
		t.Errorf("deletes in a (-want +got):\n%s", diff)
	}
	tr.wrote(a1, "25") // after the read's snapshot
	tr.seen(rvs)
	tr.deleted(a2, []types.UID{"uid-2"})
	rvs, deletes = tr.pending(nil, "")
	if diff := cmp.Diff(map[client.ObjectKey]string{a1: "25", b1: "30"}, rvs); diff != "" || deletes != nil {
		t.Errorf("pending after the read (-want +got):\n%s; deletes %v", diff, deletes)
	}
}

// A create with a generated name is waited for under the name the server
// gave it: a Get of that name must see it.
func TestConsistentClientGeneratedName(t *testing.T) {
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	c := newTestCache(t, srv, scheme, cache.Options{}, Options{})
	inner := fake.NewClientBuilder().WithScheme(scheme).Build()
	cc := &consistentClient{Client: inner, cache: c, uncached: map[schema.GroupVersionKind]bool{}, trackers: map[trackerKey]*writeTracker{}}
	ctx := timeout(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", GenerateName: "child-"}}
	if err := cc.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Name == "" || cm.ResourceVersion == "" {
		t.Fatalf("the fake client's create gave %q at %q", cm.Name, cm.ResourceVersion)
	}
	req, _, err := cc.target(cm, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(cm)
	rvs, _ := cc.tracker(req, false).pending(&key, "")
	if rvs[key] != cm.ResourceVersion {
		t.Errorf("pending of %v = %v, want its version %s", key, rvs, cm.ResourceVersion)
	}
}

// A read waits only for the writes the informers it uses will see: a List
// in one namespace does not wait for a write in another namespace, cached
// by another informer that the first never hears of, and a write in a
// namespace the cache does not cache is not waited for at all (no informer
// will see it), nor does it make reads fail.
func TestConsistentClientNamespaces(t *testing.T) {
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	// The informers list at a version the server has made: the fake's
	// first, "0", reads as "any", which no watch event is counted past.
	create(t, srv, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "z", Name: "first"}})
	c := newTestCache(t, srv, scheme, cache.Options{DefaultNamespaces: map[string]cache.Config{
		"a": {},
		"b": {UnsafeDisableDeepCopy: ptr.To(true)}, // an informer of its own
	}}, Options{})
	start(t, c)
	cl, err := NewClient(srv.Config(), client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: c, EnableReadYourWritesConsistency: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	cc, ok := cl.(*consistentClient)
	if !ok {
		t.Fatalf("NewClient gave a %T, want the consistent client", cl)
	}
	ctx := timeout(t)
	// Both namespaces' informers run and have synced before the write.
	var list corev1.ConfigMapList
	if err := cc.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	create(t, srv, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "x"}})
	var got corev1.ConfigMap
	eventually(t, "the cache to hold b/x", func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: "b", Name: "x"}, &got) == nil
	})
	// As if this client had written b/x, and c/y in a namespace not cached.
	req, _, err := cc.target(&got, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := cc.tracker(req, true)
	tr.wrote(client.ObjectKey{Namespace: "b", Name: "x"}, got.ResourceVersion)
	tr.wrote(client.ObjectKey{Namespace: "c", Name: "y"}, "1000")

	if err := cc.List(ctx, &list, client.InNamespace("a")); err != nil {
		t.Fatalf("List in a: %v", err)
	}
	if len(list.Items) != 0 {
		t.Errorf("List in a gave %d items, want none", len(list.Items))
	}
	if err := cc.List(ctx, &list); err != nil {
		t.Fatalf("List in all namespaces: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "x" {
		t.Errorf("List in all namespaces gave %v, want b/x", list.Items)
	}
	if rvs, deletes := tr.pending(nil, ""); rvs != nil || deletes != nil {
		t.Errorf("after the reads, still pending: %v, deletes %v", rvs, deletes)
	}
}

// Namespaces cached with the same settings are watched apart, and the
// server orders the events of one watch only: a read of one namespace must
// wait for that namespace's watch, however far another namespace's watch
// has gone. Here namespace b's watch lags behind a's (the server holds its
// events back); a read of b's object written before a's must not return
// until b's watch has delivered it.
func TestConsistentClientLaggingNamespace(t *testing.T) {
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	create(t, srv, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "z", Name: "first"}})
	c := newTestCache(t, srv, scheme, cache.Options{DefaultNamespaces: map[string]cache.Config{"a": {}, "b": {}}}, Options{})
	start(t, c)
	cl, err := NewClient(srv.Config(), client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: c, EnableReadYourWritesConsistency: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	cc := cl.(*consistentClient)
	ctx := timeout(t)
	var list corev1.ConfigMapList
	if err := cc.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	release := srv.Hold("b")
	defer release()
	bx := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "x"}}
	create(t, srv, bx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "y"}})
	eventually(t, "the cache to hold a/y", func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "y"}, &corev1.ConfigMap{}) == nil
	})
	// As if this client had written b/x (the server's first of the two
	// changes, so version 3).
	req, _, err := cc.target(bx, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: "b", Name: "x"}
	cc.tracker(req, true).wrote(key, "3")

	// While b's watch is held, the read cannot be answered: with its
	// context already done, it says so rather than reading a cache
	// without b/x.
	done, cancel := context.WithCancel(ctx)
	cancel()
	var got corev1.ConfigMap
	if err := cc.Get(done, key, &got); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get of b/x while b's watch lags = %v, want it to wait (here: context.Canceled)", err)
	}
	release()
	if err := cc.Get(ctx, key, &got); err != nil {
		t.Fatalf("Get of b/x once b's watch went on: %v", err)
	}
	if got.ResourceVersion != "3" {
		t.Errorf("Get of b/x read version %q, want 3", got.ResourceVersion)
	}
}
