package informer

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/wire"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
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
	cs := fake.NewClientset(richPod("a", "web", "node-1"))
	f, err := NewFactoryForClients(FactoryClients{Kube: cs}, FactoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
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
