package typedcache

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/typedkube/informer/internal/fakeapi"
)

// widget is a CRD Go type, as controller authors write them: no protobuf
// methods, served in JSON, and known only to the test's scheme.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Size              int `json:"size"`
}

func (w *widget) DeepCopyInto(out *widget) {
	*out = *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
}

func (w *widget) DeepCopyObject() runtime.Object {
	out := new(widget)
	w.DeepCopyInto(out)
	return out
}

type widgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []widget `json:"items"`
}

func (l *widgetList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = make([]widget, len(l.Items))
	for i := range l.Items {
		l.Items[i].DeepCopyInto(&out.Items[i])
	}
	return &out
}

var widgetGV = schema.GroupVersion{Group: "example.com", Version: "v1"}

// gadget is a CRD Go type whose list type holds pointers, as some CRD list
// types are written.
type gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Color             string `json:"color"`
}

func (g *gadget) DeepCopyObject() runtime.Object {
	out := *g
	g.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

type gadgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []*gadget `json:"items"`
}

func (l *gadgetList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = make([]*gadget, len(l.Items))
	for i, g := range l.Items {
		out.Items[i] = g.DeepCopyObject().(*gadget)
	}
	return &out
}

// testScheme is client-go's scheme plus widget.
func testScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	s.AddKnownTypeWithName(widgetGV.WithKind("Widget"), &widget{})
	s.AddKnownTypeWithName(widgetGV.WithKind("WidgetList"), &widgetList{})
	s.AddKnownTypeWithName(widgetGV.WithKind("Gadget"), &gadget{})
	s.AddKnownTypeWithName(widgetGV.WithKind("GadgetList"), &gadgetList{})
	metav1.AddToGroupVersion(s, widgetGV)
	return s
}

var (
	podsResource       = fakeapi.Resource{GVK: corev1.SchemeGroupVersion.WithKind("Pod"), Name: "pods", Namespaced: true, Protobuf: true}
	configMapsResource = fakeapi.Resource{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Name: "configmaps", Namespaced: true, Protobuf: true}
	nodesResource      = fakeapi.Resource{GVK: corev1.SchemeGroupVersion.WithKind("Node"), Name: "nodes", Protobuf: true}
	widgetsResource    = fakeapi.Resource{GVK: widgetGV.WithKind("Widget"), Name: "widgets", Namespaced: true}
	gadgetsResource    = fakeapi.Resource{GVK: widgetGV.WithKind("Gadget"), Name: "gadgets", Namespaced: true}

	podsGVR = corev1.SchemeGroupVersion.WithResource("pods")
)

// newServer starts a fake API server serving pods, configmaps, nodes,
// widgets and gadgets, closed when the test ends.
func newServer(t testing.TB, scheme *runtime.Scheme) *fakeapi.Server {
	t.Helper()
	srv := fakeapi.New(scheme, podsResource, configMapsResource, nodesResource, widgetsResource, gadgetsResource)
	t.Cleanup(srv.Close)
	return srv
}

// create adds objs to srv.
func create(t testing.TB, srv *fakeapi.Server, objs ...runtime.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := srv.Create(obj); err != nil {
			t.Fatal(err)
		}
	}
}

func pod(ns, name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "img:" + name}}},
	}
}

// newTestCache returns a cache of srv with opts and o, not started.
func newTestCache(t testing.TB, srv *fakeapi.Server, scheme *runtime.Scheme, opts cache.Options, o Options) *Cache {
	t.Helper()
	if opts.Scheme == nil {
		opts.Scheme = scheme
	}
	c, err := newCache(srv.Config(), opts, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// start runs c until the test ends, and checks that Start then returns.
func start(t testing.TB, c *Cache) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Start returned %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Start did not return 30s after its context ended")
		}
	})
	select {
	case <-c.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the cache did not start")
	}
}

// timeout returns a context for one step of a test: 30s.
func timeout(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// names returns the namespace/name of each object of list, sorted.
func names(t testing.TB, list client.ObjectList) []string {
	t.Helper()
	var out []string
	switch l := list.(type) {
	case *corev1.PodList:
		for _, p := range l.Items {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	case *metav1.PartialObjectMetadataList:
		for _, p := range l.Items {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	case *widgetList:
		for _, p := range l.Items {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	default:
		t.Fatalf("names of %T", list)
	}
	slices.Sort(out)
	return out
}

// eventually waits until cond holds, polling, and fails the test after 30s
// saying what it waited for.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
