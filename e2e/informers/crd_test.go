package informers

import (
	"fmt"
	"testing"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"github.com/typedkube/informer/e2e/internal/widget"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// widgetObject is a Widget whose spec derives from its name, so that a check can recompute it.
func widgetObject(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": widget.SchemeGroupVersion.String(),
		"kind":       widget.Kind,
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"color": "blue-" + name, "size": int64(len(name))},
	}}
}

// installWidgets installs the Widget CRD (once per server; later calls find it) and waits until
// it is served in ns.
func installWidgets(t *testing.T, c *kubetest.Clients, ns string) {
	t.Helper()
	if err := widget.Install(t.Context(), c.Dynamic, ns, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestCRDTyped runs an informer of the Go type *widget.Widget, registered in a scheme of its
// own, over a typed client built from client-go's generic gentype client: no code generation.
func TestCRDTyped(t *testing.T) {
	runCRUD(t, crudCase[*widget.Widget]{
		gvr:   widget.GVR,
		setup: installWidgets,
		informer: direct(widget.GVR, func(t *testing.T, c *kubetest.Clients, ns string) informer.ListerWatcher[*widget.Widget] {
			client, err := widget.NewClient(c.Config, ns)
			if err != nil {
				t.Fatal(err)
			}
			return informer.ListWatchFromClient[widget.Widget](client, nil)
		}),
		object: widgetObject,
		check: func(w *widget.Widget) error {
			if w.Spec.Color != "blue-"+w.Name || w.Spec.Size != int64(len(w.Name)) {
				return fmt.Errorf("spec %+v, want color blue-%s, size %d", w.Spec, w.Name, len(w.Name))
			}
			return nil
		},
	})
}

// TestCRDUnstructured runs an informer of *unstructured.Unstructured over the dynamic client.
func TestCRDUnstructured(t *testing.T) {
	runCRUD(t, crudCase[*unstructured.Unstructured]{
		gvr:   widget.GVR,
		setup: installWidgets,
		informer: direct(widget.GVR, func(_ *testing.T, c *kubetest.Clients, ns string) informer.ListerWatcher[*unstructured.Unstructured] {
			return informer.ListWatchFromDynamic(c.Dynamic.Resource(widget.GVR).Namespace(ns), nil)
		}),
		object: widgetObject,
		check: func(u *unstructured.Unstructured) error {
			color, _, _ := unstructured.NestedString(u.Object, "spec", "color")
			size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size")
			if u.GetKind() != widget.Kind || color != "blue-"+u.GetName() || size != int64(len(u.GetName())) {
				return fmt.Errorf("kind %s, spec color %q size %d; want %s, blue-%s, %d",
					u.GetKind(), color, size, widget.Kind, u.GetName(), len(u.GetName()))
			}
			return nil
		},
	})
}
