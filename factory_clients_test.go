package informer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
)

// clientsFactory returns a fake clientset holding objs and a factory over
// it (NewFactoryForClients), shut down when the test ends.
func clientsFactory(t testing.TB, objs ...runtime.Object) (*fake.Clientset, *Factory) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	f, err := NewFactoryForClients(FactoryClients{Kube: cs}, FactoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Shutdown)
	return cs, f
}

// watchStarted makes the fake clientset's watches of resource signal on the
// returned channel once they are registered with its tracker. The tracker
// does not replay changes to a watch started after them, so a test must
// know the watch is there before it changes objects.
func watchStarted(cs *fake.Clientset, resource string) <-chan struct{} {
	started := make(chan struct{}, 16)
	cs.PrependWatchReactor(resource, func(action clienttesting.Action) (bool, watch.Interface, error) {
		a := action.(clienttesting.WatchActionImpl)
		opts := a.GetWatchRestrictions()
		w, err := cs.Tracker().Watch(a.GetResource(), a.GetNamespace(), metav1.ListOptions{LabelSelector: opts.Labels.String()})
		started <- struct{}{}
		return true, w, err
	})
	return started
}

// For over client-go's fake Clientset: the informer lists and watches
// through the typed client, and the changes made through the fake reach the
// handler and the lister.
func TestFactoryForClientsFakeClientset(t *testing.T) {
	cs := fake.NewClientset(factoryPod("a", "web", "node-1"), factoryPod("b", "db", ""),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
	started := watchStarted(cs, "pods")
	f, err := NewFactoryForClients(FactoryClients{Kube: cs}, FactoryOptions{Namespace: "a"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Shutdown)
	pods, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := For[*corev1.Node](f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := For(f, ForOptions[*corev1.Node]{Namespace: "a"}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("For Node in a namespace: %v, want ErrInvalidOptions (cluster-scoped)", err)
	}
	plog := addLog(t, pods)
	synced := syncFactory(t, t.Context(), f)
	if !synced["v1/pods"] || !synced["v1/nodes"] {
		t.Errorf("synced %v", synced)
	}
	<-started
	plog.waitFor(t, "add a/web")
	if _, err := pods.Lister().ByNamespace("b").Get("db"); !apierrors.IsNotFound(err) {
		t.Errorf("a Pod of namespace b reached an informer of namespace a: %v", err)
	}
	if n, err := nodes.Lister().Get("node-1"); err != nil || n.Name != "node-1" {
		t.Errorf("node-1: %v, %v", n, err)
	}

	ctx := t.Context()
	if _, err := cs.CoreV1().Pods("a").Create(ctx, factoryPod("a", "api", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("a").Update(ctx, factoryPod("a", "web", "node-2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods("a").Delete(ctx, "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	plog.waitFor(t, "add a/api", "update a/web", "delete a/api")
	if p, err := pods.Lister().ByNamespace("a").Get("web"); err != nil || p.Spec.NodeName != "node-2" {
		t.Errorf("a/web after the update: %v, %v", p, err)
	}
}

// A reactor's error reaches the informer as the API server's would: a
// Forbidden list keeps the cache from syncing, and WaitForCacheSync returns
// as soon as the informer meets it, without waiting for its context, with
// a *SyncError naming the informer and the Forbidden cause. The informer
// goes on retrying and syncs once the list is allowed.
func TestFactoryForClientsReactorError(t *testing.T) {
	cs := fake.NewClientset(factoryPod("a", "p1", "n1"))
	var allowed atomic.Bool
	cs.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		if allowed.Load() {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no RBAC"))
	})
	reported := make(chan error, 1)
	f, err := NewFactoryForClients(FactoryClients{Kube: cs}, FactoryOptions{Informer: InformerOptions{Reflector: ReflectorOptions{
		Backoff: Backoff{Initial: 10 * time.Millisecond, Max: 20 * time.Millisecond},
		WatchErrorHandler: func(_ context.Context, err error) {
			select {
			case reported <- err:
			default:
			}
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Shutdown)
	inf, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	f.Start(t.Context())
	// A context that outlives the test: only the failure can end the wait.
	synced, err := f.WaitForCacheSync(context.Background())
	var syncErr *SyncError
	switch {
	case !errors.Is(err, ErrNotSynced), !errors.Is(err, ErrSyncFailed), !apierrors.IsForbidden(err):
		t.Fatalf("WaitForCacheSync = %v, want ErrNotSynced, ErrSyncFailed and Forbidden", err)
	case !errors.As(err, &syncErr) || syncErr.Informer != "v1/pods":
		t.Errorf("WaitForCacheSync = %v, want a *SyncError of v1/pods", err)
	case synced["v1/pods"]:
		t.Errorf("synced = %v, want v1/pods not synced", synced)
	}
	if got := inf.SyncFailure(); !apierrors.IsForbidden(got) {
		t.Errorf("SyncFailure() = %v, want Forbidden", got)
	}
	if err := <-reported; !apierrors.IsForbidden(err) {
		t.Errorf("reported %v, want Forbidden", err)
	}
	allowed.Store(true)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		synced, err = f.WaitForCacheSync(ctx)
		if err == nil || ctx.Err() != nil {
			break
		}
		// A retry failed before the list was allowed: wait for the next.
	}
	if err != nil || !synced["v1/pods"] {
		t.Fatalf("after allowing the list, WaitForCacheSync = %v, %v", synced, err)
	}
	if got := inf.SyncFailure(); got != nil {
		t.Errorf("SyncFailure() after sync = %v, want nil", got)
	}
}

// Errors that pass with a retry (a 503, a refused connection, a 429, a
// 410) do not end WaitForCacheSync early: it waits for its context.
func TestFactoryWaitForCacheSyncTransientErrors(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("try later")
	})
	f, err := NewFactoryForClients(FactoryClients{Kube: cs}, FactoryOptions{Informer: InformerOptions{Reflector: ReflectorOptions{
		Backoff:           Backoff{Initial: 10 * time.Millisecond, Max: 20 * time.Millisecond},
		WatchErrorHandler: func(context.Context, error) {},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Shutdown)
	if _, err := For[*corev1.Pod](f); err != nil {
		t.Fatal(err)
	}
	f.Start(t.Context())
	ctx, cancel := context.WithTimeoutCause(t.Context(), 300*time.Millisecond, errors.New("test deadline"))
	defer cancel()
	_, err = f.WaitForCacheSync(ctx)
	if !errors.Is(err, ErrNotSynced) || errors.Is(err, ErrSyncFailed) || !strings.Contains(err.Error(), "test deadline") {
		t.Errorf("WaitForCacheSync = %v, want ErrNotSynced with the context's cause only", err)
	}
}

// The typed clients tell resources and scopes without discovery.
func TestTypedClientMapper(t *testing.T) {
	m := &typedClientMapper{clients: fake.NewClientset(), scheme: scheme.Scheme}
	for _, tc := range []struct {
		obj        runtime.Object
		gvr        schema.GroupVersionResource
		namespaced bool
	}{
		{&corev1.Pod{}, corev1.SchemeGroupVersion.WithResource("pods"), true},
		{&corev1.Node{}, corev1.SchemeGroupVersion.WithResource("nodes"), false},
		{&corev1.ConfigMap{}, corev1.SchemeGroupVersion.WithResource("configmaps"), true},
		{&appsv1.Deployment{}, appsv1.SchemeGroupVersion.WithResource("deployments"), true},
		{&networkingv1.NetworkPolicy{}, networkingv1.SchemeGroupVersion.WithResource("networkpolicies"), true},
	} {
		gvks, _, err := scheme.Scheme.ObjectKinds(tc.obj)
		if err != nil {
			t.Fatal(err)
		}
		mapping, err := m.RESTMapping(gvks[0].GroupKind(), gvks[0].Version)
		if err != nil {
			t.Errorf("%v: %v", gvks[0], err)
			continue
		}
		if mapping.Resource != tc.gvr || (mapping.Scope.Name() == meta.RESTScopeNameNamespace) != tc.namespaced {
			t.Errorf("%v: mapped to %v, scope %v; want %v, namespaced %v", gvks[0], mapping.Resource, mapping.Scope.Name(), tc.gvr, tc.namespaced)
		}
		if gvk, err := m.KindFor(tc.gvr); err != nil || gvk != gvks[0] {
			t.Errorf("KindFor(%v) = %v, %v", tc.gvr, gvk, err)
		}
	}
	if _, err := m.RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Widget"}); !meta.IsNoMatchError(err) {
		t.Errorf("unknown kind: %v, want a no-match error", err)
	}
}

// The dynamic and metadata fakes serve ForUnstructured and ForMetadata, and
// For of a type without a typed client goes through the dynamic client,
// converting each object.
func TestFactoryForClientsDynamicAndMetadata(t *testing.T) {
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cfg"}, Data: map[string]string{"k": "v"}}
	pod := factoryPod("a", "web", "")
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	dyn := dynamicfake.NewSimpleDynamicClient(scheme.Scheme, cm, pod)
	mdScheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(mdScheme); err != nil {
		t.Fatal(err)
	}
	md := metadatafake.NewSimpleMetadataClient(mdScheme, &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: pod.ObjectMeta})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	f, err := NewFactoryForClients(FactoryClients{Dynamic: dyn, Metadata: md}, FactoryOptions{RESTMapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Shutdown)
	cms, err := For[*corev1.ConfigMap](f)
	if err != nil {
		t.Fatal(err)
	}
	us, err := ForUnstructured(f, corev1.SchemeGroupVersion.WithResource("pods"))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := ForMetadata(f, corev1.SchemeGroupVersion.WithResource("pods"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	syncFactory(t, ctx, f)
	if got, err := cms.Lister().ByNamespace("a").Get("cfg"); err != nil || got.Data["k"] != "v" {
		t.Errorf("ConfigMap through the dynamic client: %v, %v", got, err)
	}
	if _, ok := us.GetIndexer().GetByKey("a/web"); !ok {
		t.Error("the unstructured informer does not have a/web")
	}
	if _, ok := ms.GetIndexer().GetByKey("a/web"); !ok {
		t.Error("the metadata informer does not have a/web")
	}
}

func TestNewFactoryForClientsInvalid(t *testing.T) {
	if _, err := NewFactoryForClients(FactoryClients{}, FactoryOptions{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("no clients: %v, want ErrInvalidOptions", err)
	}
	if _, err := NewFactoryForClients(FactoryClients{Kube: fake.NewClientset()}, FactoryOptions{DefaultResync: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("negative resync: %v, want ErrInvalidOptions", err)
	}
	f, err := NewFactoryForClients(FactoryClients{Kube: fake.NewClientset()}, FactoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
	if _, err := ForUnstructured(f, corev1.SchemeGroupVersion.WithResource("pods")); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("ForUnstructured without a dynamic client: %v, want ErrInvalidOptions", err)
	}
}

// Asking for the namespace index explicitly agrees with the built-in one, in
// either order (issue 10, item 8); a function under that name that indexes
// something else is still a conflict.
func TestFactoryNamespaceIndexExplicit(t *testing.T) {
	byNS := func(p *corev1.Pod) ([]string, error) { return []string{p.Namespace}, nil }
	byNode := func(p *corev1.Pod) ([]string, error) { return []string{p.Spec.NodeName}, nil }
	for name, first := range map[string][]ForOptions[*corev1.Pod]{
		"plain first":    nil,
		"explicit first": {{Indexers: Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]}}},
	} {
		t.Run(name, func(t *testing.T) {
			f, err := NewFactoryForClients(FactoryClients{Kube: fake.NewClientset()}, FactoryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Shutdown()
			if _, err := For[*corev1.Pod](f, first...); err != nil {
				t.Fatal(err)
			}
			for _, fn := range []IndexFunc[*corev1.Pod]{MetaNamespaceIndexFunc[*corev1.Pod], byNS} {
				if _, err := For(f, ForOptions[*corev1.Pod]{Indexers: Indexers[*corev1.Pod]{NamespaceIndex: fn}}); err != nil {
					t.Errorf("asking for the namespace index: %v", err)
				}
			}
			if _, err := For[*corev1.Pod](f); err != nil {
				t.Errorf("plain For after: %v", err)
			}
			if _, err := For(f, ForOptions[*corev1.Pod]{Indexers: Indexers[*corev1.Pod]{NamespaceIndex: byNode}}); !errors.Is(err, ErrOptionsConflict) {
				t.Errorf("a node index under NamespaceIndex: %v, want ErrOptionsConflict", err)
			}
		})
	}
}

// Factory.Shutdown returns without delivering handlers' backlogs: a handler
// stalled with 1,000 notifications waiting gets at most the call it is in.
func TestFactoryShutdownDropsBacklog(t *testing.T) {
	cs := fake.NewClientset()
	started := watchStarted(cs, "pods")
	f, err := NewFactoryForClients(FactoryClients{Kube: cs}, FactoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	gate, inCall := make(chan struct{}), make(chan struct{}, 1)
	var calls atomic.Int64
	reg, err := pods.AddEventHandler(ResourceEventHandlerFuncs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) {
		calls.Add(1)
		select {
		case inCall <- struct{}{}:
		default:
		}
		<-gate
	}})
	if err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	<-started
	for i := range 1000 {
		if _, err := cs.CoreV1().Pods("a").Create(t.Context(), factoryPod("a", "p"+itoa(i), ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	<-inCall
	for deadline := time.Now().Add(20 * time.Second); reg.Pending() < 999 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // until the backlog is queued for the handler
	}
	if p := reg.Pending(); p < 999 {
		t.Fatalf("Pending() = %d, want the backlog of 999", p)
	}
	done := make(chan struct{})
	go func() { f.Shutdown(); close(done) }()
	<-pods.Synced() // already closed; Shutdown is under way or done
	for !pods.IsStopped() {
		time.Sleep(time.Millisecond)
	}
	close(gate)
	<-done
	if n := calls.Load(); n > 2 {
		t.Errorf("the handler got %d calls; want the one in progress when Shutdown began, at most one more", n)
	}
}

// Invalid Reflector options are refused by the factory's constructors.
func TestFactoryInvalidReflectorOptions(t *testing.T) {
	opts := FactoryOptions{Informer: InformerOptions{Reflector: ReflectorOptions{MinWatchTimeout: time.Millisecond}}}
	if _, err := NewFactoryForClients(FactoryClients{Kube: fake.NewClientset()}, opts); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("NewFactoryForClients: %v, want ErrInvalidOptions", err)
	}
	if _, err := NewFactory(&rest.Config{Host: "https://127.0.0.1:1"}, opts); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("NewFactory: %v, want ErrInvalidOptions", err)
	}
}

// InformerOptions.NoLabelIndex leaves the label index out of a factory's
// informers; their Listers answer selectors the same, by scanning.
func TestFactoryNoLabelIndex(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprint("NoLabelIndex=", off), func(t *testing.T) {
			cs := fake.NewClientset(factoryPod("a", "web", ""), factoryPod("a", "db", ""), factoryPod("b", "web", ""))
			f, err := NewFactoryForClients(FactoryClients{Kube: cs}, FactoryOptions{Informer: InformerOptions{NoLabelIndex: off}})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Shutdown()
			pods, err := For[*corev1.Pod](f)
			if err != nil {
				t.Fatal(err)
			}
			if has := pods.GetIndexer().labels != nil; has == off {
				t.Fatalf("label index present = %v", has)
			}
			syncFactory(t, t.Context(), f)
			sel := labels.SelectorFromSet(labels.Set{"app": "web"})
			all, err := pods.Lister().List(sel)
			if err != nil {
				t.Fatal(err)
			}
			inA, err := pods.Lister().ByNamespace("a").List(sel)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 2 || len(inA) != 1 {
				t.Errorf("app=web: %d Pods in all namespaces and %d in a, want 2 and 1", len(all), len(inA))
			}
		})
	}
}

// Through the dynamic client, a watched object that does not convert to T
// is reported as the projection path reports one: an ERROR event, which
// reaches the watch error handler and counts in Stats (DecodeErrors). The
// informer lists again, and a list with such an object fails as a decode
// error (a sync failure for an informer not synced yet), until the object
// is mended.
func TestFactoryForClientsDynamicUnconvertible(t *testing.T) {
	good := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": "a", "name": "w1"}, "size": int64(1),
	}}
	bad := good.DeepCopy()
	bad.SetName("w2")
	bad.Object["size"] = "big" // not an int
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgetsGVR: "WidgetList"}, good)
	started := make(chan struct{}, 16)
	dyn.PrependWatchReactor("widgets", func(clienttesting.Action) (bool, watch.Interface, error) {
		started <- struct{}{}
		return false, nil, nil // on to the tracker's watch
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(widgetGV.WithKind("Widget"), meta.RESTScopeNamespace)
	reported := make(chan error, 100)
	opts := FactoryOptions{Scheme: widgetScheme(t), RESTMapper: mapper, Informer: InformerOptions{Reflector: ReflectorOptions{
		Backoff:           Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond},
		WatchErrorHandler: func(_ context.Context, err error) { reported <- err },
	}}}
	f, err := NewFactoryForClients(FactoryClients{Dynamic: dyn}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Shutdown)
	widgets, err := For[*widget](f)
	if err != nil {
		t.Fatal(err)
	}
	log := addLog(t, widgets)
	syncFactory(t, t.Context(), f)
	<-started
	ctx := t.Context()
	client := dyn.Resource(widgetsGVR).Namespace("a")
	if _, err := client.Create(ctx, bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-reported:
		if !isDecodeError(err) || !strings.Contains(err.Error(), "ADDED event does not convert") {
			t.Errorf("reported %v, want the ADDED event's conversion error, a decode error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the unconvertible object was not reported")
	}
	if st := widgets.Stats(); st.DecodeErrors < 1 || st.Errors < 1 {
		t.Errorf("Stats: DecodeErrors %d, Errors %d; want at least 1 each", st.DecodeErrors, st.Errors)
	}

	// A new informer's list with the object fails its sync as undecodable.
	opts.Informer.Reflector.WatchErrorHandler = func(context.Context, error) {}
	g, err := NewFactoryForClients(FactoryClients{Dynamic: dyn}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Shutdown)
	if _, err := For[*widget](g); err != nil {
		t.Fatal(err)
	}
	g.Start(ctx)
	if _, err := g.WaitForCacheSync(ctx); !errors.Is(err, ErrSyncFailed) || !errors.Is(err, errUndecodable) {
		t.Errorf("WaitForCacheSync over a list with an unconvertible object = %v, want a decode sync failure", err)
	}

	// Mended, the object reaches the informer.
	bad.Object["size"] = int64(2)
	if _, err := client.Update(ctx, bad, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, "add a/w1", "add a/w2")
}
