package informer

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/typedkube/informer/internal/fakeapi"
)

// widget is a CRD Go type, as controller authors write them: no protobuf
// methods, so the factory uses JSON for it.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Size              int `json:"size"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
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
		out.Items[i] = *l.Items[i].DeepCopyObject().(*widget)
	}
	return &out
}

var widgetGV = schema.GroupVersion{Group: "example.com", Version: "v1"}

// widgetScheme returns client-go's types plus widget, in example.com/v1.
func widgetScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	s.AddKnownTypeWithName(widgetGV.WithKind("Widget"), &widget{})
	s.AddKnownTypeWithName(widgetGV.WithKind("WidgetList"), &widgetList{})
	metav1.AddToGroupVersion(s, widgetGV)
	return s
}

// The resources the fake API server serves in these tests.
var (
	podsResource       = fakeapi.Resource{GVK: corev1.SchemeGroupVersion.WithKind("Pod"), Name: "pods", Namespaced: true, Protobuf: true}
	configMapsResource = fakeapi.Resource{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Name: "configmaps", Namespaced: true, Protobuf: true}
	nodesResource      = fakeapi.Resource{GVK: corev1.SchemeGroupVersion.WithKind("Node"), Name: "nodes", Protobuf: true}
	widgetsResource    = fakeapi.Resource{GVK: widgetGV.WithKind("Widget"), Name: "widgets", Namespaced: true}

	podsGVR       = corev1.SchemeGroupVersion.WithResource("pods")
	configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")
	widgetsGVR    = widgetGV.WithResource("widgets")
)

// newFakeAPI starts a fake API server serving resources, closed when the
// test ends.
func newFakeAPI(t testing.TB, resources ...fakeapi.Resource) *fakeapi.Server {
	t.Helper()
	srv := fakeapi.New(widgetScheme(t), resources...)
	t.Cleanup(srv.Close)
	return srv
}

// newTestFactory returns a factory for srv, shut down when the test ends
// (before srv closes).
func newTestFactory(t testing.TB, srv *fakeapi.Server, opts FactoryOptions) *Factory {
	t.Helper()
	f, err := NewFactory(srv.Config(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Shutdown)
	return f
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

func factoryPod(ns, name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}}, Spec: corev1.PodSpec{NodeName: node}}
}

// handlerLog is a handler of any type that writes down each call, as
// "add ns/name", "update ns/name" or "delete ns/name", and lets a test wait
// for calls.
type handlerLog[T Object] struct {
	mu      sync.Mutex
	calls   []string
	changed chan struct{} // closed and replaced at every call
}

func newHandlerLog[T Object]() *handlerLog[T] { return &handlerLog[T]{changed: make(chan struct{})} }

func (l *handlerLog[T]) record(verb string, obj T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, verb+" "+objectKey(obj))
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *handlerLog[T]) OnAdd(obj T, _ bool)         { l.record("add", obj) }
func (l *handlerLog[T]) OnUpdate(_, obj T)           { l.record("update", obj) }
func (l *handlerLog[T]) OnDelete(d DeletedObject[T]) { l.record("delete", d.Obj) }
func (l *handlerLog[T]) snapshot() ([]string, chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls), l.changed
}

// waitFor waits until the handler has been called with every one of want,
// in any order, and fails the test after 30 seconds.
func (l *handlerLog[T]) waitFor(t testing.TB, want ...string) {
	t.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		calls, changed := l.snapshot()
		missing := slices.DeleteFunc(slices.Clone(want), func(w string) bool { return slices.Contains(calls, w) })
		if len(missing) == 0 {
			return
		}
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("handler calls %q: missing %q", calls, missing)
		}
	}
}

// addLog registers a handlerLog on inf.
func addLog[T Object](t testing.TB, inf *SharedIndexInformer[T]) *handlerLog[T] {
	t.Helper()
	l := newHandlerLog[T]()
	if _, err := inf.AddEventHandler(l); err != nil {
		t.Fatal(err)
	}
	return l
}

// syncFactory starts f and waits for its caches.
func syncFactory(t testing.TB, ctx context.Context, f *Factory) map[string]bool {
	t.Helper()
	f.Start(ctx)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	synced, err := f.WaitForCacheSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return synced
}

// resourceRequests returns the LIST and WATCH requests srv served for the
// resource path suffix, such as "/pods".
func resourceRequests(srv *fakeapi.Server, suffix string) []fakeapi.Request {
	return slices.DeleteFunc(srv.Requests(), func(r fakeapi.Request) bool { return !strings.HasSuffix(r.Path, suffix) })
}
