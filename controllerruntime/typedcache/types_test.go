package typedcache

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/typedkube/informer/wire"
)

// podSlim is a projection of a Pod: a controller that reads these fields
// of *corev1.Pod keeps its code.
type podSlim struct {
	wire.Meta[podSlim]
	Spec struct {
		NodeName   string
		Containers []struct{ Name, Image string }
	}
	Status struct{ Phase corev1.PodPhase }
}

// With Projection[podSlim, corev1.Pod], reads and handlers of *corev1.Pod
// get Pods with the projection's fields, and nothing else; the cache
// holds podSlims.
func TestProjection(t *testing.T) {
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	p := pod("a", "p1", "n1", map[string]string{"app": "web"})
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "NOT", Value: "projected"}}
	p.Status.Phase = corev1.PodRunning
	create(t, srv, p)
	c := newTestCache(t, srv, scheme, cache.Options{}, Options{Types: []Typed{Projection[podSlim, corev1.Pod]()}})
	start(t, c)
	ctx := timeout(t)
	var got corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "p1"}, &got); err != nil {
		t.Fatal(err)
	}
	want := corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p1", Labels: map[string]string{"app": "web"},
			ResourceVersion: got.ResourceVersion},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "img:p1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if diff := cmp.Diff(want, got); diff != "" || got.ResourceVersion == "" {
		t.Errorf("Get of a projected Pod (-want +got):\n%s", diff)
	}
	var l corev1.PodList
	if err := c.List(ctx, &l, client.MatchingLabels{"app": "web"}); err != nil || len(l.Items) != 1 || l.Items[0].Spec.NodeName != "n1" {
		t.Errorf("List of projected Pods = %+v, %v", l.Items, err)
	}
	// Deep copies: a change to what a read returned does not reach the cache.
	got.Labels["app"] = "changed"
	got.Spec.Containers[0].Image = "changed"
	var again corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "p1"}, &again); err != nil {
		t.Fatal(err)
	}
	if again.Labels["app"] != "web" || again.Spec.Containers[0].Image != "img:p1" {
		t.Error("a change to a read reached the cached projection")
	}
	if err := c.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &l, client.MatchingFields{"spec.nodeName": "n1"}); err != nil || len(l.Items) != 1 {
		t.Errorf("field selector over a projection = %d items, %v", len(l.Items), err)
	}
	inf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	var ev events
	if _, err := inf.AddEventHandler(&ev); err != nil {
		t.Fatal(err)
	}
	create(t, srv, pod("a", "p2", "n2", nil))
	eventually(t, "the projected adds", func() bool { return ev.has("add a/p1", "add a/p2") })
	ev.mu.Lock()
	defer ev.mu.Unlock()
	for _, typ := range ev.types {
		if typ != "*v1.Pod" {
			t.Errorf("a handler got %s, want *v1.Pod", typ)
		}
	}
	e := c.defaults.single.lookup(entryKey{corev1.SchemeGroupVersion.WithKind("Pod"), typedRep})
	if _, ok := e.(*typedEntry[*podSlim, *corev1.Pod]); !ok {
		t.Errorf("the Pod entry is a %T, want one caching *podSlim", e)
	}
}

// A CRD Go type only the scheme knows is cached by an informer of
// client.Object decoded by client-go; with For in Options.Types, by the
// factory's informer of the type.
func TestCRDTypes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		o     Options
		entry any
	}{
		{"known at run time only", Options{}, &fallbackEntry{}},
		{"For", Options{Types: []Typed{For[*widget]()}}, &typedEntry[*widget, *widget]{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme := testScheme(t)
			srv := newServer(t, scheme)
			w := &widget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "w1", Labels: map[string]string{"size": "big"}}, Size: 3}
			create(t, srv, w, &widget{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "w2"}, Size: 1})
			c := newTestCache(t, srv, scheme, cache.Options{}, tc.o)
			start(t, c)
			ctx := timeout(t)
			var got widget
			if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "w1"}, &got); err != nil {
				t.Fatal(err)
			}
			if got.Size != 3 || got.Labels["size"] != "big" || got.Kind != "Widget" {
				t.Errorf("Get = %+v", got)
			}
			var l widgetList
			if err := c.List(ctx, &l, client.MatchingLabels{"size": "big"}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"a/w1"}, names(t, &l)); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
			inf, err := c.GetInformer(ctx, &widget{})
			if err != nil {
				t.Fatal(err)
			}
			var ev events
			if _, err := inf.AddEventHandler(&ev); err != nil {
				t.Fatal(err)
			}
			create(t, srv, &widget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "w3"}})
			eventually(t, "the widget adds", func() bool { return ev.has("add a/w1", "add b/w2", "add a/w3") })
			e := c.defaults.single.lookup(entryKey{widgetGV.WithKind("Widget"), typedRep})
			if reflect.TypeOf(e) != reflect.TypeOf(tc.entry) {
				t.Errorf("the Widget entry is a %T, want %T", e, tc.entry)
			}
			if err := c.RemoveInformer(ctx, &widget{}); err != nil {
				t.Error(err)
			}
		})
	}
}
