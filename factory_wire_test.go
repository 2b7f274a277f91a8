package informer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/typedkube/informer/internal/fakeapi"
	"github.com/typedkube/informer/internal/testobj"
	"github.com/typedkube/informer/wire"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// podSlim is the projection the factory tests cache.
type podSlim struct {
	wire.Meta[podSlim]
	Spec struct {
		NodeName   string
		Containers []struct{ Name, Image string }
	}
	Status struct{ Phase corev1.PodPhase }
}

func richPod(ns, name, node string) *corev1.Pod {
	p := factoryPod(ns, name, node)
	p.Annotations = map[string]string{"note": strings.Repeat("x", 50)}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u1"}}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "test", Operation: metav1.ManagedFieldsOperationApply}}
	p.Spec.Containers = []corev1.Container{{Name: "main", Image: "img:1", Args: []string{"--a"}, Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}}
	p.Status.Phase = corev1.PodRunning
	return p
}

// TestFactoryDecodeWire: with DecodeWire, For[*corev1.Pod] caches objects
// equal under go-cmp to those of client-go's decoding, over protobuf, with a
// watch-list stream or a LIST, and delivers updates and deletes.
func TestFactoryDecodeWire(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts InformerOptions
	}{
		{"watch-list", InformerOptions{}},
		{"list", InformerOptions{Reflector: ReflectorOptions{WatchList: WatchListOff}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeAPI(t, podsResource)
			create(t, srv, richPod("a", "web", "node-1"), richPod("b", "db", "node-2"))
			ref := newTestFactory(t, srv, FactoryOptions{Informer: tc.opts})
			f := newTestFactory(t, srv, FactoryOptions{Informer: tc.opts, Decoding: DecodeWire})
			want, err := For[*corev1.Pod](ref)
			if err != nil {
				t.Fatal(err)
			}
			pods, err := For[*corev1.Pod](f)
			if err != nil {
				t.Fatal(err)
			}
			log := addLog(t, pods)
			syncFactory(t, t.Context(), ref)
			syncFactory(t, t.Context(), f)
			log.waitFor(t, "add a/web", "add b/db")
			if d := cmp.Diff(sortedPods(want.GetIndexer().List()), sortedPods(pods.GetIndexer().List())); d != "" {
				t.Errorf("cache differs from client-go's decoding (-client-go +wire):\n%s", d)
			}
			if err := srv.Update(richPod("a", "web", "node-3")); err != nil {
				t.Fatal(err)
			}
			if err := srv.Delete(factoryPod("b", "db", "")); err != nil {
				t.Fatal(err)
			}
			log.waitFor(t, "update a/web", "delete b/db")
			got, err := pods.Lister().ByNamespace("a").Get("web")
			if err != nil || got.Spec.NodeName != "node-3" || got.ManagedFields == nil {
				t.Errorf("Get(a/web) = %v, %v; want node-3 with managedFields", got, err)
			}
			for _, r := range resourceRequests(srv, "/pods") {
				if r.ContentType != runtime.ContentTypeProtobuf {
					t.Errorf("request %s?%s answered in %q; want protobuf", r.Path, r.Query.Encode(), r.ContentType)
				}
			}
		})
	}
}

// TestForProjection: a projection caches only its fields, decoded from
// protobuf; keys, listers with label selectors, handlers and tombstones
// work; annotations can be filtered; the informer is shared per P.
func TestForProjection(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	create(t, srv, richPod("a", "web", "node-1"), richPod("b", "db", "node-2"))
	f := newTestFactory(t, srv, FactoryOptions{Wire: wire.Options{Annotations: func(string) bool { return false }}})
	pods, err := ForProjection[podSlim, corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := ForProjection[podSlim, corev1.Pod](f); err != nil || again != pods {
		t.Errorf("second ForProjection = %p, %v; want the same informer %p", again, err, pods)
	}
	if pods.Name() != "v1/pods (podSlim)" {
		t.Errorf("Name() = %q", pods.Name())
	}
	deleted := make(chan *podSlim, 1)
	log := addLog(t, pods)
	if _, err := pods.AddEventHandler(ResourceEventHandlerFuncs[*podSlim]{DeleteFunc: func(d DeletedObject[*podSlim]) { deleted <- d.Obj }}); err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	log.waitFor(t, "add a/web", "add b/db")

	got, err := pods.Lister().ByNamespace("a").Get("web")
	if err != nil {
		t.Fatal(err)
	}
	want := &podSlim{}
	want.Namespace, want.Name, want.Labels = "a", "web", map[string]string{"app": "web"}
	want.ResourceVersion, want.UID = got.ResourceVersion, got.UID
	want.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u1"}}
	want.Spec.NodeName = "node-1"
	want.Spec.Containers = []struct{ Name, Image string }{{"main", "img:1"}}
	want.Status.Phase = corev1.PodRunning
	if d := cmp.Diff(want, got, cmp.AllowUnexported(wire.Meta[podSlim]{})); d != "" {
		t.Errorf("cached projection (-want +got):\n%s", d)
	}
	if got.ResourceVersion == "" {
		t.Error("no resourceVersion")
	}
	sel, _ := labels.Parse("app=db")
	if list, err := pods.Lister().List(sel); err != nil || len(list) != 1 || list[0].Name != "db" {
		t.Errorf("List(app=db) = %v, %v", list, err)
	}
	if cp, ok := got.DeepCopyObject().(*podSlim); !ok || !cmp.Equal(cp, got) || cp == got {
		t.Errorf("DeepCopyObject = %#v", cp)
	}

	if err := srv.Delete(factoryPod("b", "db", "")); err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, "delete b/db")
	_, err = pods.Lister().ByNamespace("b").Get("db")
	if !apierrors.IsNotFound(err) {
		t.Errorf("Get(b/db) after delete: %v", err)
	}
	if d := <-deleted; d.Namespace != "b" || d.Name != "db" {
		t.Errorf("deleted %s/%s, want b/db", d.Namespace, d.Name)
	}
}

// TestForProjectionMismatch: a projection field T lacks, or of another
// type, or the Meta of another projection, is an error naming its path,
// made before any request.
func TestForProjectionMismatch(t *testing.T) {
	type badField struct {
		wire.Meta[badField]
		Spec struct{ NodeNam string }
	}
	type badType struct {
		wire.Meta[badType]
		Spec struct{ NodeName int }
	}
	srv := newFakeAPI(t, podsResource)
	f := newTestFactory(t, srv, FactoryOptions{})
	_, err := ForProjection[badField, corev1.Pod](f)
	var me *wire.MismatchError
	if !errors.As(err, &me) || me.Path != "Spec.NodeNam" || !errors.Is(err, wire.ErrMismatch) {
		t.Errorf("ForProjection[badField] = %v, want a mismatch at Spec.NodeNam", err)
	}
	_, err = ForProjection[badType, corev1.Pod](f)
	if !errors.As(err, &me) || me.Path != "Spec.NodeName" {
		t.Errorf("ForProjection[badType] = %v, want a mismatch at Spec.NodeName", err)
	}
	// Another projection's Meta, which DeepCopyObject would copy as that
	// projection (it was accepted).
	type wrongMeta struct {
		wire.Meta[podSlim]
		Spec struct{ NodeName string }
	}
	_, err = ForProjection[wrongMeta, corev1.Pod](f)
	if !errors.As(err, &me) || me.Path != "Meta" || !strings.Contains(me.Reason, "wire.Meta[wrongMeta]") {
		t.Errorf("ForProjection[wrongMeta] = %v, want a mismatch at Meta saying wire.Meta[wrongMeta]", err)
	}
	if reqs := resourceRequests(srv, "/pods"); len(reqs) != 0 {
		t.Errorf("requests %v, want none", reqs)
	}
}

// TestForProjectionClients: over client-go's fake clientset, the projection
// of each object equals what the wire decoding gives.
func TestForProjectionClients(t *testing.T) {
	cs, f := clientsFactory(t, richPod("a", "web", "node-1"))
	pods, err := ForProjection[podSlim, corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	started := watchStarted(cs, "pods")
	log := addLog(t, pods)
	syncFactory(t, t.Context(), f)
	<-started
	log.waitFor(t, "add a/web")
	if _, err := cs.CoreV1().Pods("a").Update(t.Context(), richPod("a", "web", "node-9"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, "update a/web")
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := pods.Lister().ByNamespace("a").Get("web")
		if err == nil && got.Spec.NodeName == "node-9" && len(got.Spec.Containers) == 1 && got.Spec.Containers[0].Image == "img:1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Get(a/web) = %+v, %v", got, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// expireFirstWatch wraps a ListerWatcher so that its first watch fails with
// 410 Expired, which makes the Reflector list again, and tells watches on
// watched.
func expireFirstWatch[T Object](watched chan<- int) func(ListerWatcher[T]) ListerWatcher[T] {
	var n atomic.Int32
	return func(lw ListerWatcher[T]) ListerWatcher[T] {
		return ListWatchFuncs[T]{ListFunc: lw.List, WatchFunc: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			i := int(n.Add(1))
			watched <- i
			if i == 1 {
				return nil, apierrors.NewResourceExpired("expired for the test")
			}
			return lw.Watch(ctx, opts)
		}}
	}
}

// A transform set with SetTransform (client-go's idiom, also through
// clientgo.SharedIndexInformer) after For, before Start, is honoured as one
// given to For: the objects it edits in place share no label or
// annotation maps with others (two Pods with equal labels would otherwise
// share one map, and the transform of one would change the other), and a
// relist decodes every object anew rather than hand the transform an
// object it already transformed. For full objects and projections.
func TestFactorySetTransformAfterFor(t *testing.T) {
	pod := func(ns, name string) *corev1.Pod {
		p := factoryPod(ns, name, "node-1")
		p.Labels = map[string]string{"app": "same"}
		p.Annotations = map[string]string{"note": "same"}
		return p
	}
	t.Run("For", func(t *testing.T) {
		checkLateTransform(t, func(f *Factory, o ForOptions[*corev1.Pod]) (*SharedIndexInformer[*corev1.Pod], error) {
			return For(f, o)
		}, pod)
	})
	t.Run("ForProjection", func(t *testing.T) {
		checkLateTransform(t, func(f *Factory, o ForOptions[*podSlim]) (*SharedIndexInformer[*podSlim], error) {
			return ForProjection[podSlim, corev1.Pod](f, o)
		}, pod)
	})
}

func checkLateTransform[T Object](t *testing.T, forT func(*Factory, ForOptions[T]) (*SharedIndexInformer[T], error), pod func(ns, name string) *corev1.Pod) {
	srv := newFakeAPI(t, podsResource)
	create(t, srv, pod("a", "web"), pod("b", "db"))
	f := newTestFactory(t, srv, FactoryOptions{Informer: InformerOptions{Reflector: ReflectorOptions{WatchList: WatchListOff}}})
	watched := make(chan int, 8)
	inf, err := forT(f, ForOptions[T]{WrapListWatch: expireFirstWatch[T](watched)})
	if err != nil {
		t.Fatal(err)
	}
	// Each object gets its own name as a label, and one more "+" in an
	// annotation, in place: once per decoded object.
	err = inf.SetTransform(func(obj T) (T, error) {
		obj.GetLabels()["name"] = obj.GetName()
		obj.GetAnnotations()["note"] += "+"
		return obj, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	log := addLog(t, inf)
	syncFactory(t, t.Context(), f)
	log.waitFor(t, "add a/web", "add b/db")
	if <-watched != 1 || <-watched != 2 {
		t.Fatal("watches out of order")
	}
	// The relist after the 410 came before the second watch.
	log.waitFor(t, "update a/web", "update b/db")
	for _, obj := range inf.GetIndexer().List() {
		if got := obj.GetLabels()["name"]; got != obj.GetName() {
			t.Errorf("%s has the label name=%s: the transform of another object changed its labels", objectKey(obj), got)
		}
		if got := obj.GetAnnotations()["note"]; got != "same+" {
			t.Errorf("%s has the annotation note=%q, want %q: the transform got an object it had transformed", objectKey(obj), got, "same+")
		}
	}
}

// For of a projection type says to use ForProjection, rather than only that
// the scheme does not know it.
func TestForOfProjection(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	f := newTestFactory(t, srv, FactoryOptions{})
	_, err := For[*podSlim](f)
	if !errors.Is(err, ErrNotRegistered) || !strings.Contains(err.Error(), "ForProjection[podSlim, T]") {
		t.Errorf("For[*podSlim] = %v, want ErrNotRegistered naming ForProjection[podSlim, T]", err)
	}
	if _, err := For[*widget](f); err == nil || strings.Contains(err.Error(), "ForProjection") {
		t.Errorf("For[*widget] = %v, want ErrNotRegistered without ForProjection (widget is no projection)", err)
	}
}

// Without a transform, a relist reuses the cached object of each object
// whose resource version it finds unchanged, for namespaced objects (found
// by the key namespace/name) and cluster-scoped ones (by name): the update
// it makes hands the handlers that object as old and new.
func TestFactoryRelistReusesCachedObjects(t *testing.T) {
	t.Run("namespaced", func(t *testing.T) {
		checkRelistReuse(t, podsResource, []string{"a/web", "b/db"}, factoryPod("a", "web", "node-1"), factoryPod("b", "db", "node-1"))
	})
	t.Run("cluster-scoped", func(t *testing.T) {
		checkRelistReuse(t, nodesResource, []string{"node-1", "node-2"},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}})
	})
}

func checkRelistReuse[T interface {
	Object
	comparable
}](t *testing.T, res fakeapi.Resource, keys []string, objs ...T) {
	srv := newFakeAPI(t, res)
	for _, obj := range objs {
		create(t, srv, any(obj).(runtime.Object))
	}
	f := newTestFactory(t, srv, FactoryOptions{Informer: InformerOptions{Reflector: ReflectorOptions{WatchList: WatchListOff}}})
	watched := make(chan int, 8)
	inf, err := For(f, ForOptions[T]{WrapListWatch: expireFirstWatch[T](watched)})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	same := map[string]bool{} // by key: whether the update's old and new were one object
	updated := make(chan struct{}, len(keys))
	if _, err := inf.AddEventHandler(ResourceEventHandlerFuncs[T]{UpdateFunc: func(old, obj T) {
		mu.Lock()
		defer mu.Unlock()
		same[objectKey(obj)] = old == obj
		updated <- struct{}{}
	}}); err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	if <-watched != 1 || <-watched != 2 {
		t.Fatal("watches out of order")
	}
	// The relist after the 410 came before the second watch.
	for range keys {
		select {
		case <-updated:
		case <-time.After(30 * time.Second):
			t.Fatal("the relist's updates did not come")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, key := range keys {
		if reused, ok := same[key]; !ok || !reused {
			t.Errorf("%s: updated %v, old and new one object %v; want a reused object", key, ok, reused)
		}
	}
}

// A program that writes to a cached object's labels (which the contract
// forbids) does not change the labels of objects decoded after it, though
// package wire gave them one map: the informer's Stats count the write, so
// that the bug can be found. Decoded and compact stores alike.
func TestFactorySharedMapsWritten(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compact=%v", compact), func(t *testing.T) {
			srv := newFakeAPI(t, podsResource)
			// p1 and p1b have the labels {app: p1}, p2 {app: p2}: maps
			// enter the decoder's table the second time they come, so
			// the second of p1 and p1b has its map remembered, and a Pod
			// with those labels decoded next shares it.
			again := factoryPod("a", "p1b", "n1")
			again.Labels = map[string]string{"app": "p1"}
			create(t, srv, factoryPod("a", "p1", "n1"), again, factoryPod("a", "p2", "n1"))
			f := newTestFactory(t, srv, FactoryOptions{})
			pods, err := For[*corev1.Pod](f, ForOptions[*corev1.Pod]{Compact: compact})
			if err != nil {
				t.Fatal(err)
			}
			syncFactory(t, t.Context(), f)
			same := factoryPod("a", "p3", "n1")
			same.Labels = map[string]string{"app": "p1"}
			create(t, srv, same)
			waitUntil(t, "p3 cached", func() bool { _, ok := pods.GetIndexer().GetByKey("a/p3"); return ok })
			p1, _ := pods.GetIndexer().GetByKey("a/p1")
			p1b, _ := pods.GetIndexer().GetByKey("a/p1b")
			p3, _ := pods.GetIndexer().GetByKey("a/p3")
			shares := func(p *corev1.Pod) bool {
				return reflect.ValueOf(p.Labels).Pointer() == reflect.ValueOf(p3.Labels).Pointer()
			}
			if !compact && !shares(p1) && !shares(p1b) {
				t.Fatal("equal labels not shared: nothing to test")
			}
			p3.Labels["app"] = "written" // forbidden
			next := factoryPod("a", "p4", "n1")
			next.Labels = map[string]string{"app": "p1"}
			create(t, srv, next)
			waitUntil(t, "p4 cached", func() bool { _, ok := pods.GetIndexer().GetByKey("a/p4"); return ok })
			p4, _ := pods.GetIndexer().GetByKey("a/p4")
			if p4.Labels["app"] != "p1" {
				t.Errorf("a Pod decoded after the write has labels %v, want those the server sent", p4.Labels)
			}
			if got, err := pods.Lister().List(labels.SelectorFromSet(labels.Set{"app": "p1"})); err != nil || !slices.ContainsFunc(got, func(p *corev1.Pod) bool { return p.Name == "p4" }) {
				t.Errorf("app=p1 lists %s, %v; want p4 among them", podsString(got), err)
			}
			if n := pods.Stats().SharedMapsWritten; n != 1 {
				t.Errorf("Stats().SharedMapsWritten = %d, want 1", n)
			}
		})
	}
}

// An update shares the parts of the object (a Pod's spec, status) that its
// bytes did not change with the cached object it replaces (a compact
// store: the object its codec holds decoded), the listed object's too;
// with a transform or with Wire.NoPartReuse, it shares nothing. Each object equals the server's.
func TestFactoryUpdateSharesUnchangedParts(t *testing.T) {
	for _, mode := range []string{"default", "transform", "compact", "nopartreuse"} {
		t.Run(mode, func(t *testing.T) {
			srv := newFakeAPI(t, podsResource)
			pod := testobj.RealisticPod("ns", 0, 1)
			create(t, srv, pod)
			f := newTestFactory(t, srv, FactoryOptions{Wire: wire.Options{NoPartReuse: mode == "nopartreuse"}})
			opts := ForOptions[*corev1.Pod]{Compact: mode == "compact"}
			if mode == "transform" {
				opts.Transform = func(p *corev1.Pod) (*corev1.Pod, error) { return p, nil }
			}
			pods, err := For(f, opts)
			if err != nil {
				t.Fatal(err)
			}
			type update struct{ old, obj *corev1.Pod }
			updates := make(chan update, 8)
			if _, err := pods.AddEventHandler(ResourceEventHandlerFuncs[*corev1.Pod]{UpdateFunc: func(old, obj *corev1.Pod) {
				updates <- update{old, obj}
			}}); err != nil {
				t.Fatal(err)
			}
			syncFactory(t, t.Context(), f)
			// A read makes a compact store's codec hold the listed Pod
			// decoded, as the delivery of its add does when it comes
			// first: otherwise round 1's old object would be decoded
			// beside the new one (wire.Compact.DecodeBeside), sharing its
			// spec, however late that delivery is.
			if _, ok := pods.GetIndexer().GetByKey(pod.Namespace + "/" + pod.Name); !ok {
				t.Fatal("the listed Pod is not cached")
			}
			for round := 1; round <= 4; round++ {
				want := pod.DeepCopy()
				want.Status.ContainerStatuses[0].RestartCount = int32(round)
				if round == 3 {
					want.Spec.ActiveDeadlineSeconds = ptrTo(int64(600)) // the spec changes too
				}
				if err := srv.Update(want); err != nil {
					t.Fatal(err)
				}
				var u update
				select {
				case u = <-updates:
				case <-time.After(30 * time.Second):
					t.Fatalf("round %d: no update", round)
				}
				want.ResourceVersion = u.obj.ResourceVersion // the server's
				if diff := cmp.Diff(want, u.obj, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("round %d, -server +cached:\n%s", round, diff)
				}
				sharedSpec := &u.obj.Spec.Containers[0] == &u.old.Spec.Containers[0]
				sharedStatus := &u.obj.Status.ContainerStatuses[0] == &u.old.Status.ContainerStatuses[0]
				// Round 1 finds no parts remembered (the list does not
				// remember them): the decoder derives them from the
				// cached object; round 3 changes the spec.
				wantShared := (mode == "default" || mode == "compact") && round != 3
				if sharedSpec != wantShared || sharedStatus {
					t.Errorf("round %d: spec shared with the replaced object %v, want %v; status shared %v, want false", round, sharedSpec, wantShared, sharedStatus)
				}
				pod = want
			}
		})
	}
}

// podEvent is what a handler of podEventsOf was called with: old is nil
// but for an update, obj the deleted object for a delete.
type podEvent struct{ old, obj *corev1.Pod }

// podEventsOf adds a handler to pods and returns what gives its next
// call, failing the test if none comes within 30 seconds (what names it).
func podEventsOf(t *testing.T, pods *SharedIndexInformer[*corev1.Pod]) (next func(what string) podEvent) {
	t.Helper()
	events := make(chan podEvent, 8)
	if _, err := pods.AddEventHandler(ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc:    func(obj *corev1.Pod, _ bool) { events <- podEvent{nil, obj} },
		UpdateFunc: func(old, obj *corev1.Pod) { events <- podEvent{old, obj} },
		DeleteFunc: func(d DeletedObject[*corev1.Pod]) { events <- podEvent{nil, d.Obj} },
	}); err != nil {
		t.Fatal(err)
	}
	return func(what string) podEvent {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s within 30s", what)
		}
		return podEvent{}
	}
}

// A listed Pod's first update and delete share the parts their bytes did
// not change with the cached object: the store's object has no parts
// remembered, and the decoder derives them by encoding it again. Each
// object equals the server's.
func TestFactoryListedObjectSharesPartsWithItsFirstUpdate(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	pod := testobj.RealisticPod("ns", 0, 1)
	if err := srv.Create(pod); err != nil {
		t.Fatal(err)
	}
	f := newTestFactory(t, srv, FactoryOptions{})
	pods, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	next := podEventsOf(t, pods)
	syncFactory(t, t.Context(), f)
	listed := next("listed add").obj
	want := pod.DeepCopy()
	want.Status.ContainerStatuses[0].RestartCount++
	if err := srv.Update(want); err != nil {
		t.Fatal(err)
	}
	u := next("update")
	if u.old != listed {
		t.Fatal("the update's old object is not the listed one")
	}
	want.ResourceVersion = u.obj.ResourceVersion // the server's
	if diff := cmp.Diff(want, u.obj, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("-server +cached:\n%s", diff)
	}
	if &u.obj.Spec.Containers[0] != &listed.Spec.Containers[0] {
		t.Error("the first update of a listed Pod does not share its spec with the listed object")
	}
	if &u.obj.Status.ContainerStatuses[0] == &listed.Status.ContainerStatuses[0] {
		t.Error("the update shares the status it changed")
	}
	if err := srv.Delete(want); err != nil {
		t.Fatal(err)
	}
	d := next("delete").obj
	if diff := cmp.Diff(want, d, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(metav1.ObjectMeta{}, "ResourceVersion")); diff != "" {
		t.Fatalf("-server +deleted:\n%s", diff)
	}
	if &d.Spec.Containers[0] != &u.obj.Spec.Containers[0] {
		t.Error("the deleted Pod does not share its spec with the last update's object")
	}
}

// A Pod added after the informer synced (a watch's ADDED event, not a
// listed one) is remembered: its first update shares the parts its bytes
// did not change with the added object, and its delete shares the parts
// of the last update (default store and compact store). Each object
// equals the server's.
func TestFactoryAddedObjectSharesPartsWithItsUpdateAndDelete(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compact=%v", compact), func(t *testing.T) {
			srv := newFakeAPI(t, podsResource)
			f := newTestFactory(t, srv, FactoryOptions{})
			pods, err := For(f, ForOptions[*corev1.Pod]{Compact: compact})
			if err != nil {
				t.Fatal(err)
			}
			next := podEventsOf(t, pods)
			syncFactory(t, t.Context(), f)
			pod := testobj.RealisticPod("ns", 0, 1)
			if err := srv.Create(pod); err != nil {
				t.Fatal(err)
			}
			added := next("add").obj
			want := pod.DeepCopy()
			want.Status.ContainerStatuses[0].RestartCount++
			if err := srv.Update(want); err != nil {
				t.Fatal(err)
			}
			u := next("update")
			want.ResourceVersion = u.obj.ResourceVersion // the server's
			if diff := cmp.Diff(want, u.obj, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("-server +cached:\n%s", diff)
			}
			if &u.obj.Spec.Containers[0] != &added.Spec.Containers[0] {
				t.Error("the first update of an added Pod does not share its spec with the added object")
			}
			if &u.obj.Status.ContainerStatuses[0] == &added.Status.ContainerStatuses[0] {
				t.Error("the update shares the status it changed")
			}
			if err := srv.Delete(want); err != nil {
				t.Fatal(err)
			}
			d := next("delete").obj
			if d.Name != want.Name {
				t.Fatalf("deleted %s, want %s", d.Name, want.Name)
			}
			if diff := cmp.Diff(want, d, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(metav1.ObjectMeta{}, "ResourceVersion")); diff != "" {
				t.Fatalf("-server +deleted:\n%s", diff)
			}
			if &d.Spec.Containers[0] != &u.obj.Spec.Containers[0] || &d.Status.ContainerStatuses[0] != &u.obj.Status.ContainerStatuses[0] {
				t.Error("the deleted Pod does not share its spec and status with the last update's object")
			}
		})
	}
}
