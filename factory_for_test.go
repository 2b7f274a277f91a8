package informer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// TestFactoryForPod: For[*corev1.Pod] lists and watches over protobuf,
// syncs, delivers adds, updates and deletes, and its Lister reports
// NotFound for the pods resource; with a watch-list stream or a LIST, with
// either queue.
func TestFactoryForPod(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts InformerOptions
		// wantQuery is in the query of the request that gets the initial
		// state.
		wantQuery string
	}{
		{"watch-list", InformerOptions{}, "sendInitialEvents=true"},
		{"list", InformerOptions{Reflector: ReflectorOptions{WatchList: WatchListOff}}, "resourceVersion=0"},
		{"deltafifo", InformerOptions{Queue: QueueDeltaFIFO, Reflector: ReflectorOptions{WatchList: WatchListOff}}, "resourceVersion=0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeAPI(t, podsResource)
			create(t, srv, factoryPod("a", "web", "node-1"), factoryPod("b", "db", "node-2"))
			f := newTestFactory(t, srv, FactoryOptions{Informer: tc.opts})
			pods, err := For[*corev1.Pod](f)
			if err != nil {
				t.Fatal(err)
			}
			if pods.Name() != "v1/pods" {
				t.Errorf("Name() = %q, want v1/pods", pods.Name())
			}
			log := addLog(t, pods)
			if synced := syncFactory(t, t.Context(), f); !synced["v1/pods"] || len(synced) != 1 {
				t.Errorf("WaitForCacheSync = %v, want map[v1/pods:true]", synced)
			}
			log.waitFor(t, "add a/web", "add b/db")

			p := factoryPod("a", "web", "node-3")
			if err := srv.Update(p); err != nil {
				t.Fatal(err)
			}
			if err := srv.Delete(factoryPod("b", "db", "")); err != nil {
				t.Fatal(err)
			}
			log.waitFor(t, "update a/web", "delete b/db")
			got, err := pods.Lister().ByNamespace("a").Get("web")
			if err != nil || got.Spec.NodeName != "node-3" {
				t.Errorf("Get(a/web) = %v, %v; want node-3", got, err)
			}
			_, err = pods.Lister().ByNamespace("b").Get("db")
			var status apierrors.APIStatus
			if !apierrors.IsNotFound(err) || !errors.As(err, &status) || status.Status().Details.Kind != "pods" {
				t.Errorf("Get(b/db) error = %v, want NotFound for pods", err)
			}

			reqs := resourceRequests(srv, "/pods")
			if len(reqs) == 0 || !strings.Contains(reqs[0].Query.Encode(), tc.wantQuery) {
				t.Errorf("first request %+v, want %s in its query", reqs, tc.wantQuery)
			}
			for _, r := range reqs {
				if r.Accept != "application/vnd.kubernetes.protobuf,application/json" || r.ContentType != runtime.ContentTypeProtobuf {
					t.Errorf("request %s?%s: Accept %q, answered in %q; want protobuf", r.Path, r.Query.Encode(), r.Accept, r.ContentType)
				}
			}
		})
	}
}

// TestFactoryNamespaceAndTweak: the factory's namespace and
// TweakListOptions reach every request; the cache holds that namespace.
func TestFactoryNamespaceAndTweak(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	create(t, srv, factoryPod("a", "web", ""), factoryPod("b", "db", ""))
	f := newTestFactory(t, srv, FactoryOptions{
		Namespace:        "a",
		TweakListOptions: func(o *metav1.ListOptions) { o.LabelSelector = "tier=front" },
	})
	pods, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	if keys := slices.Sorted(pods.GetIndexer().Keys()); !slices.Equal(keys, []string{"a/web"}) {
		t.Errorf("cache keys %q, want [a/web]", keys)
	}
	for _, r := range resourceRequests(srv, "/pods") {
		if r.Path != "/api/v1/namespaces/a/pods" || r.Query.Get("labelSelector") != "tier=front" {
			t.Errorf("request %s?%s, want /api/v1/namespaces/a/pods with labelSelector=tier=front", r.Path, r.Query.Encode())
		}
	}
}

// TestFactoryCRD: a CRD Go type registered in a user scheme is listed and
// watched in JSON; a CRD installed after the factory has discovered is
// found, the RESTMapper being reset once.
func TestFactoryCRD(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	f := newTestFactory(t, srv, FactoryOptions{Scheme: widgetScheme(t)})
	if _, err := For[*corev1.Pod](f); err != nil { // discovery, without widgets
		t.Fatal(err)
	}
	if _, err := For[*widget](f); !errors.Is(err, ErrUnknownResource) {
		t.Fatalf("For[*widget] before the CRD: error %v, want ErrUnknownResource", err)
	}

	srv.Serve(widgetsResource) // the CRD is installed
	create(t, srv, &widget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "w1"}, Size: 3})
	widgets, err := For[*widget](f)
	if err != nil {
		t.Fatal(err)
	}
	log := addLog(t, widgets)
	synced := syncFactory(t, t.Context(), f)
	if !synced["example.com/v1/widgets"] || !synced["v1/pods"] {
		t.Errorf("WaitForCacheSync = %v, want both synced", synced)
	}
	log.waitFor(t, "add a/w1")
	if err := srv.Update(&widget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "w1"}, Size: 4}); err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, "update a/w1")
	if w, err := widgets.Lister().ByNamespace("a").Get("w1"); err != nil || w.Size != 4 {
		t.Errorf("Get(a/w1) = %+v, %v; want size 4", w, err)
	}
	for _, r := range resourceRequests(srv, "/widgets") {
		if r.Path != "/apis/example.com/v1/widgets" || r.Accept != runtime.ContentTypeJSON || r.ContentType != runtime.ContentTypeJSON {
			t.Errorf("request %s: Accept %q, answered in %q; want /apis/example.com/v1/widgets in JSON", r.Path, r.Accept, r.ContentType)
		}
	}
}

// TestFactoryContentTypeFromConfig: a *rest.Config that sets a content type
// keeps it for built-in types, and JSON stays the only one for CRD types.
func TestFactoryContentTypeFromConfig(t *testing.T) {
	srv := newFakeAPI(t, podsResource, widgetsResource)
	cfg := srv.Config()
	cfg.ContentType = runtime.ContentTypeJSON
	f, err := NewFactory(cfg, FactoryOptions{Scheme: widgetScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Shutdown)
	if _, err := For[*corev1.Pod](f); err != nil {
		t.Fatal(err)
	}
	if _, err := For[*widget](f); err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	for _, r := range append(resourceRequests(srv, "/pods"), resourceRequests(srv, "/widgets")...) {
		if r.ContentType != runtime.ContentTypeJSON {
			t.Errorf("request %s answered in %q, want JSON", r.Path, r.ContentType)
		}
	}
}

// TestFactorySharesInformers: a second For, ForUnstructured or ForMetadata
// returns the same informer when its options agree, and an error when they
// do not; indexers are merged.
func TestFactorySharesInformers(t *testing.T) {
	byNode := func(p *corev1.Pod) ([]string, error) { return []string{p.Spec.NodeName}, nil }
	byApp := func(p *corev1.Pod) ([]string, error) { return []string{p.Labels["app"]}, nil }
	otherByNode := func(p *corev1.Pod) ([]string, error) { return []string{p.Spec.NodeName}, nil }
	strip := func(p *corev1.Pod) (*corev1.Pod, error) { p.ManagedFields = nil; return p, nil }
	// stripper makes a new closure each time: equal code, different values.
	stripper := func(field string) TransformFunc[*corev1.Pod] {
		return func(p *corev1.Pod) (*corev1.Pod, error) { delete(p.Annotations, field); return p, nil }
	}

	srv := newFakeAPI(t, podsResource, nodesResource)
	create(t, srv, factoryPod("a", "web", "node-1"))
	f := newTestFactory(t, srv, FactoryOptions{Namespace: "a"})
	first, err := For(f, ForOptions[*corev1.Pod]{Transform: strip, Indexers: Indexers[*corev1.Pod]{"node": byNode}})
	if err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)

	for _, tc := range []struct {
		name    string
		opts    []ForOptions[*corev1.Pod]
		wantErr error
	}{
		{"no options", nil, nil},
		{"same options", []ForOptions[*corev1.Pod]{{Namespace: "a", Transform: strip, Indexers: Indexers[*corev1.Pod]{"node": byNode}}}, nil},
		{"new indexer", []ForOptions[*corev1.Pod]{{Indexers: Indexers[*corev1.Pod]{"app": byApp}}}, nil},
		{"other namespace", []ForOptions[*corev1.Pod]{{Namespace: "b"}}, ErrOptionsConflict},
		{"other resync", []ForOptions[*corev1.Pod]{{ResyncPeriod: 1e9}}, ErrOptionsConflict},
		{"other transform", []ForOptions[*corev1.Pod]{{Transform: stripper("x")}}, ErrOptionsConflict},
		{"index name taken", []ForOptions[*corev1.Pod]{{Indexers: Indexers[*corev1.Pod]{"node": otherByNode}}}, ErrIndexConflict},
		{"nil index func", []ForOptions[*corev1.Pod]{{Indexers: Indexers[*corev1.Pod]{"x": nil}}}, ErrInvalidOptions},
		{"two options", []ForOptions[*corev1.Pod]{{}, {}}, ErrInvalidOptions},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := For(f, tc.opts...)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("For error %v, want %v", err, tc.wantErr)
			}
			if err == nil && got != first {
				t.Errorf("For returned another informer")
			}
		})
	}

	// The merged index was built over the cached pods, and the failed
	// calls changed nothing.
	if keys, err := first.GetIndexer().IndexKeys("app", "web"); err != nil || !slices.Equal(keys, []string{"a/web"}) {
		t.Errorf("IndexKeys(app, web) = %q, %v; want [a/web]", keys, err)
	}
	if idx := first.GetIndexer().GetIndexers(); len(idx) != 3 {
		t.Errorf("indexes %v, want namespace, node and app", slices.Sorted(mapKeys(idx)))
	}

	// Closures of one literal are different functions.
	t1 := stripper("a")
	if _, err := For(f, ForOptions[*corev1.Pod]{Transform: t1}); !errors.Is(err, ErrOptionsConflict) {
		t.Errorf("For with a new closure: %v, want ErrOptionsConflict", err)
	}
	if sameFunc(stripper("a"), stripper("a")) || !sameFunc(t1, t1) || !sameFunc(TransformFunc[*corev1.Pod](strip), strip) {
		t.Error("sameFunc compares closures wrongly")
	}

	// Cluster-scoped resources take no namespace.
	if _, err := For[*corev1.Node](f); err != nil {
		t.Errorf("For[*corev1.Node] in a namespaced factory: %v", err)
	}
	if _, err := For(f, ForOptions[*corev1.Node]{Namespace: "a"}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("For[*corev1.Node] with a namespace: %v, want ErrInvalidOptions", err)
	}
}

func mapKeys[M ~map[string]V, V any](m M) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestFactoryConcurrentFor: concurrent first calls get one informer.
func TestFactoryConcurrentFor(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	f := newTestFactory(t, srv, FactoryOptions{})
	f.Start(t.Context())
	var wg sync.WaitGroup
	got := make([]*SharedIndexInformer[*corev1.Pod], 8)
	errs := make([]error, len(got))
	for i := range got {
		wg.Go(func() { got[i], errs[i] = For[*corev1.Pod](f) })
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || got[i] != got[0] {
			t.Errorf("call %d: %p, %v; want %p", i, got[i], errs[i], got[0])
		}
	}
}

// TestFactoryForErrors: bad input is an error, never a panic.
func TestFactoryForErrors(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	f := newTestFactory(t, srv, FactoryOptions{})

	unreachable := newFakeAPI(t)
	cfg := unreachable.Config()
	unreachable.Close()
	down, err := NewFactory(cfg, FactoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(down.Shutdown)

	for _, tc := range []struct {
		name    string
		err     func() error
		wantErr error
		wantMsg string
	}{
		{"unregistered type", func() error { _, err := For[*widget](f); return err }, ErrNotRegistered, "*informer.widget"},
		{"unstructured", func() error { _, err := For[*unstructured.Unstructured](f); return err }, ErrNotRegistered, "ForUnstructured"},
		{"metadata", func() error { _, err := For[*metav1.PartialObjectMetadata](f); return err }, ErrNotRegistered, "ForMetadata"},
		{"unknown resource", func() error { _, err := For[*corev1.Secret](f); return err }, ErrUnknownResource, "Secret"},
		{"unknown GVR", func() error { _, err := ForUnstructured(f, widgetsGVR); return err }, ErrUnknownResource, "widgets"},
		{"incomplete GVR", func() error { _, err := ForMetadata(f, schema.GroupVersionResource{Resource: "pods"}); return err }, ErrInvalidOptions, "incomplete"},
		{"negative resync", func() error { _, err := For(f, ForOptions[*corev1.Pod]{ResyncPeriod: -1}); return err }, ErrInvalidOptions, "ResyncPeriod"},
		{"nil factory", func() error { _, err := For[*corev1.Pod](nil); return err }, ErrInvalidOptions, "nil *Factory"},
		{"unreachable server", func() error { _, err := For[*corev1.Pod](down); return err }, nil, "connection refused"},
		{"nil config", func() error { _, err := NewFactory(nil, FactoryOptions{}); return err }, ErrInvalidOptions, "nil"},
		{"negative default resync", func() error { _, err := NewFactory(&rest.Config{}, FactoryOptions{DefaultResync: -1}); return err }, ErrInvalidOptions, "DefaultResync"},
		{"reflector resync", func() error {
			_, err := NewFactory(&rest.Config{}, FactoryOptions{Informer: InformerOptions{Reflector: ReflectorOptions{ResyncPeriod: 1}}})
			return err
		}, ErrInvalidOptions, "resync"},
		{"unknown queue", func() error {
			_, err := NewFactory(&rest.Config{}, FactoryOptions{Informer: InformerOptions{Queue: 9}})
			return err
		}, ErrInvalidOptions, "QueueMode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) || !strings.Contains(err.Error(), tc.wantMsg) || !strings.HasPrefix(err.Error(), "informer: ") {
				t.Errorf("error %v, want one wrapping %v, with %q, prefixed informer:", err, tc.wantErr, tc.wantMsg)
			}
		})
	}
}

// TestFactoryForUnstructuredAndMetadata: ForUnstructured and ForMetadata
// sync and deliver events beside For of the same resource, one informer
// each per resource.
func TestFactoryForUnstructuredAndMetadata(t *testing.T) {
	srv := newFakeAPI(t, podsResource, configMapsResource)
	create(t, srv, factoryPod("a", "web", "node-1"))
	f := newTestFactory(t, srv, FactoryOptions{})
	typed, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	u, err := ForUnstructured(f, podsGVR)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ForMetadata(f, podsGVR)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := ForUnstructured(f, podsGVR); err != nil || again != u {
		t.Errorf("second ForUnstructured: %p, %v; want %p", again, err, u)
	}
	singular := corev1.SchemeGroupVersion.WithResource("pod") // the RESTMapper knows it as pods
	if again, err := ForUnstructured(f, singular); err != nil || again != u {
		t.Errorf("ForUnstructured(%v): %p, %v; want %p", singular, again, err, u)
	}
	if again, err := ForMetadata(f, podsGVR, ForOptions[*metav1.PartialObjectMetadata]{Namespace: "a"}); !errors.Is(err, ErrOptionsConflict) {
		t.Errorf("ForMetadata in another namespace: %p, %v; want ErrOptionsConflict", again, err)
	}
	cms, err := ForMetadata(f, configMapsGVR, ForOptions[*metav1.PartialObjectMetadata]{Namespace: "a"})
	if err != nil {
		t.Fatal(err)
	}
	tlog, ulog, mlog, cmlog := addLog(t, typed), addLog(t, u), addLog(t, m), addLog(t, cms)
	synced := syncFactory(t, t.Context(), f)
	want := map[string]bool{"v1/pods": true, "v1/pods (unstructured)": true, "v1/pods (metadata)": true, "v1/configmaps (metadata)": true}
	if fmt.Sprint(synced) != fmt.Sprint(want) {
		t.Errorf("WaitForCacheSync = %v, want %v", synced, want)
	}
	ulog.waitFor(t, "add a/web")
	mlog.waitFor(t, "add a/web")
	create(t, srv, factoryPod("a", "api", "node-2"), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cfg"}})
	for _, l := range []interface{ waitFor(testing.TB, ...string) }{tlog, ulog, mlog} {
		l.waitFor(t, "add a/api")
	}
	cmlog.waitFor(t, "add a/cfg")
	if got, err := u.Lister().ByNamespace("a").Get("api"); err != nil || got.Object["spec"].(map[string]any)["nodeName"] != "node-2" {
		t.Errorf("unstructured a/api = %v, %v", got, err)
	}
	if got, err := m.Lister().List(labels.SelectorFromSet(labels.Set{"app": "api"})); err != nil || len(got) != 1 || got[0].Name != "api" {
		t.Errorf("metadata List(app=api) = %v, %v", got, err)
	}
	var metadataRequests int
	for _, r := range resourceRequests(srv, "/pods") {
		if strings.Contains(r.Accept, "as=PartialObjectMetadata") {
			metadataRequests++
		}
	}
	if metadataRequests == 0 {
		t.Error("no request for pods asked for PartialObjectMetadata")
	}
	cmReqs := resourceRequests(srv, "/configmaps")
	if len(cmReqs) == 0 || !strings.Contains(cmReqs[0].Accept, "as=PartialObjectMetadata") || cmReqs[0].Path != "/api/v1/namespaces/a/configmaps" {
		t.Errorf("configmaps requests %+v, want metadata requests in namespace a", cmReqs)
	}
}

// lateMapper knows no kind until it is reset, like a discovery cache made
// before a CRD was installed.
type lateMapper struct {
	*meta.DefaultRESTMapper
	mu     sync.Mutex
	resets int
}

func (m *lateMapper) RESTMappingWithContext(ctx context.Context, gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.mu.Lock()
	resets := m.resets
	m.mu.Unlock()
	if resets == 0 {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return m.DefaultRESTMapper.RESTMappingWithContext(ctx, gk, versions...)
}

func (m *lateMapper) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resets++
}

// blockingMapper blocks until its context ends, like discovery from a
// server that does not answer.
type blockingMapper struct {
	*meta.DefaultRESTMapper
	entered chan struct{}
}

func (m *blockingMapper) RESTMappingWithContext(ctx context.Context, gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	close(m.entered)
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestFactoryRESTMapper: a user's RESTMapper is used, reset once when it
// knows no match; Shutdown ends a For waiting for discovery.
func TestFactoryRESTMapper(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	known := meta.NewDefaultRESTMapper(nil)
	known.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)

	late := &lateMapper{DefaultRESTMapper: known}
	f := newTestFactory(t, srv, FactoryOptions{RESTMapper: late})
	if _, err := For[*corev1.ConfigMap](f); !errors.Is(err, ErrUnknownResource) || late.resets != 1 {
		t.Errorf("For[*corev1.ConfigMap]: %v after %d resets; want ErrUnknownResource after 1", err, late.resets)
	}
	if _, err := For[*corev1.Pod](f); err != nil || late.resets != 1 {
		t.Errorf("For[*corev1.Pod]: %v after %d resets; want no error and no more resets", err, late.resets)
	}
	syncFactory(t, t.Context(), f)

	blocking := &blockingMapper{DefaultRESTMapper: known, entered: make(chan struct{})}
	f = newTestFactory(t, srv, FactoryOptions{RESTMapper: blocking})
	errc := make(chan error)
	go func() {
		_, err := For[*corev1.Pod](f)
		errc <- err
	}()
	<-blocking.entered
	f.Shutdown()
	if err := <-errc; !errors.Is(err, ErrFactoryStopped) {
		t.Errorf("For during Shutdown: %v, want ErrFactoryStopped", err)
	}
}
