package typedcache

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options this cache cannot honour are refused with an error naming them,
// never ignored.
func TestRefusedOptions(t *testing.T) {
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	for _, tc := range []struct {
		name string
		opts cache.Options
		o    Options
		is   error
	}{
		{"DefaultEnableWatchBookmarks false", cache.Options{DefaultEnableWatchBookmarks: ptr.To(false)}, Options{}, ErrUnsupported},
		{"ByObject EnableWatchBookmarks false", cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {EnableWatchBookmarks: ptr.To(false)},
		}}, Options{}, ErrUnsupported},
		{"namespace EnableWatchBookmarks false", cache.Options{DefaultNamespaces: map[string]cache.Config{
			"a": {EnableWatchBookmarks: ptr.To(false)},
		}}, Options{}, ErrUnsupported},
		{"cluster-scoped ByObject with namespaces", cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Node{}: {Namespaces: map[string]cache.Config{"a": {}}},
		}}, Options{}, nil},
		{"negative SyncPeriod", cache.Options{SyncPeriod: ptr.To(-time.Second)}, Options{}, nil},
		{"a type twice", cache.Options{}, Options{Types: []Typed{For[*widget](), For[*widget]()}}, nil},
		{"a zero Typed", cache.Options{}, Options{Types: []Typed{{}}}, nil},
		{"unknown decoding", cache.Options{}, Options{Decoding: 7}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Scheme = scheme
			_, err := newCache(srv.Config(), tc.opts, tc.o)
			if err == nil || tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("newCache = %v, want an error (wrapping %v)", err, tc.is)
			}
		})
	}
	// EnableWatchBookmarks true is what the informers do anyway.
	if _, err := newCache(srv.Config(), cache.Options{Scheme: scheme, DefaultEnableWatchBookmarks: ptr.To(true)}, Options{}); err != nil {
		t.Errorf("DefaultEnableWatchBookmarks true: %v", err)
	}
}

// layout describes a router for comparison: each scope's namespaces,
// exclusions and label selector, and where each namespace goes.
type layout struct {
	Scopes  []string
	ByNS    map[string]int
	Rest    int // index of the rest scope, -1 for none
	Cluster int // index of the cluster scope, -1 for none
}

func describe(r *routerSpec) layout {
	l := layout{ByNS: map[string]int{}, Rest: slices.Index(r.scopes, r.rest), Cluster: slices.Index(r.scopes, r.cluster)}
	for _, s := range r.scopes {
		d := "all"
		if s.namespace != "" {
			d = "ns=" + s.namespace
		}
		if len(s.exclude) > 0 {
			d += " except=" + stringsJoin(s.exclude)
		}
		if s.cfg.label != nil {
			d += " label=" + s.cfg.label.String()
		}
		if s.cfg.field != nil {
			d += " field=" + s.cfg.field.String()
		}
		if s.cfg.unsafe {
			d += " unsafe"
		}
		l.Scopes = append(l.Scopes, d)
	}
	for ns, s := range r.byNS {
		l.ByNS[ns] = slices.Index(r.scopes, s)
	}
	return l
}

func stringsJoin(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ","
		}
		out += v
	}
	return out
}

// The namespaces of DefaultNamespaces and ByObject are laid out as
// controller-runtime configures them: settings from the namespace's entry,
// then the ByObject, then its DefaultNamespaces entry, then the defaults;
// each namespace has a scope of its own; AllNamespaces
// covers every other namespace.
func TestLayout(t *testing.T) {
	app := labels.SelectorFromSet(labels.Set{"app": "web"})
	tier := labels.SelectorFromSet(labels.Set{"tier": "db"})
	for _, tc := range []struct {
		name string
		opts cache.Options
		b    *cache.ByObject // a ByObject entry, or nil for the defaults
		want layout
	}{
		{"defaults", cache.Options{DefaultLabelSelector: app}, nil,
			layout{Scopes: []string{"all label=app=web"}, ByNS: map[string]int{}, Rest: 0, Cluster: 0}},
		{"a scope per namespace, even with the same settings", cache.Options{DefaultNamespaces: map[string]cache.Config{"a": {}, "b": {}}}, nil,
			layout{Scopes: []string{"ns=a", "ns=b"}, ByNS: map[string]int{"a": 0, "b": 1}, Rest: -1, Cluster: 0}},
		{"a namespace of its own", cache.Options{DefaultLabelSelector: app, DefaultNamespaces: map[string]cache.Config{"a": {}, "b": {LabelSelector: tier}}}, nil,
			layout{Scopes: []string{"ns=b label=tier=db", "ns=a label=app=web"}, ByNS: map[string]int{"a": 1, "b": 0}, Rest: -1, Cluster: 1}},
		{"only namespaces of their own", cache.Options{DefaultNamespaces: map[string]cache.Config{"b": {LabelSelector: tier}}}, nil,
			layout{Scopes: []string{"ns=b label=tier=db", "all"}, ByNS: map[string]int{"b": 0}, Rest: -1, Cluster: 1}},
		{"all namespaces, plain", cache.Options{DefaultNamespaces: map[string]cache.Config{"": {}, "a": {}, "b": {LabelSelector: tier}}}, nil,
			layout{Scopes: []string{"ns=b label=tier=db", "all except=b"}, ByNS: map[string]int{"b": 0}, Rest: 1, Cluster: 1}},
		{"all namespaces, configured", cache.Options{DefaultNamespaces: map[string]cache.Config{"": {LabelSelector: tier}, "a": {}}}, nil,
			layout{Scopes: []string{"all except=a label=tier=db", "ns=a"}, ByNS: map[string]int{"a": 1}, Rest: 0, Cluster: 1}},
		{"ByObject without namespaces takes DefaultNamespaces", cache.Options{DefaultNamespaces: map[string]cache.Config{"a": {}}},
			&cache.ByObject{Label: app}, layout{Scopes: []string{"ns=a label=app=web"}, ByNS: map[string]int{"a": 0}, Rest: -1, Cluster: -1}},
		{"ByObject with an empty map: every namespace", cache.Options{DefaultNamespaces: map[string]cache.Config{"a": {}}},
			&cache.ByObject{Label: app, Namespaces: map[string]cache.Config{}}, layout{Scopes: []string{"all label=app=web"}, ByNS: map[string]int{}, Rest: 0, Cluster: 0}},
		{"DefaultNamespaces' entry when ByObject has none", cache.Options{DefaultNamespaces: map[string]cache.Config{"a": {LabelSelector: tier, UnsafeDisableDeepCopy: ptr.To(true)}}},
			&cache.ByObject{Label: app}, layout{Scopes: []string{"ns=a label=tier=db unsafe"}, ByNS: map[string]int{"a": 0}, Rest: -1, Cluster: -1}},
		{"ByObject's settings before its DefaultNamespaces entry", cache.Options{DefaultNamespaces: map[string]cache.Config{"a": {LabelSelector: tier, UnsafeDisableDeepCopy: ptr.To(true)}}},
			&cache.ByObject{Label: app, Namespaces: map[string]cache.Config{"a": {}, "b": {}}},
			layout{Scopes: []string{"ns=a label=app=web unsafe", "ns=b label=app=web"}, ByNS: map[string]int{"a": 0, "b": 1}, Rest: -1, Cluster: -1}},
		{"cluster-scoped ByObject", cache.Options{DefaultNamespaces: map[string]cache.Config{"a": {}}, DefaultFieldSelector: fields.OneTermEqualSelector("metadata.name", "x")},
			&cache.ByObject{}, layout{Scopes: []string{"all field=metadata.name=x"}, ByNS: map[string]int{}, Rest: 0, Cluster: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r *routerSpec
			var err error
			if tc.b == nil {
				r, err = defaultRouter(&tc.opts)
			} else {
				r, err = byObjectRouter("test", &tc.opts, *tc.b, tc.name != "cluster-scoped ByObject")
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, describe(r)); diff != "" {
				t.Errorf("layout (-want +got):\n%s", diff)
			}
		})
	}
}

// With namespaces configured apart, reads go to the scope of their
// namespace; a namespace the cache does not cache is an error, as in
// controller-runtime; a List of all namespaces joins the scopes, counting
// Limit across them; GetInformer's informer hears every scope.
func TestMultiNamespace(t *testing.T) {
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	create(t, srv,
		pod("a", "p1", "n1", map[string]string{"app": "web"}),
		pod("a", "p2", "n1", map[string]string{"app": "web"}),
		pod("b", "p1", "n1", map[string]string{"app": "web"}),
		pod("c", "p1", "n1", map[string]string{"app": "web"}),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
	)
	c := newTestCache(t, srv, scheme, cache.Options{DefaultNamespaces: map[string]cache.Config{
		"a": {}, "b": {UnsafeDisableDeepCopy: ptr.To(true)},
	}}, Options{})
	if got := len(c.scopes); got != 2 {
		t.Fatalf("%d scopes, want 2", got)
	}
	start(t, c)
	ctx := timeout(t)
	if err := c.Get(ctx, client.ObjectKey{Namespace: "b", Name: "p1"}, &corev1.Pod{}); err != nil {
		t.Error(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "c", Name: "p1"}, &corev1.Pod{}); err == nil {
		t.Error("a Get in a namespace the cache does not cache succeeded")
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "n1"}, &corev1.Node{}); err != nil {
		t.Errorf("Get of a cluster-scoped Node = %v", err)
	}
	var l corev1.PodList
	if err := c.List(ctx, &l); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a/p1", "a/p2", "b/p1"}, names(t, &l)); diff != "" {
		t.Errorf("List of all namespaces (-want +got):\n%s", diff)
	}
	if err := c.List(ctx, &l, client.Limit(2)); err != nil || len(l.Items) != 2 {
		t.Errorf("List with Limit 2 = %d items, %v", len(l.Items), err)
	}
	if err := c.List(ctx, &l, client.InNamespace("c")); err == nil {
		t.Error("a List in a namespace the cache does not cache succeeded")
	}
	inf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	var ev events
	reg, err := inf.AddEventHandler(&ev)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "adds from both namespaces", func() bool { return ev.has("add a/p1", "add a/p2", "add b/p1") })
	select {
	case <-reg.HasSyncedChecker().Done():
	case <-ctx.Done():
		t.Fatal("the registration over two scopes did not sync")
	}
	if err := inf.RemoveEventHandler(reg); err != nil {
		t.Error(err)
	}
	if ev.has("add c/p1") {
		t.Error("the handler heard of namespace c")
	}
}

// A ByObject entry gives its kind scopes of its own: here Pods are cached
// from namespace a only, while ConfigMaps follow the defaults.
func TestByObject(t *testing.T) {
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	create(t, srv, pod("a", "p1", "n1", nil), pod("b", "p1", "n1", nil),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "cm"}})
	c := newTestCache(t, srv, scheme, cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Namespaces: map[string]cache.Config{"a": {}}},
	}}, Options{})
	start(t, c)
	ctx := timeout(t)
	var l corev1.PodList
	if err := c.List(ctx, &l); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a/p1"}, names(t, &l)); diff != "" {
		t.Errorf("Pods (-want +got):\n%s", diff)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "b", Name: "cm"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("ConfigMap from the defaults: %v", err)
	}
}

// controller-runtime's TransformStripManagedFields, the transform operators
// keep, is done while decoding, as Options.DropManagedFields does: the
// objects have no managedFields, and still share their maps (a transform
// that runs gets objects that share nothing it could edit). Whether set as
// the default transform or a ByObject's; a transform of the user's that
// does the same runs as it is.
func TestTransformStripManagedFieldsWhileDecoding(t *testing.T) {
	strip := cache.TransformStripManagedFields()
	own := func(obj any) (any, error) {
		obj.(client.Object).SetManagedFields(nil)
		return obj, nil
	}
	for _, tc := range []struct {
		name   string
		opts   cache.Options
		shared bool
	}{
		{"DefaultTransform", cache.Options{DefaultTransform: strip}, true},
		{"ByObject", cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: strip}}}, true},
		{"namespaces", cache.Options{DefaultTransform: strip, DefaultNamespaces: map[string]cache.Config{"a": {}}}, true},
		{"a transform of the user's", cache.Options{DefaultTransform: own}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme := testScheme(t)
			srv := newServer(t, scheme)
			// Three Pods: equal maps enter the decoder's table the
			// second time they come, and are shared from the third.
			for _, name := range []string{"p1", "p2", "p3"} {
				p := pod("a", name, "n1", map[string]string{"app": "web"})
				p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}}
				create(t, srv, p)
			}
			c := newTestCache(t, srv, scheme, tc.opts, Options{})
			start(t, c)
			var l corev1.PodList
			unsafe := true
			if err := c.List(timeout(t), &l, client.InNamespace("a"), &client.ListOptions{UnsafeDisableDeepCopy: &unsafe}); err != nil {
				t.Fatal(err)
			}
			if len(l.Items) != 3 {
				t.Fatalf("listed %d Pods", len(l.Items))
			}
			for _, p := range l.Items {
				if p.ManagedFields != nil {
					t.Errorf("%s has managedFields", p.Name)
				}
			}
			shared := false
			for i := range l.Items {
				for j := range i {
					shared = shared || reflect.ValueOf(l.Items[i].Labels).Pointer() == reflect.ValueOf(l.Items[j].Labels).Pointer()
				}
			}
			if shared != tc.shared {
				t.Errorf("equal labels shared: %v, want %v", shared, tc.shared)
			}
		})
	}
}

// TransformStripManagedFields here is a transform of the test's, named as
// controller-runtime's, that does more than strip managedFields: it must
// not be taken for controller-runtime's.
func TransformStripManagedFields() toolscache.TransformFunc {
	return func(in any) (any, error) {
		obj := in.(client.Object)
		obj.SetManagedFields(nil)
		obj.SetLabels(nil)
		return in, nil
	}
}

// madeInInit holds controller-runtime's transform made inside a closure of
// a package variable's initialization, where the compiler names the
// closure it copies ".TransformStripManagedFields.1", not ".func1".
var madeInInit = map[string]func() toolscache.TransformFunc{
	"strip": func() toolscache.TransformFunc { return cache.TransformStripManagedFields() },
}

// stripsManagedFields knows controller-runtime's transform wherever it is
// made (the compiler copies its closure into each caller), and no other.
func TestStripsManagedFields(t *testing.T) {
	made := func() toolscache.TransformFunc { return cache.TransformStripManagedFields() }
	for _, tc := range []struct {
		name string
		f    toolscache.TransformFunc
		want bool
	}{
		{"controller-runtime's", cache.TransformStripManagedFields(), true},
		{"controller-runtime's, made elsewhere", made(), true},
		{"controller-runtime's, made in a package variable's closure", madeInInit["strip"](), true},
		{"nil", nil, false},
		{"another", func(in any) (any, error) { return in, nil }, false},
		{"one of the same name that does more", TransformStripManagedFields(), false},
	} {
		if got := stripsManagedFields(tc.f); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
