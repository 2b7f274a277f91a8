package typedcache

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
)

// constructed records what cache.Options.NewInformer was given.
type constructed struct {
	mu    sync.Mutex
	calls []string // the Go type of each object, with the resync period and index names
}

func (c *constructed) record(obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := slices.Sorted(maps.Keys(indexers))
	c.calls = append(c.calls, fmt.Sprintf("%T resync=%v indexes=%s", obj, resync, strings.Join(names, ",")))
}

func (c *constructed) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

// A cache with NewInformer builds every informer with it (client-go's own
// here, as a test that instruments informers would), given what
// controller-runtime gives it: a ListerWatcher of the kind, an object of
// the type readers ask for, the resync period and a namespace index. It
// runs them, sets the cache's transform, and serves Get, List (label,
// namespace and field selectors, []*T lists, Limit), handlers and
// read-your-writes from them, for typed, unstructured and metadata reads.
func TestNewInformerClientGo(t *testing.T) {
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	create(t, srv,
		pod("a", "web-1", "n1", map[string]string{"app": "web"}),
		pod("a", "db-1", "n2", map[string]string{"app": "db"}),
		pod("b", "web-1", "n1", map[string]string{"app": "web"}),
		&gadget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "g1"}, Color: "red"},
	)
	var made constructed
	transformed := 0
	var tmu sync.Mutex
	opts := cache.Options{
		SyncPeriod: ptr.To(time.Hour),
		NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
			made.record(obj, resync, indexers)
			return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
		},
		DefaultTransform: func(obj any) (any, error) {
			tmu.Lock()
			transformed++
			tmu.Unlock()
			return obj, nil
		},
	}
	c := newTestCache(t, srv, scheme, opts, Options{})
	start(t, c)
	ctx := timeout(t)
	if err := c.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }); err != nil {
		t.Fatal(err)
	}

	var p corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "web-1"}, &p); err != nil || p.Spec.NodeName != "n1" || p.Kind != "Pod" {
		t.Errorf("Get a/web-1 = %s %q, %v", p.Kind, p.Spec.NodeName, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "none"}, &p); !apierrors.IsNotFound(err) {
		t.Errorf("Get of a missing Pod: %v", err)
	}
	for _, tc := range []struct {
		opts []client.ListOption
		want []string
	}{
		{nil, []string{"a/db-1", "a/web-1", "b/web-1"}},
		{[]client.ListOption{client.InNamespace("a")}, []string{"a/db-1", "a/web-1"}},
		{[]client.ListOption{client.MatchingLabels{"app": "web"}}, []string{"a/web-1", "b/web-1"}},
		{[]client.ListOption{client.MatchingFields{"spec.nodeName": "n1"}}, []string{"a/web-1", "b/web-1"}},
		{[]client.ListOption{client.InNamespace("b"), client.MatchingFields{"spec.nodeName": "n1"}}, []string{"b/web-1"}},
		{[]client.ListOption{client.MatchingFields{"spec.nodeName": "n1"}, client.MatchingLabels{"app": "db"}}, nil},
		{[]client.ListOption{client.Limit(1), client.InNamespace("b")}, []string{"b/web-1"}},
	} {
		var l corev1.PodList
		if err := c.List(ctx, &l, tc.opts...); err != nil {
			t.Fatalf("List %v: %v", tc.opts, err)
		}
		var got []string
		if len(l.Items) > 0 {
			got = names(t, &l)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("List %v = %v, want %v", tc.opts, got, tc.want)
		}
	}
	var nonExact corev1.PodList
	if err := c.List(ctx, &nonExact, client.MatchingFieldsSelector{Selector: fields.OneTermNotEqualSelector("spec.nodeName", "n1")}); err == nil {
		t.Error("a non-exact field selector was answered")
	}
	var gl gadgetList
	if err := c.List(ctx, &gl); err != nil || len(gl.Items) != 1 || gl.Items[0].Color != "red" {
		t.Errorf("List of gadgets ([]*T) = %d items, %v", len(gl.Items), err)
	}
	var ml metav1.PartialObjectMetadataList
	ml.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := c.List(ctx, &ml, client.InNamespace("a")); err != nil || len(ml.Items) != 2 || ml.Items[0].Kind != "Pod" {
		t.Errorf("List of Pod metadata = %v, %v", ml.Items, err)
	}
	var ul unstructured.UnstructuredList
	ul.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := c.List(ctx, &ul, client.MatchingLabels{"app": "db"}); err != nil || len(ul.Items) != 1 || ul.Items[0].GetName() != "db-1" {
		t.Errorf("List of unstructured Pods = %v, %v", ul.Items, err)
	}

	// Handlers hear of changes; read-your-writes waits for the version.
	inf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	added := make(chan string, 10)
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if p := obj.(*corev1.Pod); !strings.HasPrefix(p.Name, "web-1") && p.Name != "db-1" {
			added <- p.Namespace + "/" + p.Name
		}
	}}); err != nil {
		t.Fatal(err)
	}
	late := pod("a", "late", "n3", nil)
	create(t, srv, late)
	req, err := c.requestFor(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	lateRV := srv.ResourceVersion()
	if err := c.waitApplied(ctx, req, map[client.ObjectKey]string{{Namespace: "a", Name: "late"}: lateRV}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "late"}, &p); err != nil {
		t.Errorf("Get after waiting for its version: %v", err)
	}
	if got := receiveString(t, added); got != "a/late" {
		t.Errorf("handler heard of %s", got)
	}

	calls := made.list()
	slices.Sort(calls)
	for _, want := range []string{"*v1.Pod resync=", "*typedcache.gadget resync=", "*v1.PartialObjectMetadata resync=", "*unstructured.Unstructured resync="} {
		if !slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, want) && strings.HasSuffix(c, "indexes=namespace") }) {
			t.Errorf("NewInformer calls %q, want one for %s... with the namespace index", calls, want)
		}
	}
	tmu.Lock()
	defer tmu.Unlock()
	if transformed == 0 {
		t.Error("the cache's transform was never run")
	}
}

// receiveString receives from ch, failing the test after 30s.
func receiveString(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(30 * time.Second):
		t.Fatal("nothing received in 30s")
		return ""
	}
}

// A cache whose NewInformer returns controller-runtime's FakeInformer, as
// tests hand it: GetInformer returns that informer without waiting for it
// to sync; reads and BlockUntilSynced wait for it, ending as a Timeout with
// their context; IndexField does not wait; once it says it synced, reads
// answer from its (empty) indexer; read-your-writes, with no version to
// wait for, does not wait. Start runs it and returns when its context ends.
func TestNewInformerFake(t *testing.T) {
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	fake := controllertest.NewFakeInformer()
	c := newTestCache(t, srv, scheme, cache.Options{NewInformer: func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
		return fake
	}}, Options{})
	start(t, c)
	ctx := timeout(t)
	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{}, cache.BlockUntilSynced(false))
	if err != nil {
		t.Fatal(err)
	}
	if inf != fake || inf.HasSynced() {
		t.Errorf("GetInformer = %T (synced %v), want the NewInformer's, not synced", inf, inf.HasSynced())
	}
	if err := c.IndexField(ctx, &corev1.ConfigMap{}, "data", func(client.Object) []string { return nil }); err != nil {
		t.Errorf("IndexField: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := c.List(short, &corev1.ConfigMapList{}); !apierrors.IsTimeout(err) {
		t.Errorf("List before the informer synced: %v, want a Timeout", err)
	}
	if _, err := c.GetInformer(short, &corev1.ConfigMap{}); !apierrors.IsTimeout(err) {
		t.Errorf("GetInformer before the informer synced: %v, want a Timeout", err)
	}
	fake.Synced()
	// Once synced, reads answer whatever their context: one already done
	// too (a select on both picked either, at random).
	for range 20 {
		if err := c.Get(short, client.ObjectKey{Namespace: "a", Name: "s"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Fatalf("Get with a done context once synced: %v, want NotFound", err)
		}
	}
	var l corev1.ConfigMapList
	if err := c.List(ctx, &l); err != nil || len(l.Items) != 0 {
		t.Errorf("List once synced = %v, %v", l.Items, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "s"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("Get once synced: %v, want NotFound", err)
	}
	req, err := c.requestFor(&corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.waitApplied(ctx, req, map[client.ObjectKey]string{{Namespace: "a", Name: "s"}: "100"}); err != nil {
		t.Errorf("read-your-writes on an informer that reports no version: %v", err)
	}
	if err := c.waitGone(ctx, req, client.ObjectKey{Namespace: "a", Name: "s"}, nil); err != nil {
		t.Errorf("waiting for a deletion on it: %v", err)
	}
	if !c.WaitForCacheSync(ctx) {
		t.Error("WaitForCacheSync = false")
	}
}

// NewInformer with Options.Types is refused: those types' informers are
// the library's.
func TestNewInformerWithTypes(t *testing.T) {
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	_, err := newCache(srv.Config(), cache.Options{Scheme: scheme, NewInformer: func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
		return nil
	}}, Options{Types: []Typed{For[*widget]()}})
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("newCache = %v, want ErrUnsupported", err)
	}
}

// With NewInformer and a RESTMapper of its own, a cache needs no server:
// made from an empty rest.Config, it starts, serves reads once the fake
// informer syncs (a Timeout before, at the end of the read's context,
// on the bubble's clock), adds field indexes without waiting, and stops.
func TestNewInformerNeedsNoServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := controllertest.NewFakeInformer()
		mapper := apimeta.NewDefaultRESTMapper(nil)
		mapper.Add(corev1.SchemeGroupVersion.WithKind("Service"), apimeta.RESTScopeNamespace)
		c, err := New(&rest.Config{}, cache.Options{Mapper: mapper, NewInformer: func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
			return fake
		}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		synctest.Wait()
		if err := c.IndexField(ctx, &corev1.Service{}, "spec.type", func(client.Object) []string { return nil }); err != nil {
			t.Fatalf("IndexField: %v", err)
		}
		short, stop := context.WithTimeout(ctx, time.Second)
		defer stop()
		if err := c.List(short, &corev1.ServiceList{}); !apierrors.IsTimeout(err) {
			t.Errorf("List before the informer synced: %v, want a Timeout", err)
		}
		fake.Synced()
		if err := c.List(ctx, &corev1.ServiceList{}); err != nil {
			t.Errorf("List once synced: %v", err)
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "s"}, &corev1.Service{}); !apierrors.IsNotFound(err) {
			t.Errorf("Get once synced: %v, want NotFound", err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start returned %v", err)
		}
	})
}
