package informers

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// crudCase is one kind of informer under test: the resource, how to make the informer for a
// namespace, the object to create, and a check of an object the informer hands out that reads it
// through T's own fields.
type crudCase[T informer.Object] struct {
	gvr schema.GroupVersionResource
	// setup, if set, prepares ns before the test writes there (installs a CRD).
	setup func(t *testing.T, c *kubetest.Clients, ns string)
	// informer returns the informer under test, not started, and what runs it: the informer
	// itself, or its Factory.
	informer func(t *testing.T, c *kubetest.Clients, ns string) (*informer.SharedIndexInformer[T], kubetest.Runner)
	object   func(name string) *unstructured.Unstructured
	check    func(obj T) error
}

// direct makes crudCase.informer for an informer built directly over the ListerWatcher newLW
// returns.
func direct[T informer.Object](gvr schema.GroupVersionResource, newLW func(t *testing.T, c *kubetest.Clients, ns string) informer.ListerWatcher[T]) func(*testing.T, *kubetest.Clients, string) (*informer.SharedIndexInformer[T], kubetest.Runner) {
	return func(t *testing.T, c *kubetest.Clients, ns string) (*informer.SharedIndexInformer[T], kubetest.Runner) {
		t.Helper()
		inf, err := informer.NewSharedIndexInformer(newLW(t, c, ns), informer.SharedIndexInformerOptions[T]{
			Resource: gvr.GroupResource(),
		})
		if err != nil {
			t.Fatal(err)
		}
		return inf, inf
	}
}

// write is a change the test made, as the handlers should see it.
type write struct {
	kind kubetest.EventKind
	key  string
	rv   string // "" for a delete, whose resource version the client does not learn
}

// runCRUD checks that an informer of c's type syncs the objects that exist when it starts, then
// hands the creates, updates and deletes that follow to its handlers typed, once each and in the
// order they were made; that its lister reads them typed; and that at the end its cache, and the
// state the handlers rebuilt, equal a fresh LIST.
func runCRUD[T informer.Object](t *testing.T, c crudCase[T]) {
	verifyNoGoroutinesLeft(t)
	ctx := testContext(t, 2*time.Minute)
	cl := adminClients(t)
	ns := newNamespace(t, cl)
	res := cl.Dynamic.Resource(c.gvr).Namespace(ns)

	var writes []write
	create := func(name string) {
		t.Helper()
		obj, err := res.Create(ctx, c.object(name), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		writes = append(writes, write{kubetest.Add, ns + "/" + name, obj.GetResourceVersion()})
	}
	update := func(name string, gen int) {
		t.Helper()
		patch := fmt.Appendf(nil, `{"metadata":{"labels":{"gen":"%d"}}}`, gen)
		obj, err := res.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("update %s: %v", name, err)
		}
		writes = append(writes, write{kubetest.Update, ns + "/" + name, obj.GetResourceVersion()})
	}
	del := func(name string) {
		t.Helper()
		if err := res.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete %s: %v", name, err)
		}
		writes = append(writes, write{kind: kubetest.Delete, key: ns + "/" + name})
	}

	if c.setup != nil {
		c.setup(t, cl, ns)
	}
	for i := range 3 {
		create(fmt.Sprintf("pre-%d", i))
	}
	initial := writes
	writes = nil

	inf, runner := c.informer(t, cl, ns)
	mirror := kubetest.NewMirror[T]()
	mirror.Record = true
	reg, err := inf.AddEventHandler(mirror)
	if err != nil {
		t.Fatal(err)
	}
	// A second handler, made of functions, reads every object it is given through T's fields.
	var typedMu sync.Mutex
	var typedErrs []string
	checkTyped := func(how string, obj T) {
		if err := c.check(obj); err != nil {
			typedMu.Lock()
			typedErrs = append(typedErrs, fmt.Sprintf("%s %s: %v", how, obj.GetName(), err))
			typedMu.Unlock()
		}
	}
	if _, err := inf.AddEventHandler(informer.ResourceEventHandlerFuncs[T]{
		AddFunc:    func(obj T, _ bool) { checkTyped("OnAdd", obj) },
		UpdateFunc: func(oldObj, newObj T) { checkTyped("OnUpdate old", oldObj); checkTyped("OnUpdate new", newObj) },
		DeleteFunc: func(d informer.DeletedObject[T]) { checkTyped("OnDelete", d.Obj) },
	}); err != nil {
		t.Fatal(err)
	}

	stop := kubetest.Start(ctx, runner)
	defer func() {
		if err := stop(30 * time.Second); err != nil {
			t.Error(err)
		}
	}()
	if err := informer.WaitForCacheSync(testContext(t, 30*time.Second), inf, reg); err != nil {
		t.Fatal(err)
	}
	if got := mirror.Events(); !sameWrites(got, initial, true) {
		t.Fatalf("initial notifications:\n%s\nwant an initial add of each of %v", events(got), initial)
	}
	synced := len(mirror.Events())

	for i := range 3 {
		create(fmt.Sprintf("obj-%d", i))
	}
	for gen := 1; gen <= 2; gen++ {
		for i := range 3 {
			update(fmt.Sprintf("obj-%d", i), gen)
		}
	}
	del("obj-0")
	del("pre-0")

	if _, err := kubetest.WaitConverged(ctx, 30*time.Second, kubetest.MetadataLister(cl.Metadata, ns),
		kubetest.Cache{Name: "cache", GVR: c.gvr, State: func() kubetest.State { return kubetest.CacheState(inf) }},
		kubetest.Cache{Name: "handlers", GVR: c.gvr, State: mirror.State},
	); err != nil {
		t.Fatal(err)
	}
	if err := mirror.Err(); err != nil {
		t.Errorf("inconsistent notifications: %v", err)
	}
	if got := mirror.Events()[synced:]; !sameWrites(got, writes, false) {
		t.Errorf("notifications after sync:\n%s\nwant, in this order:\n%v", events(got), writes)
	}
	typedMu.Lock()
	if len(typedErrs) > 0 {
		t.Errorf("typed handler: %s", strings.Join(typedErrs, "\n"))
	}
	typedMu.Unlock()

	// The lister reads the cache typed, by namespace and label.
	lister := inf.Lister().ByNamespace(ns)
	obj, err := lister.Get("obj-1")
	if err != nil {
		t.Fatalf("lister Get obj-1: %v", err)
	}
	if err := c.check(obj); err != nil {
		t.Errorf("lister Get obj-1: %v", err)
	}
	if obj.GetLabels()["gen"] != "2" {
		t.Errorf("lister Get obj-1: labels %v, want gen=2", obj.GetLabels())
	}
	if _, err := lister.Get("obj-0"); !apierrors.IsNotFound(err) {
		t.Errorf("lister Get of deleted obj-0: err = %v, want NotFound", err)
	}
	gen2, err := lister.List(labels.SelectorFromSet(labels.Set{"gen": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, obj := range gen2 {
		names = append(names, obj.GetName())
	}
	slices.Sort(names)
	if want := []string{"obj-1", "obj-2"}; !slices.Equal(names, want) {
		t.Errorf("lister List gen=2: %v, want %v", names, want)
	}
}

// sameWrites reports whether the notifications got are exactly the writes, in order: an add
// per create (in the initial list or not, as initial says), an update per update, from the
// previous state, a delete per delete. A delete may come after an update of the same object:
// the server deletes a Pod by first setting its deletionTimestamp.
func sameWrites(got []kubetest.Event, want []write, initial bool) bool {
	last := map[string]string{}
	for _, w := range want {
		if len(got) == 0 {
			return false
		}
		e := got[0]
		if w.kind == kubetest.Delete && e.Kind == kubetest.Update && e.Key == w.key && (last[e.Key] == "" || e.OldRV == last[e.Key]) {
			last[e.Key] = e.RV
			got = got[1:]
			if len(got) == 0 {
				return false
			}
			e = got[0]
		}
		got = got[1:]
		if e.Kind != w.kind || e.Key != w.key || (w.rv != "" && e.RV != w.rv) || e.Unknown {
			return false
		}
		switch e.Kind {
		case kubetest.Add:
			if e.Initial != initial {
				return false
			}
		case kubetest.Update:
			if e.OldRV != last[e.Key] {
				return false
			}
		}
		last[e.Key] = e.RV
	}
	return len(got) == 0
}

func events(es []kubetest.Event) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "\t%v\n", e)
	}
	return b.String()
}
