package typedcache

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/typedkube/informer"
)

// readFixture is a started cache over pods in two namespaces.
func readFixture(t *testing.T, opts cache.Options, o Options) *Cache {
	t.Helper()
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	create(t, srv,
		pod("a", "web-1", "n1", map[string]string{"app": "web", "tier": "front"}),
		pod("a", "web-2", "n2", map[string]string{"app": "web", "tier": "front"}),
		pod("a", "db-1", "n1", map[string]string{"app": "db"}),
		pod("b", "web-1", "n1", map[string]string{"app": "web"}),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "z1"}}},
	)
	c := newTestCache(t, srv, scheme, opts, o)
	start(t, c)
	return c
}

// Get copies the cached object into the caller's, with its kind set, and
// never hands out the cached object itself; a missing object is NotFound
// with the kind as its resource, as controller-runtime's cache says.
func TestGet(t *testing.T) {
	c := readFixture(t, cache.Options{}, Options{})
	ctx := timeout(t)
	var p corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "web-1"}, &p); err != nil {
		t.Fatal(err)
	}
	if p.Name != "web-1" || p.Spec.NodeName != "n1" || p.Kind != "Pod" || p.APIVersion != "v1" {
		t.Errorf("Get = %s/%s on %q, kind %q %q", p.Namespace, p.Name, p.Spec.NodeName, p.APIVersion, p.Kind)
	}
	p.Labels["app"] = "changed" // the caller's copy: the cache must not see it
	var again corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "web-1"}, &again); err != nil {
		t.Fatal(err)
	}
	if again.Labels["app"] != "web" {
		t.Errorf("a change to a Get result reached the cache: %v", again.Labels)
	}
	err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "missing"}, &p)
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) || status.Status().Details.Kind != "Pod" {
		t.Errorf("Get of a missing Pod = %v, want NotFound of kind Pod", err)
	}
	// A cluster-scoped kind ignores the key's namespace.
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "n1"}, &n); err != nil || n.Labels["zone"] != "z1" {
		t.Errorf("Get of a Node = %v, %v", n.Labels, err)
	}
	// A Get into another Go type than the kind's is an error.
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "web-1"}, &widget{}); err == nil {
		t.Error("Get of a Pod into a widget succeeded")
	}
}

// List answers namespaces and label selectors, caps the items at Limit,
// refuses Continue, and says there is no continuation.
func TestList(t *testing.T) {
	c := readFixture(t, cache.Options{}, Options{})
	ctx := timeout(t)
	checkLists(t, c, []listCase{
		{"all", nil, []string{"a/db-1", "a/web-1", "a/web-2", "b/web-1"}},
		{"namespace", []client.ListOption{client.InNamespace("a")}, []string{"a/db-1", "a/web-1", "a/web-2"}},
		{"label", []client.ListOption{client.MatchingLabels{"app": "web"}}, []string{"a/web-1", "a/web-2", "b/web-1"}},
		{"label in namespace", []client.ListOption{client.InNamespace("b"), client.MatchingLabels{"app": "web"}}, []string{"b/web-1"}},
		{"two labels", []client.ListOption{client.MatchingLabels{"app": "web", "tier": "front"}}, []string{"a/web-1", "a/web-2"}},
		{"not in", []client.ListOption{client.MatchingLabelsSelector{Selector: mustSelector(t, "app notin (web)")}}, []string{"a/db-1"}},
		{"nothing", []client.ListOption{client.InNamespace("c")}, nil},
	})
	var l corev1.PodList
	if err := c.List(ctx, &l, client.Limit(2)); err != nil || len(l.Items) != 2 {
		t.Errorf("List with Limit 2 = %d items, %v", len(l.Items), err)
	}
	if err := c.List(ctx, &l, client.Continue("x")); err == nil {
		t.Error("List with Continue succeeded")
	}
	var empty corev1.PodList
	if err := c.List(ctx, &empty, client.InNamespace("none")); err != nil || empty.Items == nil || len(empty.Items) != 0 {
		t.Errorf("an empty List = %#v, %v; want empty, not nil, items", empty.Items, err)
	}
}

// listCase is a List call and the Pods it must return.
type listCase struct {
	name string
	opts []client.ListOption
	want []string // namespace/name, sorted
}

// checkLists runs each case's List of Pods on c: the Pods, their kind, and
// the continue token controller-runtime's cache gives.
func checkLists(t *testing.T, c *Cache, cases []listCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var l corev1.PodList
			if err := c.List(timeout(t), &l, tc.opts...); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, names(t, &l)); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
			if l.Continue != "continue-not-supported" {
				t.Errorf("Continue = %q", l.Continue)
			}
			for _, p := range l.Items {
				if p.Kind != "Pod" {
					t.Errorf("item %s has kind %q", p.Name, p.Kind)
				}
			}
		})
	}
}

func mustSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// UnsafeDisableDeepCopy, per call or by default, hands out the cached
// objects' contents: two reads share their maps. Without it they do not.
func TestUnsafeDisableDeepCopy(t *testing.T) {
	shared := func(a, b map[string]string) bool { return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer() }
	// A compact store shares the object it keeps decoded (its codec's
	// small cache holds the few of the fixture).
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("per call, compact %v", compact), func(t *testing.T) {
			unsafeReadsShare(t, readFixture(t, cache.Options{}, Options{Informer: informer.InformerOptions{Compact: compact}}), shared)
		})
	}
	t.Run("default", func(t *testing.T) {
		c := readFixture(t, cache.Options{DefaultUnsafeDisableDeepCopy: ptr.To(true)}, Options{})
		ctx := timeout(t)
		var l1, l2 corev1.PodList
		for _, l := range []*corev1.PodList{&l1, &l2} {
			if err := c.List(ctx, l, client.InNamespace("b")); err != nil {
				t.Fatal(err)
			}
		}
		if !shared(l1.Items[0].Labels, l2.Items[0].Labels) {
			t.Error("with DefaultUnsafeDisableDeepCopy, two Lists do not share the cached labels")
		}
	})
}

// unsafeReadsShare checks that reads of c without a deep copy share the
// cached object's labels, and that a Get with one does not.
func unsafeReadsShare(t *testing.T, c cache.Cache, shared func(a, b map[string]string) bool) {
	ctx := timeout(t)
	key := client.ObjectKey{Namespace: "a", Name: "web-1"}
	var p1, p2 corev1.Pod
	if err := c.Get(ctx, key, &p1, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, &p2, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	if !shared(p1.Labels, p2.Labels) {
		t.Error("two unsafe Gets do not share the cached labels")
	}
	var p3 corev1.Pod
	if err := c.Get(ctx, key, &p3); err != nil {
		t.Fatal(err)
	}
	if shared(p1.Labels, p3.Labels) {
		t.Error("a Get shares the cached labels")
	}
	var l1, l2 corev1.PodList
	if err := c.List(ctx, &l1, client.InNamespace("b"), client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &l2, client.InNamespace("b"), client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	if !shared(l1.Items[0].Labels, l2.Items[0].Labels) {
		t.Error("two unsafe Lists do not share the cached labels")
	}
}

// IndexField makes field selectors answerable, in a namespace and in all;
// a selector on a field without an index, or one that is not an exact
// match, is an error, as in controller-runtime.
func TestIndexField(t *testing.T) {
	c := readFixture(t, cache.Options{}, Options{})
	ctx := timeout(t)
	byNode := func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }
	if err := c.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", byNode); err != nil {
		t.Fatal(err)
	}
	byApp := func(o client.Object) []string { return []string{o.GetLabels()["app"]} }
	if err := c.IndexField(ctx, &corev1.Pod{}, "app", byApp); err != nil {
		t.Fatal(err)
	}
	checkLists(t, c, []listCase{
		{"all namespaces", []client.ListOption{client.MatchingFields{"spec.nodeName": "n1"}}, []string{"a/db-1", "a/web-1", "b/web-1"}},
		{"namespace", []client.ListOption{client.InNamespace("a"), client.MatchingFields{"spec.nodeName": "n1"}}, []string{"a/db-1", "a/web-1"}},
		{"two fields", []client.ListOption{client.MatchingFields{"spec.nodeName": "n1", "app": "web"}}, []string{"a/web-1", "b/web-1"}},
		{"field and label", []client.ListOption{client.MatchingFields{"spec.nodeName": "n1"}, client.MatchingLabels{"app": "db"}}, []string{"a/db-1"}},
		{"no match", []client.ListOption{client.MatchingFields{"spec.nodeName": "n9"}}, nil},
	})
	var l corev1.PodList
	if err := c.List(ctx, &l, client.MatchingFields{"status.phase": "Running"}); err == nil {
		t.Error("a field selector without an index succeeded")
	}
	if err := c.List(ctx, &l, client.MatchingFieldsSelector{Selector: fields.OneTermNotEqualSelector("spec.nodeName", "n1")}); err == nil {
		t.Error("a non-exact field selector succeeded")
	}
	if err := c.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", byNode); err == nil {
		t.Error("a second index of the same field succeeded")
	}
}

// Unstructured and PartialObjectMetadata reads have informers of their
// own, and carry the kind.
func TestUnstructuredAndMetadata(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compact %v", compact), func(t *testing.T) {
			unstructuredAndMetadata(t, readFixture(t, cache.Options{}, Options{Informer: informer.InformerOptions{Compact: compact}}))
		})
	}
}

// unstructuredAndMetadata reads c's Pods as unstructured objects and as
// their metadata.
func unstructuredAndMetadata(t *testing.T, c cache.Cache) {
	ctx := timeout(t)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "web-2"}, u); err != nil {
		t.Fatal(err)
	}
	if node, _, _ := unstructured.NestedString(u.Object, "spec", "nodeName"); node != "n2" || u.GetKind() != "Pod" {
		t.Errorf("unstructured Get = kind %q, nodeName %q", u.GetKind(), node)
	}
	ul := &unstructured.UnstructuredList{}
	ul.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := c.List(ctx, ul, client.MatchingLabels{"app": "web"}); err != nil || len(ul.Items) != 3 {
		t.Fatalf("unstructured List = %d items, %v", len(ul.Items), err)
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	if err := c.Get(ctx, client.ObjectKey{Namespace: "b", Name: "web-1"}, m); err != nil {
		t.Fatal(err)
	}
	if m.Labels["app"] != "web" || m.Kind != "Pod" {
		t.Errorf("metadata Get = %v, kind %q", m.Labels, m.Kind)
	}
	ml := &metav1.PartialObjectMetadataList{}
	ml.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := c.List(ctx, ml, client.InNamespace("a"), client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a/db-1", "a/web-1", "a/web-2"}, names(t, ml)); diff != "" {
		t.Errorf("metadata List (-want +got):\n%s", diff)
	}
	for _, item := range ml.Items {
		// Unsafe reads skip setting the kind: the cached objects carry it.
		if item.GroupVersionKind() != corev1.SchemeGroupVersion.WithKind("Pod") {
			t.Errorf("cached metadata of %s has kind %v", item.Name, item.GroupVersionKind())
		}
	}
}

// Before Start, a read makes its informer and says the cache has not
// started; with ReaderFailOnMissingInformer, a read of a kind without an
// informer is ErrResourceNotCached, and one with an informer is served.
func TestNotStartedAndNotCached(t *testing.T) {
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	create(t, srv, pod("a", "p", "n1", nil))
	c := newTestCache(t, srv, scheme, cache.Options{}, Options{})
	err := c.Get(timeout(t), client.ObjectKey{Namespace: "a", Name: "p"}, &corev1.Pod{})
	var notStarted *cache.ErrCacheNotStarted
	if !errors.As(err, &notStarted) {
		t.Errorf("Get before Start = %v, want ErrCacheNotStarted", err)
	}

	c = newTestCache(t, srv, scheme, cache.Options{ReaderFailOnMissingInformer: true}, Options{})
	start(t, c)
	ctx := timeout(t)
	err = c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "p"}, &corev1.Pod{})
	var notCached *cache.ErrResourceNotCached
	if !errors.As(err, &notCached) || notCached.GVK.Kind != "Pod" {
		t.Errorf("Get without an informer = %v, want ErrResourceNotCached of Pod", err)
	}
	if err := c.List(ctx, &corev1.PodList{}); !errors.As(err, &notCached) {
		t.Errorf("List without an informer = %v, want ErrResourceNotCached", err)
	}
	if _, err := c.GetInformer(ctx, &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "p"}, &corev1.Pod{}); err != nil {
		t.Errorf("Get with an informer = %v", err)
	}
}

// List fills a list type whose Items are pointers ([]*T, as some CRD list
// types declare them) as one of values: deep copies with their kind, or,
// with UnsafeDisableDeepCopy, the cached objects; in one namespace and
// across namespaces configured apart; for a type the cache knows only
// from the scheme and one it decodes itself.
func TestListPointerItems(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts cache.Options
		o    Options
	}{
		{"scheme", cache.Options{}, Options{}},
		{"For", cache.Options{}, Options{Types: []Typed{For[*gadget]()}}},
		{"namespaces", cache.Options{DefaultNamespaces: map[string]cache.Config{"a": {}, "b": {}}}, Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme := testScheme(t)
			srv := newServer(t, scheme)
			create(t, srv,
				&gadget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "g1", Labels: map[string]string{"app": "x"}}, Color: "red"},
				&gadget{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "g2"}, Color: "blue"},
			)
			c := newTestCache(t, srv, scheme, tc.opts, tc.o)
			start(t, c)
			ctx := timeout(t)
			for _, unsafe := range []bool{false, true} {
				var all gadgetList
				if err := c.List(ctx, &all, &client.ListOptions{UnsafeDisableDeepCopy: &unsafe}); err != nil {
					t.Fatalf("unsafe %v: %v", unsafe, err)
				}
				var got []string
				for _, g := range all.Items {
					got = append(got, g.Namespace+"/"+g.Name+"="+g.Color)
					if !unsafe && g.GroupVersionKind() != widgetGV.WithKind("Gadget") {
						t.Errorf("item %s has kind %v", g.Name, g.GroupVersionKind())
					}
				}
				slices.Sort(got)
				if want := []string{"a/g1=red", "b/g2=blue"}; !slices.Equal(got, want) {
					t.Errorf("unsafe %v: listed %v, want %v", unsafe, got, want)
				}
				var one gadgetList
				if err := c.List(ctx, &one, client.InNamespace("a"), client.MatchingLabels{"app": "x"}, &client.ListOptions{UnsafeDisableDeepCopy: &unsafe}); err != nil {
					t.Fatal(err)
				}
				if len(one.Items) != 1 || one.Items[0].Name != "g1" {
					t.Errorf("unsafe %v: in a with app=x, listed %d items", unsafe, len(one.Items))
				}
			}
			// A deep copy is the reader's own.
			var l gadgetList
			if err := c.List(ctx, &l, client.InNamespace("a")); err != nil {
				t.Fatal(err)
			}
			l.Items[0].Color = "written"
			var again gadget
			if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "g1"}, &again); err != nil || again.Color != "red" {
				t.Errorf("after writing to a listed item: Get = %q, %v", again.Color, err)
			}
		})
	}
}

// A second Start fails with an error that says, as controller-runtime's
// does, that the informer already started.
func TestStartTwice(t *testing.T) {
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	c := newTestCache(t, srv, scheme, cache.Options{}, Options{})
	start(t, c)
	err := c.Start(timeout(t))
	if !errors.Is(err, ErrAlreadyStarted) || !strings.Contains(err.Error(), "informer already started") {
		t.Errorf("a second Start: %v", err)
	}
}
