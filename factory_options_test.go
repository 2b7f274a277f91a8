package informer

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/typedkube/informer/watchconn"
)

// Per-type selectors are added to the factory's, reach every LIST and
// WATCH of that type only, and the per-type TweakListOptions runs last.
func TestFactoryPerTypeSelectors(t *testing.T) {
	srv := newFakeAPI(t, podsResource, configMapsResource)
	create(t, srv, factoryPod("a", "web", "n1"))
	f := newTestFactory(t, srv, FactoryOptions{
		TweakListOptions: func(o *metav1.ListOptions) { o.LabelSelector = "tier=front" },
	})
	var sawComposed atomic.Bool
	tweak := func(o *metav1.ListOptions) {
		sawComposed.Store(o.LabelSelector == "tier=front,app in (db,web)")
		o.AllowWatchBookmarks = true
	}
	if _, err := For(f, ForOptions[*corev1.Pod]{
		LabelSelector:    "app in (web, db)",
		FieldSelector:    "spec.nodeName=n1",
		TweakListOptions: tweak,
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := For[*corev1.ConfigMap](f); err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	if !sawComposed.Load() {
		t.Error("the per-type TweakListOptions did not see the factory's and the type's label selectors joined")
	}
	for _, r := range resourceRequests(srv, "/pods") {
		if got, want := r.Query.Get("labelSelector"), "tier=front,app in (db,web)"; got != want {
			t.Errorf("pods request %s?%s: labelSelector %q, want %q", r.Path, r.Query.Encode(), got, want)
		}
		if got, want := r.Query.Get("fieldSelector"), "spec.nodeName=n1"; got != want {
			t.Errorf("pods request %s?%s: fieldSelector %q, want %q", r.Path, r.Query.Encode(), got, want)
		}
	}
	cms := resourceRequests(srv, "/configmaps")
	if len(cms) == 0 {
		t.Fatal("no configmaps request")
	}
	for _, r := range cms {
		if r.Query.Get("labelSelector") != "tier=front" || r.Query.Get("fieldSelector") != "" {
			t.Errorf("configmaps request %s?%s, want the factory's selector only", r.Path, r.Query.Encode())
		}
	}

	// Later calls: the same selectors however spelled, or none, share the
	// informer; others conflict.
	for _, o := range []ForOptions[*corev1.Pod]{
		{},
		{LabelSelector: "app in (db,web)"},
		{FieldSelector: "spec.nodeName==n1"},
		{TweakListOptions: tweak},
	} {
		if _, err := For(f, o); err != nil {
			t.Errorf("For(%+v) = %v, want the shared informer", o, err)
		}
	}
	for _, o := range []ForOptions[*corev1.Pod]{
		{LabelSelector: "app=web"},
		{FieldSelector: "spec.nodeName=n2"},
		{TweakListOptions: func(*metav1.ListOptions) {}},
	} {
		if _, err := For(f, o); !errors.Is(err, ErrOptionsConflict) {
			t.Errorf("For(%+v) = %v, want ErrOptionsConflict", o, err)
		}
	}
	for _, o := range []ForOptions[*corev1.Pod]{
		{LabelSelector: "app in ("},
		{FieldSelector: "spec.nodeName"},
		{Namespace: "a", Namespaces: []string{"b"}},
		{Namespaces: []string{"a", "a"}},
		{Namespaces: []string{"a", ""}},
	} {
		if _, err := For(f, o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("For(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
}

// An informer over several namespaces lists and watches each of them, and
// caches their objects only.
func TestFactoryNamespaces(t *testing.T) {
	srv := newFakeAPI(t, podsResource, configMapsResource, nodesResource)
	create(t, srv, factoryPod("a", "p1", ""), factoryPod("b", "p1", ""), factoryPod("c", "p1", ""))
	f := newTestFactory(t, srv, FactoryOptions{Namespaces: []string{"b", "a"}})
	pods, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	cms, err := For(f, ForOptions[*corev1.ConfigMap]{Namespace: "c"})
	if err != nil {
		t.Fatal(err)
	}
	log := addLog(t, pods)
	syncFactory(t, t.Context(), f)
	log.waitFor(t, "add a/p1", "add b/p1")
	create(t, srv, factoryPod("c", "p2", ""), factoryPod("a", "p2", ""), factoryPod("b", "p2", ""))
	log.waitFor(t, "add a/p1", "add b/p1", "add a/p2", "add b/p2")
	if keys := slices.Sorted(pods.GetIndexer().Keys()); !slices.Equal(keys, []string{"a/p1", "a/p2", "b/p1", "b/p2"}) {
		t.Errorf("cache keys %q, want those of namespaces a and b", keys)
	}
	if got, err := pods.Lister().ByNamespace("b").List(nil); err != nil || len(got) != 2 {
		t.Errorf("Lister().ByNamespace(b).List = %d Pods, %v; want 2", len(got), err)
	}
	for _, r := range resourceRequests(srv, "/pods") {
		if r.Path != "/api/v1/namespaces/a/pods" && r.Path != "/api/v1/namespaces/b/pods" {
			t.Errorf("pods request %s, want namespaces a and b only", r.Path)
		}
	}
	for _, r := range resourceRequests(srv, "/configmaps") {
		if r.Path != "/api/v1/namespaces/c/configmaps" {
			t.Errorf("configmaps request %s, want namespace c only", r.Path)
		}
	}
	if cms.Name() != "v1/configmaps" || pods.Name() != "v1/pods" {
		t.Errorf("names %q, %q", pods.Name(), cms.Name())
	}
	// The same set in another order shares the informer; another set
	// conflicts.
	if got, err := For(f, ForOptions[*corev1.Pod]{Namespaces: []string{"a", "b"}}); err != nil || got != pods {
		t.Errorf("For with Namespaces [a b] = %v, %v, want the shared informer", got, err)
	}
	if _, err := For(f, ForOptions[*corev1.Pod]{Namespace: "a"}); !errors.Is(err, ErrOptionsConflict) {
		t.Errorf("For with Namespace a = %v, want ErrOptionsConflict", err)
	}
	if _, err := For(f, ForOptions[*corev1.Node]{Namespaces: []string{"a", "b"}}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("For[*corev1.Node] with Namespaces = %v, want ErrInvalidOptions (cluster-scoped)", err)
	}
}

func TestFactoryNamespacesInvalid(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	for _, opts := range []FactoryOptions{
		{Namespace: "a", Namespaces: []string{"b"}},
		{Namespaces: []string{"a", "a"}},
		{Namespaces: []string{""}},
	} {
		if _, err := NewFactory(srv.Config(), opts); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("NewFactory(%+v) = %v, want ErrInvalidOptions", opts, err)
		}
	}
}

// DefaultTransform rewrites the objects of the informers made without a
// Transform of their own; one returning another type is a reported error,
// never a panic.
func TestFactoryDefaultTransform(t *testing.T) {
	srv := newFakeAPI(t, podsResource, configMapsResource)
	pod := factoryPod("a", "p1", "")
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	create(t, srv, pod, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "c1", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}})
	f := newTestFactory(t, srv, FactoryOptions{
		DefaultTransform: func(obj any) (any, error) {
			if m, ok := obj.(metav1.Object); ok {
				m.SetManagedFields(nil)
			}
			return obj, nil
		},
	})
	pods, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	own := func(c *corev1.ConfigMap) (*corev1.ConfigMap, error) {
		c.Labels = map[string]string{"transformed": "own"}
		return c, nil
	}
	cms, err := For(f, ForOptions[*corev1.ConfigMap]{Transform: own})
	if err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	if p, ok := pods.GetIndexer().GetByKey("a/p1"); !ok || p.ManagedFields != nil {
		t.Errorf("cached Pod %v, want it without managedFields", p)
	}
	if c, ok := cms.GetIndexer().GetByKey("a/c1"); !ok || c.ManagedFields == nil || c.Labels["transformed"] != "own" {
		t.Errorf("cached ConfigMap %v, want its own transform only", c)
	}

	// A default transform that returns another type.
	srv2 := newFakeAPI(t, podsResource)
	create(t, srv2, factoryPod("a", "p1", ""))
	f2 := newTestFactory(t, srv2, FactoryOptions{
		DefaultTransform: func(any) (any, error) { return &corev1.ConfigMap{}, nil },
		Informer:         InformerOptions{Reflector: ReflectorOptions{WatchErrorHandler: func(context.Context, error) {}}},
	})
	if _, err := For[*corev1.Pod](f2); err != nil {
		t.Fatal(err)
	}
	f2.Start(t.Context())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err = f2.WaitForCacheSync(ctx)
	var te *TransformError
	if !errors.Is(err, ErrSyncFailed) || !errors.Is(err, ErrUnexpectedObject) || !errors.As(err, &te) {
		t.Errorf("WaitForCacheSync = %v, want a sync failure with a *TransformError wrapping ErrUnexpectedObject", err)
	}
}

// ForContext gives up discovery when its context ends, and makes no
// informer.
func TestForContext(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	f := newTestFactory(t, srv, FactoryOptions{})
	ctx, cancel := context.WithCancelCause(t.Context())
	stop := errors.New("caller gave up")
	cancel(stop)
	if _, err := ForContext[*corev1.Pod](ctx, f); !errors.Is(err, stop) {
		t.Errorf("ForContext with an ended context = %v, want its cause", err)
	}
	pods, err := ForContext[*corev1.Pod](t.Context(), f)
	if err != nil || pods == nil {
		t.Fatalf("ForContext = %v, %v", pods, err)
	}
	if again, err := For[*corev1.Pod](f); err != nil || again != pods {
		t.Errorf("For after ForContext = %v, %v, want the same informer", again, err)
	}
}

// Remove stops one informer and forgets it: its handlers get nothing
// more, the others run on, a later For makes a new one, and the removed
// informer and its cache are garbage once the test drops them.
func TestFactoryRemove(t *testing.T) {
	srv := newFakeAPI(t, podsResource, configMapsResource)
	create(t, srv, factoryPod("a", "p1", ""))
	f := newTestFactory(t, srv, FactoryOptions{})
	pods, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	cms, err := For[*corev1.ConfigMap](f)
	if err != nil {
		t.Fatal(err)
	}
	podLog, cmLog := addLog(t, pods), addLog(t, cms)
	syncFactory(t, t.Context(), f)
	podLog.waitFor(t, "add a/p1")
	gone := weak.Make(pods)

	if err := f.Remove(t.Context(), "v1/pods"); err != nil {
		t.Fatal(err)
	}
	if !pods.IsStopped() {
		t.Error("the removed informer runs on")
	}
	if err := f.Remove(t.Context(), "v1/pods"); !errors.Is(err, ErrNoInformer) {
		t.Errorf("second Remove = %v, want ErrNoInformer", err)
	}
	create(t, srv, factoryPod("a", "p2", ""), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "c1"}})
	cmLog.waitFor(t, "add a/c1")
	if got, _ := podLog.snapshot(); !slices.Equal(got, []string{"add a/p1"}) {
		t.Errorf("the removed informer's handler got %q after Remove", got)
	}
	synced, err := f.WaitForCacheSync(t.Context())
	if err != nil || len(synced) != 1 || !synced["v1/configmaps"] {
		t.Errorf("WaitForCacheSync after Remove = %v, %v; want v1/configmaps only", synced, err)
	}

	again, err := For[*corev1.Pod](f)
	if err != nil || again == pods {
		t.Fatalf("For after Remove = %p, %v; want a new informer", again, err)
	}
	log := addLog(t, again)
	log.waitFor(t, "add a/p1", "add a/p2")

	pods, podLog = nil, nil
	for range 5 {
		runtime.GC()
		if gone.Value() == nil {
			break
		}
	}
	if gone.Value() != nil {
		t.Error("the removed informer is still reachable")
	}
}

// An informer removed before Start never runs, and is stopped.
func TestFactoryRemoveBeforeStart(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	f := newTestFactory(t, srv, FactoryOptions{})
	pods, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(t.Context(), pods.Name()); err != nil {
		t.Fatal(err)
	}
	if !pods.IsStopped() {
		t.Error("removed before Start, the informer is not stopped")
	}
	if _, err := pods.AddEventHandler(ResourceEventHandlerFuncs[*corev1.Pod]{}); err == nil {
		t.Error("AddEventHandler on a removed informer succeeded")
	}
	f.Start(t.Context())
	if synced, err := f.WaitForCacheSync(t.Context()); err != nil || len(synced) != 0 {
		t.Errorf("WaitForCacheSync = %v, %v; want nothing to wait for", synced, err)
	}
	if n := len(resourceRequests(srv, "/pods")); n != 0 {
		t.Errorf("%d pods requests, want none", n)
	}
}

// TestFactoryWrapListWatch: the wrapper sees every LIST and WATCH of the
// informer (here it adds a label selector and drops what it lists),
// is called once, and later calls share the informer only with the same
// wrapper or none.
func TestFactoryWrapListWatch(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	create(t, srv, factoryPod("a", "web", "n1"))
	f := newTestFactory(t, srv, FactoryOptions{})
	var wrapped, lists, watches atomic.Int32
	wrap := func(lw ListerWatcher[*corev1.Pod]) ListerWatcher[*corev1.Pod] {
		wrapped.Add(1)
		return WithoutWatchList[*corev1.Pod](ListWatchFuncs[*corev1.Pod]{
			ListFunc: func(ctx context.Context, o metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
				lists.Add(1)
				o.LabelSelector = "wrapped=yes"
				page, err := lw.List(ctx, o)
				if page != nil {
					page.Items = nil // as a server applying the selector would
				}
				return page, err
			},
			WatchFunc: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				watches.Add(1)
				o.LabelSelector = "wrapped=yes"
				return lw.Watch(ctx, o)
			},
		})
	}
	inf, err := For(f, ForOptions[*corev1.Pod]{WrapListWatch: wrap})
	if err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	if n := inf.GetIndexer().Len(); n != 0 {
		t.Errorf("%d pods cached, want none: the wrapper's selector matches none", n)
	}
	if lists.Load() == 0 {
		t.Error("the wrapper saw no LIST")
	}
	for _, r := range resourceRequests(srv, "/pods") {
		if got := r.Query.Get("labelSelector"); got != "wrapped=yes" {
			t.Errorf("pods request %s?%s did not go through the wrapper", r.Path, r.Query.Encode())
		}
	}
	for _, o := range []ForOptions[*corev1.Pod]{{}, {WrapListWatch: wrap}} {
		if got, err := For(f, o); err != nil || got != inf {
			t.Errorf("For(%+v) = %v, %v; want the shared informer", o, got, err)
		}
	}
	other := func(lw ListerWatcher[*corev1.Pod]) ListerWatcher[*corev1.Pod] { return lw }
	if _, err := For(f, ForOptions[*corev1.Pod]{WrapListWatch: other}); !errors.Is(err, ErrOptionsConflict) {
		t.Errorf("For with another WrapListWatch = %v, want ErrOptionsConflict", err)
	}
	if n := wrapped.Load(); n != 1 {
		t.Errorf("WrapListWatch called %d times, want once", n)
	}
}

// TestFactoryLabelSelectorDoubleEquals: "==" and "=" are one operator, so
// the spellings share the informer (they used to conflict).
func TestFactoryLabelSelectorDoubleEquals(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	f := newTestFactory(t, srv, FactoryOptions{})
	a, err := For(f, ForOptions[*corev1.Pod]{LabelSelector: "app=web,tier!=db"})
	if err != nil {
		t.Fatal(err)
	}
	for _, sel := range []string{"app==web,tier!=db", "tier!=db, app == web"} {
		if b, err := For(f, ForOptions[*corev1.Pod]{LabelSelector: sel}); err != nil || b != a {
			t.Errorf("For(LabelSelector %q) = %v (shared: %v), want the informer of \"app=web,tier!=db\"", sel, err, b == a)
		}
	}
}

// TestFactoryUnknownModes: a QueueMode or DecodingMode the factory does
// not know is an error (an unknown DecodingMode used to be taken as
// DecodeClientGo).
func TestFactoryUnknownModes(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	for _, opts := range []FactoryOptions{
		{Decoding: DecodingMode(7)},
		{Informer: InformerOptions{Queue: QueueMode(7)}},
	} {
		if _, err := NewFactory(srv.Config(), opts); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("NewFactory(%+v) = %v, want ErrInvalidOptions", opts, err)
		}
	}
}

// With WatchHTTP1 the factory's watches go through watchconn's transport
// (the fake API is plain HTTP, so both transports speak HTTP/1.1 to it;
// watchconn's tests check the protocol): the informer syncs and sees a
// watched update, and Shutdown leaves no goroutine (goleak, TestMain). A
// config whose transport the option cannot change is refused.
func TestFactoryWatchHTTP1(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	create(t, srv, factoryPod("a", "web", "n1"))
	f := newTestFactory(t, srv, FactoryOptions{WatchHTTP1: true})
	pods, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	updated := make(chan string, 1)
	if _, err := pods.AddEventHandler(ResourceEventHandlerFuncs[*corev1.Pod]{
		UpdateFunc: func(_, p *corev1.Pod) { updated <- p.Spec.NodeName },
	}); err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	if err := srv.Update(factoryPod("a", "web", "n2")); err != nil {
		t.Fatal(err)
	}
	select {
	case node := <-updated:
		if node != "n2" {
			t.Errorf("update to node %q, want n2", node)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no update came in 30 s")
	}
	if len(resourceRequests(srv, "/pods")) == 0 {
		t.Error("no pods request recorded")
	}

	custom := srv.Config()
	custom.Transport = http.DefaultTransport
	h2only := srv.Config()
	h2only.TLSClientConfig.NextProtos = []string{"h2"}
	for name, cfg := range map[string]*rest.Config{"its own Transport": custom, "HTTP/2 only": h2only} {
		if _, err := NewFactory(cfg, FactoryOptions{WatchHTTP1: true}); !errors.Is(err, watchconn.ErrUnsupported) {
			t.Errorf("%s: NewFactory = %v, want watchconn.ErrUnsupported", name, err)
		}
		f, err := NewFactory(cfg, FactoryOptions{})
		if err != nil {
			t.Errorf("%s, without WatchHTTP1: %v", name, err)
		} else {
			f.Shutdown()
		}
	}
}
