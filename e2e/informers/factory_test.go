package informers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"github.com/typedkube/informer/e2e/internal/widget"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// factoryRunner runs a Factory as a kubetest.Runner: Start, then Shutdown when ctx ends.
type factoryRunner struct{ f *informer.Factory }

func (r factoryRunner) Run(ctx context.Context) error {
	r.f.Start(ctx)
	<-ctx.Done()
	r.f.Shutdown()
	return nil
}

// newFactory returns a Factory over cfg limited to namespace ns, with opts.
func newFactory(t *testing.T, cfg *rest.Config, ns string, opts informer.FactoryOptions) *informer.Factory {
	t.Helper()
	opts.Namespace = ns
	f, err := informer.NewFactory(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// fromFactory makes crudCase.informer for the informer that get returns from a new Factory
// limited to the test's namespace.
func fromFactory[T informer.Object](opts informer.FactoryOptions, get func(*informer.Factory, ...informer.ForOptions[T]) (*informer.SharedIndexInformer[T], error)) func(*testing.T, *kubetest.Clients, string) (*informer.SharedIndexInformer[T], kubetest.Runner) {
	return func(t *testing.T, c *kubetest.Clients, ns string) (*informer.SharedIndexInformer[T], kubetest.Runner) {
		t.Helper()
		f := newFactory(t, c.Config, ns, opts)
		inf, err := get(f)
		if err != nil {
			t.Fatal(err)
		}
		return inf, factoryRunner{f}
	}
}

func TestFactoryTyped(t *testing.T) {
	runCRUD(t, crudCase[*corev1.Pod]{
		gvr:      podsGVR,
		informer: fromFactory(informer.FactoryOptions{}, informer.For[*corev1.Pod]),
		object:   podObject,
		check: func(p *corev1.Pod) error {
			if len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Image != podImage {
				return fmt.Errorf("containers %+v, want one running %s", p.Spec.Containers, podImage)
			}
			return nil
		},
	})
}

// widgetScheme is a user's scheme: the built-in types and the Widget CRD's Go types.
func widgetScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := scheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := widget.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFactoryCRD runs For[*widget.Widget]: a CRD Go type the factory finds through the user's
// scheme and discovery (the CRD is installed after the API server started).
func TestFactoryCRD(t *testing.T) {
	runCRUD(t, crudCase[*widget.Widget]{
		gvr:      widget.GVR,
		setup:    installWidgets,
		informer: fromFactory(informer.FactoryOptions{Scheme: widgetScheme(t)}, informer.For[*widget.Widget]),
		object:   widgetObject,
		check: func(w *widget.Widget) error {
			if w.Spec.Color != "blue-"+w.Name || w.Spec.Size != int64(len(w.Name)) {
				return fmt.Errorf("spec %+v, want color blue-%s, size %d", w.Spec, w.Name, len(w.Name))
			}
			return nil
		},
	})
}

func TestFactoryUnstructured(t *testing.T) {
	runCRUD(t, crudCase[*unstructured.Unstructured]{
		gvr:   widget.GVR,
		setup: installWidgets,
		informer: fromFactory(informer.FactoryOptions{}, func(f *informer.Factory, opts ...informer.ForOptions[*unstructured.Unstructured]) (*informer.SharedIndexInformer[*unstructured.Unstructured], error) {
			return informer.ForUnstructured(f, widget.GVR, opts...)
		}),
		object: widgetObject,
		check: func(u *unstructured.Unstructured) error {
			if color, _, _ := unstructured.NestedString(u.Object, "spec", "color"); color != "blue-"+u.GetName() {
				return fmt.Errorf("spec.color %q, want blue-%s", color, u.GetName())
			}
			return nil
		},
	})
}

func TestFactoryMetadata(t *testing.T) {
	runCRUD(t, crudCase[*metav1.PartialObjectMetadata]{
		gvr: podsGVR,
		informer: fromFactory(informer.FactoryOptions{}, func(f *informer.Factory, opts ...informer.ForOptions[*metav1.PartialObjectMetadata]) (*informer.SharedIndexInformer[*metav1.PartialObjectMetadata], error) {
			return informer.ForMetadata(f, podsGVR, opts...)
		}),
		object: podObject,
		check: func(m *metav1.PartialObjectMetadata) error {
			if m.UID == "" || m.Labels["app"] != "e2e" {
				return fmt.Errorf("metadata %+v, want a UID and the label app=e2e", m.ObjectMeta)
			}
			return nil
		},
	})
}

// TestFactoryDefaults checks what a Factory's informers ask the server for by default: Pods in
// protobuf (JSON as a fallback) from a watch-list stream, with no LIST; a CRD Go type in JSON;
// and it checks that Shutdown leaves no goroutine behind.
func TestFactoryDefaults(t *testing.T) {
	verifyNoGoroutinesLeft(t)
	ctx := testContext(t, time.Minute)
	admin := adminClients(t)
	ns := newNamespace(t, admin)
	installWidgets(t, admin, ns)
	createConfigMaps(t, ctx, admin, ns, 10) // something to list besides nothing
	for i := range 5 {
		if _, err := admin.Dynamic.Resource(podsGVR).Namespace(ns).Create(ctx, podObject(fmt.Sprint("p-", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var log kubetest.RequestLog
	f := newFactory(t, log.Wrap(srv.AdminConfig()), ns, informer.FactoryOptions{Scheme: widgetScheme(t)})
	pods, err := informer.For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := informer.For[*widget.Widget](f); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx)
	synced, err := f.WaitForCacheSync(ctx)
	if err != nil {
		t.Fatalf("WaitForCacheSync: %v (%v)", err, synced)
	}
	if n := pods.GetIndexer().Len(); n != 5 {
		t.Errorf("pods cached: %d, want 5", n)
	}
	f.Shutdown()

	for _, resource := range []string{"pods", "widgets"} {
		if lists := log.Requests(func(r kubetest.Request) bool { return r.ListOf(resource) }); len(lists) != 0 {
			t.Errorf("%s: LIST requests %v, want none (a watch-list stream)", resource, lists)
		}
		streams := log.Requests(func(r kubetest.Request) bool { return r.WatchOf(resource) && r.WatchList() })
		if len(streams) != 1 {
			t.Fatalf("%s: watch-list requests %v, want one", resource, streams)
		}
		accept := streams[0].Accept
		switch resource {
		case "pods":
			if !strings.HasPrefix(accept, runtime.ContentTypeProtobuf) {
				t.Errorf("pods: Accept %q, want protobuf first", accept)
			}
		case "widgets":
			if strings.Contains(accept, "protobuf") {
				t.Errorf("widgets: Accept %q, want JSON only", accept)
			}
		}
		t.Logf("%s: one watch-list stream, Accept: %s", resource, accept)
	}
	if _, err := informer.For[*corev1.ConfigMap](f); !errors.Is(err, informer.ErrFactoryStopped) {
		t.Errorf("For after Shutdown: %v, want ErrFactoryStopped", err)
	}
}
