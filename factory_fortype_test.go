package informer

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

var podType = reflect.TypeFor[*corev1.Pod]()

// sortedByKey returns objs sorted by their namespace and name.
func sortedByKey[T Object](objs []T) []T {
	return slices.SortedFunc(slices.Values(objs), func(a, b T) int { return strings.Compare(objectKey(a), objectKey(b)) })
}

// ForType's informer of Object lists, watches and caches *corev1.Pod as
// For[*corev1.Pod]'s does, in every queue, store and start mode: a factory
// of each over one server, the same changes, caches compared with go-cmp.
// Its requests are For's (protobuf); an update shares the parts it did not
// change with the object it replaces; its objects are *corev1.Pod.
func TestForType(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts FactoryOptions
	}{
		{"watch-list", FactoryOptions{}},
		{"list", FactoryOptions{Informer: InformerOptions{Reflector: ReflectorOptions{WatchList: WatchListOff}}}},
		{"deltafifo", FactoryOptions{Informer: InformerOptions{Queue: QueueDeltaFIFO, Reflector: ReflectorOptions{WatchList: WatchListOff}}}},
		{"compact", FactoryOptions{Informer: InformerOptions{Compact: true, Reflector: ReflectorOptions{WatchList: WatchListOff}}}},
		{"client-go codecs", FactoryOptions{Decoding: DecodeClientGo}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeAPI(t, podsResource)
			create(t, srv, richPod("a", "web", "node-1"), richPod("b", "db", "node-2"))
			tf, ef := newTestFactory(t, srv, tc.opts), newTestFactory(t, srv, tc.opts)
			typed, err := For[*corev1.Pod](tf)
			if err != nil {
				t.Fatal(err)
			}
			erased, err := ForType[Object](t.Context(), ef, podType)
			if err != nil {
				t.Fatal(err)
			}
			if erased.Name() != "v1/pods" {
				t.Errorf("Name() = %q, want v1/pods", erased.Name())
			}
			if again, err := ForType[Object](t.Context(), ef, podType); err != nil || again != erased {
				t.Errorf("second ForType: %p, %v; want %p", again, err, erased)
			}
			tlog, elog := addLog(t, typed), addLog(t, erased)
			// Per update: whether the new object's containers are the old one's.
			sharedSpec := make(chan bool, 4)
			if _, err := erased.AddEventHandler(ResourceEventHandlerFuncs[Object]{UpdateFunc: func(old, obj Object) {
				sharedSpec <- &old.(*corev1.Pod).Spec.Containers[0] == &obj.(*corev1.Pod).Spec.Containers[0]
			}}); err != nil {
				t.Fatal(err)
			}
			syncFactory(t, t.Context(), tf)
			syncFactory(t, t.Context(), ef)
			tlog.waitFor(t, "add a/web", "add b/db")
			elog.waitFor(t, "add a/web", "add b/db")

			// A status update (the spec's bytes unchanged), a new Pod, a
			// delete.
			web := richPod("a", "web", "node-1")
			web.Status.Phase = corev1.PodRunning
			if err := srv.Update(web); err != nil {
				t.Fatal(err)
			}
			create(t, srv, richPod("a", "api", "node-3"))
			if err := srv.Delete(richPod("b", "db", "")); err != nil {
				t.Fatal(err)
			}
			for _, l := range []interface{ waitFor(testing.TB, ...string) }{tlog, elog} {
				l.waitFor(t, "update a/web", "add a/api", "delete b/db")
			}
			want := sortedByKey(typed.GetIndexer().List())
			got := sortedByKey(erased.GetIndexer().List())
			if diff := cmp.Diff(toObjectsOf(want), got); diff != "" {
				t.Errorf("caches (-For +ForType):\n%s", diff)
			}
			for _, obj := range got {
				if _, ok := obj.(*corev1.Pod); !ok {
					t.Errorf("cached a %T", obj)
				}
			}
			select {
			case shared := <-sharedSpec:
				// Package wire shares it (a compact store too, when its
				// codec holds the old object decoded: not checked here).
				if want := tc.opts.Decoding == DecodeWire; shared != want && !tc.opts.Informer.Compact {
					t.Errorf("the update shares the spec with its old object: %v, want %v", shared, want)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no update came to the second handler")
			}
			for _, r := range resourceRequests(srv, "/pods") {
				if !strings.HasPrefix(r.Accept, runtime.ContentTypeProtobuf) {
					t.Errorf("request %s?%s: Accept %q; want protobuf", r.Path, r.Query.Encode(), r.Accept)
				}
			}
		})
	}
}

// A relist after a 410 reuses ForType's cached objects whose bytes did not
// change, as For's does: the relist's updates have one object as old and
// new.
func TestForTypeRelistReusesCachedObjects(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	create(t, srv, factoryPod("a", "web", "node-1"), factoryPod("b", "db", "node-1"))
	f := newTestFactory(t, srv, FactoryOptions{Informer: InformerOptions{Reflector: ReflectorOptions{WatchList: WatchListOff}}})
	watched := make(chan int, 8)
	inf, err := ForType(t.Context(), f, podType, ForOptions[Object]{WrapListWatch: expireFirstWatch[Object](watched)})
	if err != nil {
		t.Fatal(err)
	}
	updated := make(chan bool, 2)
	if _, err := inf.AddEventHandler(ResourceEventHandlerFuncs[Object]{UpdateFunc: func(old, obj Object) { updated <- old == obj }}); err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	if <-watched != 1 || <-watched != 2 {
		t.Fatal("watches out of order")
	}
	for range 2 {
		select {
		case same := <-updated:
			if !same {
				t.Error("a relist's update with another object; want the cached one reused")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the relist's updates did not come")
		}
	}
}

// ForType refuses what is not a pointer to a struct implementing T; its
// informer and For's of one type are one informer of the factory, which
// the other Go type cannot join; ForType of the type itself is For.
func TestForTypeErrors(t *testing.T) {
	srv := newFakeAPI(t, podsResource, configMapsResource)
	f := newTestFactory(t, srv, FactoryOptions{})
	for name, typ := range map[string]reflect.Type{
		"nil":              nil,
		"a struct":         reflect.TypeFor[corev1.Pod](),
		"not an Object":    reflect.TypeFor[*corev1.PodSpec](),
		"a pointer to int": reflect.TypeFor[*int](),
	} {
		if _, err := ForType[Object](t.Context(), f, typ); !errors.Is(err, ErrNotRegistered) {
			t.Errorf("%s: %v, want ErrNotRegistered", name, err)
		}
	}
	if _, err := ForType[*corev1.Pod](t.Context(), f, reflect.TypeFor[*corev1.ConfigMap]()); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("ForType[*corev1.Pod] of ConfigMaps: %v, want ErrNotRegistered", err)
	}
	if _, err := ForType[Object](t.Context(), f, podType); err != nil {
		t.Fatal(err)
	}
	if _, err := For[*corev1.Pod](f); !errors.Is(err, ErrOptionsConflict) {
		t.Errorf("For after ForType: %v, want ErrOptionsConflict", err)
	}
	cms, err := For[*corev1.ConfigMap](f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ForType[Object](t.Context(), f, reflect.TypeFor[*corev1.ConfigMap]()); !errors.Is(err, ErrOptionsConflict) {
		t.Errorf("ForType after For: %v, want ErrOptionsConflict", err)
	}
	if same, err := ForType[*corev1.ConfigMap](t.Context(), f, reflect.TypeFor[*corev1.ConfigMap]()); err != nil || same != cms {
		t.Errorf("ForType of T itself: %p, %v; want For's %p", same, err, cms)
	}
}

// In a factory made by NewFactoryForClients, ForType lists and watches
// through the type's typed client, as For does.
func TestForTypeClients(t *testing.T) {
	cs, f := clientsFactory(t, richPod("a", "web", "node-1"))
	pods, err := ForType[Object](t.Context(), f, podType)
	if err != nil {
		t.Fatal(err)
	}
	started := watchStarted(cs, "pods")
	log := addLog(t, pods)
	moved := make(chan struct{})
	var once sync.Once
	if _, err := pods.AddEventHandler(ResourceEventHandlerFuncs[Object]{UpdateFunc: func(_, obj Object) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName == "node-9" {
			once.Do(func() { close(moved) })
		}
	}}); err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	<-started
	log.waitFor(t, "add a/web")
	if _, err := cs.CoreV1().Pods("a").Update(t.Context(), richPod("a", "web", "node-9"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-moved:
	case <-time.After(30 * time.Second):
		t.Fatal("no update of a/web to node-9 came")
	}
	got, exists := pods.GetIndexer().GetByKey("a/web")
	if p, ok := got.(*corev1.Pod); !exists || !ok || p.Spec.NodeName != "node-9" {
		t.Errorf("a/web = %v, %v; want a *corev1.Pod on node-9", got, exists)
	}
}

// ForUnstructuredAs and ForMetadataAs cache what ForUnstructured and
// ForMetadata do (a factory of each over one server, caches compared),
// handed out as Object; each is the factory's informer of its resource and
// flavor, which the other Go type cannot join; a T the objects do not
// implement is refused. With decoded and compact stores.
func TestForUnstructuredAndMetadataAs(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compact %v", compact), func(t *testing.T) {
			checkUnstructuredAndMetadataAs(t, FactoryOptions{Informer: InformerOptions{Compact: compact}})
		})
	}
}

func checkUnstructuredAndMetadataAs(t *testing.T, opts FactoryOptions) {
	srv := newFakeAPI(t, podsResource)
	create(t, srv, factoryPod("a", "web", "node-1"), factoryPod("b", "db", "node-2"))
	tf, ef := newTestFactory(t, srv, opts), newTestFactory(t, srv, opts)
	u, err := ForUnstructured(tf, podsGVR)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ForMetadata(tf, podsGVR)
	if err != nil {
		t.Fatal(err)
	}
	eu, err := ForUnstructuredAs[Object](ef, podsGVR)
	if err != nil {
		t.Fatal(err)
	}
	em, err := ForMetadataAs[Object](ef, podsGVR)
	if err != nil {
		t.Fatal(err)
	}
	if eu.Name() != "v1/pods (unstructured)" || em.Name() != "v1/pods (metadata)" {
		t.Errorf("names %q, %q", eu.Name(), em.Name())
	}
	if _, err := ForUnstructured(ef, podsGVR); !errors.Is(err, ErrOptionsConflict) {
		t.Errorf("ForUnstructured after ForUnstructuredAs: %v, want ErrOptionsConflict", err)
	}
	if _, err := ForMetadataAs[Object](tf, podsGVR); !errors.Is(err, ErrOptionsConflict) {
		t.Errorf("ForMetadataAs after ForMetadata: %v, want ErrOptionsConflict", err)
	}
	if _, err := ForMetadataAs[*corev1.Pod](ef, podsGVR); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("ForMetadataAs[*corev1.Pod]: %v, want ErrNotRegistered", err)
	}
	if _, err := ForUnstructuredAs[*metav1.PartialObjectMetadata](ef, podsGVR); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("ForUnstructuredAs[*metav1.PartialObjectMetadata]: %v, want ErrNotRegistered", err)
	}
	logs := []interface{ waitFor(testing.TB, ...string) }{addLog(t, u), addLog(t, m), addLog(t, eu), addLog(t, em)}
	syncFactory(t, t.Context(), tf)
	syncFactory(t, t.Context(), ef)
	create(t, srv, factoryPod("a", "api", "node-3"))
	if err := srv.Delete(factoryPod("b", "db", "")); err != nil {
		t.Fatal(err)
	}
	for _, l := range logs {
		l.waitFor(t, "add a/web", "add b/db", "add a/api", "delete b/db")
	}
	for _, c := range []struct {
		name      string
		want, got []Object
		typ       reflect.Type
	}{
		{"unstructured", toObjectsOf(u.GetIndexer().List()), eu.GetIndexer().List(), reflect.TypeFor[*unstructured.Unstructured]()},
		{"metadata", toObjectsOf(m.GetIndexer().List()), em.GetIndexer().List(), reflect.TypeFor[*metav1.PartialObjectMetadata]()},
	} {
		if diff := cmp.Diff(sortedByKey(c.want), sortedByKey(c.got)); diff != "" {
			t.Errorf("%s caches (-typed +As):\n%s", c.name, diff)
		}
		for _, obj := range c.got {
			if reflect.TypeOf(obj) != c.typ {
				t.Errorf("%s: cached a %T", c.name, obj)
			}
		}
	}
}

// toObjectsOf returns objs as Objects.
func toObjectsOf[T Object](objs []T) []Object {
	out := make([]Object, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}
