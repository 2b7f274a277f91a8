package informer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/typedkube/informer/internal/testobj"
	"github.com/typedkube/informer/wire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// compactCodec returns the codec of a compact informer's store.
func compactCodec[T Object](t testing.TB, inf *SharedIndexInformer[T]) *wire.Compact[T] {
	t.Helper()
	c := inf.GetIndexer().compact
	if c == nil {
		t.Fatal("the informer's store is not compact")
	}
	return c.codec
}

// TestFactoryCompact: a compact informer of the factory makes records of
// the Pods' protobuf, streamed (a watch-list stream's initial events) or
// listed, without decoding one, reads them back equal to what a decoding
// informer caches, and serves listers, label selectors, handlers with old
// and new objects, and tombstones.
func TestFactoryCompact(t *testing.T) {
	listed := InformerOptions{Compact: true, Reflector: ReflectorOptions{WatchList: WatchListOff}}
	for _, tc := range []struct {
		name    string
		factory FactoryOptions
		forOpts ForOptions[*corev1.Pod]
		// wantQuery is in the query of the request that gets the initial
		// state.
		wantQuery string
	}{
		{"ForOptions", FactoryOptions{}, ForOptions[*corev1.Pod]{Compact: true}, "sendInitialEvents=true"},
		{"FactoryOptions", FactoryOptions{Informer: InformerOptions{Compact: true}}, ForOptions[*corev1.Pod]{}, "sendInitialEvents=true"},
		// An informer of several namespaces lists each.
		{"namespaces", FactoryOptions{Namespaces: []string{"a", "b"}}, ForOptions[*corev1.Pod]{Compact: true}, "resourceVersion=0"},
		{"list", FactoryOptions{Informer: listed}, ForOptions[*corev1.Pod]{}, "resourceVersion=0"},
		{"WatchListOn", FactoryOptions{Informer: InformerOptions{Reflector: ReflectorOptions{WatchList: WatchListOn}}}, ForOptions[*corev1.Pod]{Compact: true}, "sendInitialEvents=true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeAPI(t, podsResource)
			create(t, srv, richPod("a", "web", "node-1"), richPod("b", "db", "node-2"), richPod("a", "api", "node-1"))
			ref := newTestFactory(t, srv, FactoryOptions{})
			f := newTestFactory(t, srv, tc.factory)
			want, err := For[*corev1.Pod](ref)
			if err != nil {
				t.Fatal(err)
			}
			pods, err := For[*corev1.Pod](f, tc.forOpts)
			if err != nil {
				t.Fatal(err)
			}
			syncFactory(t, t.Context(), ref)
			syncFactory(t, t.Context(), f)
			codec := compactCodec(t, pods)
			if n := codec.Cached(); n != 0 {
				t.Errorf("%d objects decoded by a sync without handlers or reads, want 0", n)
			}
			if reqs := resourceRequests(srv, "/pods"); len(reqs) < 2 || !strings.Contains(reqs[1].Query.Encode(), tc.wantQuery) {
				// The reference informer's stream is the first request.
				t.Errorf("requests %+v, want the compact informer's first with %s in its query", reqs, tc.wantQuery)
			}
			if ok, bytes := pods.GetIndexer().Compact(); !ok || bytes <= 0 {
				t.Errorf("Compact() = %v, %d", ok, bytes)
			}
			if d := cmp.Diff(sortedPods(want.GetIndexer().List()), sortedPods(pods.GetIndexer().List())); d != "" {
				t.Errorf("cache differs from a decoding informer's (-decoded +compact):\n%s", d)
			}
			sel := labels.SelectorFromSet(labels.Set{"app": "web"})
			got, err := pods.Lister().List(sel)
			if err != nil || len(got) != 1 || got[0].Name != "web" {
				t.Errorf("List(app=web) = %v, %v", got, err)
			}
			byNS, err := pods.Lister().ByNamespace("a").List(labels.Everything())
			if err != nil || len(byNS) != 2 {
				t.Errorf("ByNamespace(a).List = %v, %v", byNS, err)
			}

			log := addLog(t, pods)
			log.waitFor(t, "add a/web", "add b/db", "add a/api")
			updates, deletes := make(chan string, 10), make(chan string, 10)
			if _, err := pods.AddEventHandler(ResourceEventHandlerFuncs[*corev1.Pod]{
				UpdateFunc: func(old, new *corev1.Pod) { updates <- old.Spec.NodeName + "->" + new.Spec.NodeName },
				// The server's DELETED event carries the object deleted: its
				// nodeName is empty.
				DeleteFunc: func(d DeletedObject[*corev1.Pod]) { deletes <- d.Key + " " + d.Obj.Name },
			}); err != nil {
				t.Fatal(err)
			}
			if err := srv.Update(richPod("a", "web", "node-3")); err != nil {
				t.Fatal(err)
			}
			if err := srv.Delete(factoryPod("b", "db", "")); err != nil {
				t.Fatal(err)
			}
			if got, want := receive(t, updates, "the update"), "node-1->node-3"; got != want {
				t.Errorf("update %q, want %q", got, want)
			}
			if got, want := receive(t, deletes, "the delete"), "b/db db"; got != want {
				t.Errorf("delete %q, want %q", got, want)
			}
			got1, err := pods.Lister().ByNamespace("a").Get("web")
			if err != nil || got1.Spec.NodeName != "node-3" || got1.ManagedFields == nil {
				t.Errorf("Get(a/web) = %v, %v; want node-3 with managedFields", got1, err)
			}
			if got2, _ := pods.Lister().ByNamespace("a").Get("web"); got2 != got1 {
				t.Error("two Gets of one version give two objects")
			}
		})
	}
}

// A compact informer is shared like any: a later call without Compact gets
// it; one asking for Compact from a decoding informer is a conflict;
// ForProjection refuses Compact.
func TestFactoryCompactOptions(t *testing.T) {
	srv := newFakeAPI(t, podsResource, configMapsResource)
	f := newTestFactory(t, srv, FactoryOptions{})
	pods, err := For[*corev1.Pod](f, ForOptions[*corev1.Pod]{Compact: true})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := For[*corev1.Pod](f); err != nil || again != pods {
		t.Errorf("For without Compact = %p, %v; want the compact informer %p", again, err, pods)
	}
	if _, err := For[*corev1.ConfigMap](f); err != nil {
		t.Fatal(err)
	}
	if _, err := For[*corev1.ConfigMap](f, ForOptions[*corev1.ConfigMap]{Compact: true}); !errors.Is(err, ErrOptionsConflict) {
		t.Errorf("Compact on a decoding informer: %v, want ErrOptionsConflict", err)
	}
	if _, err := ForProjection[podSlim, corev1.Pod](f, ForOptions[*podSlim]{Compact: true}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("ForProjection with Compact: %v, want ErrInvalidOptions", err)
	}
	g := newTestFactory(t, srv, FactoryOptions{Informer: InformerOptions{Compact: true}})
	slim, err := ForProjection[podSlim, corev1.Pod](g)
	if err != nil {
		t.Fatal(err)
	}
	if slim.GetIndexer().compact != nil {
		t.Error("a projection's store is compact")
	}
}

// A compact informer of unstructured objects keeps them in JSON.
func TestFactoryCompactUnstructured(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	create(t, srv, richPod("a", "web", "node-1"), richPod("b", "db", "node-2"))
	f := newTestFactory(t, srv, FactoryOptions{Informer: InformerOptions{Compact: true}})
	ref := newTestFactory(t, srv, FactoryOptions{})
	pods, err := ForUnstructured(f, podsGVR)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ForUnstructured(ref, podsGVR)
	if err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	syncFactory(t, t.Context(), ref)
	compactCodec(t, pods)
	sorted := func(us []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
		m := map[string]*unstructured.Unstructured{}
		for _, u := range us {
			m[u.GetNamespace()+"/"+u.GetName()] = u
		}
		return m
	}
	if d := cmp.Diff(sorted(want.GetIndexer().List()), sorted(pods.GetIndexer().List())); d != "" {
		t.Errorf("cache differs from a decoding informer's (-decoded +compact):\n%s", d)
	}
	u, err := pods.Lister().ByNamespace("a").Get("web")
	if err != nil || u.GetLabels()["app"] != "web" {
		t.Errorf("Get(a/web) = %v, %v", u, err)
	}
}

// receive returns the next value of ch, or fails the test after 30 seconds
// saying it waited for what.
func receive[V any](t testing.TB, ch <-chan V, what string) V {
	t.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	select {
	case v := <-ch:
		return v
	case <-timeout.C:
		t.Fatalf("waited 30s for %s", what)
		panic("unreachable")
	}
}

// filterWeb is a WrapListWatch that drops the Pods called web from its
// lists, as a sharded informer drops other members' objects: it reads the
// objects of each page, so a compact informer lists decoded objects for
// it. Its watch is lw's (the test writes no web Pod once it watches).
func filterWeb(lw ListerWatcher[*corev1.Pod]) ListerWatcher[*corev1.Pod] {
	return ListWatchFuncs[*corev1.Pod]{
		ListFunc: func(ctx context.Context, opts metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
			page, err := lw.List(ctx, opts)
			if err != nil {
				return nil, err
			}
			out := &ListPage[*corev1.Pod]{ListMeta: page.ListMeta}
			for _, p := range page.Items {
				if p.Name != "web" {
					out.Items = append(out.Items, p)
				}
			}
			return out, nil
		},
		WatchFunc: lw.Watch,
	}
}

// A compact informer with a WrapListWatch that reads objects gets objects
// to read, and keeps them compact.
func TestFactoryCompactWrapListWatch(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	create(t, srv, richPod("a", "web", "node-1"), richPod("a", "db", "node-2"))
	f := newTestFactory(t, srv, FactoryOptions{Informer: InformerOptions{Reflector: ReflectorOptions{WatchList: WatchListOff}}})
	pods, err := For[*corev1.Pod](f, ForOptions[*corev1.Pod]{Compact: true, WrapListWatch: filterWeb})
	if err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	compactCodec(t, pods)
	if got := podsString(pods.GetIndexer().List()); !strings.HasPrefix(got, "a/db@") || strings.Contains(got, "web") {
		t.Errorf("cache %s, want a/db only", got)
	}
	create(t, srv, richPod("a", "api", "node-1"))
	log := addLog(t, pods)
	log.waitFor(t, "add a/db", "add a/api")
}

// A transform set with SetTransform after For, before Start, is honoured
// by a compact informer as one given to For: the source lists objects
// decoded for it, which share no maps (two Pods with equal labels would
// otherwise share one map, and the transform, editing one in place, would
// change the other), and the cache holds its output, encoded.
func TestFactoryCompactSetTransformAfterFor(t *testing.T) {
	pod := func(ns, name string) *corev1.Pod {
		p := richPod(ns, name, "node-1")
		p.Labels = map[string]string{"app": "same"}
		return p
	}
	srv := newFakeAPI(t, podsResource)
	create(t, srv, pod("a", "web"), pod("b", "db"))
	f := newTestFactory(t, srv, FactoryOptions{Informer: InformerOptions{Reflector: ReflectorOptions{WatchList: WatchListOff}}})
	pods, err := For[*corev1.Pod](f, ForOptions[*corev1.Pod]{Compact: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := pods.SetTransform(func(p *corev1.Pod) (*corev1.Pod, error) {
		p.Labels["name"] = p.Name
		return p, nil
	}); err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	compactCodec(t, pods)
	for _, key := range []string{"a/web", "b/db"} {
		p, ok := pods.GetIndexer().GetByKey(key)
		if !ok {
			t.Fatalf("%s is not cached", key)
		}
		if p.Labels["name"] != p.Name {
			t.Errorf("%s has the labels %v, want name=%s: the transform of another object changed its labels", key, p.Labels, p.Name)
		}
	}
}

// staleCompactPods returns a compact informer of a/web and b/db, synced and
// stopped, whose cache has not seen a/web's later update on the server.
func staleCompactPods(t *testing.T) *SharedIndexInformer[*corev1.Pod] {
	t.Helper()
	srv := newFakeAPI(t, podsResource)
	create(t, srv, richPod("a", "web", "node-1"), richPod("b", "db", "node-2"))
	f := newTestFactory(t, srv, FactoryOptions{})
	pods, err := For[*corev1.Pod](f, ForOptions[*corev1.Pod]{Compact: true})
	if err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	f.Shutdown() // the cache stays as it is: the update below is not watched
	if err := srv.Update(richPod("a", "web", "node-3")); err != nil {
		t.Fatal(err)
	}
	return pods
}

// A compact informer's relist reuses the cached record of every object
// whose resourceVersion, read from the listed bytes, has not changed, and
// makes a new one for an object that changed.
func TestFactoryCompactRelistReusesRecords(t *testing.T) {
	pods := staleCompactPods(t)
	page, err := pods.lw.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 0 || len(page.encoded.items) != 2 {
		t.Fatalf("the relist has %d objects and %d records, want 0 and 2", len(page.Items), len(page.encoded.items))
	}
	for _, e := range page.encoded.items {
		cached := pods.GetIndexer().recordOf(e.key)
		if reused := e.rec == cached; reused != (e.key == "b/db") {
			t.Errorf("%s: the listed record is the cached one: %v, want %v", e.key, reused, e.key == "b/db")
		}
	}
}

// A compact informer's watch-list stream, asked for again (as the Reflector
// does after a failed watch), brings its initial objects as records: the
// cached record of every object whose resourceVersion has not changed, a new
// one for an object that changed, each with its labels.
func TestFactoryCompactStreamReusesRecords(t *testing.T) {
	pods := staleCompactPods(t)
	yes := true
	w, err := pods.lw.Watch(t.Context(), metav1.ListOptions{SendInitialEvents: &yes, AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var recs []*streamedRecord[*corev1.Pod]
	for ev := range w.ResultChan() {
		if ev.Type == watch.Bookmark {
			break
		}
		r, ok := ev.Object.(*streamedRecord[*corev1.Pod])
		if !ok || ev.Type != watch.Added {
			t.Fatalf("initial event %s of %T, want ADDED of a streamed record", ev.Type, ev.Object)
		}
		recs = append(recs, r)
	}
	if len(recs) != 2 {
		t.Fatalf("%d initial records, want 2", len(recs))
	}
	for _, r := range recs {
		cached := pods.GetIndexer().recordOf(r.e.key)
		if reused := r.e.rec == cached; reused != (r.e.key == "b/db") {
			t.Errorf("%s: the streamed record is the cached one: %v, want %v", r.e.key, reused, r.e.key == "b/db")
		}
		obj, err := r.codec.Decode(r.e.rec)
		if err != nil {
			t.Fatal(err)
		}
		if r.e.key == "a/web" && (len(obj.Labels) == 0 || !cmp.Equal(r.e.labels, obj.Labels)) {
			t.Errorf("%s: labels %v read from its bytes, the object's %v", r.e.key, r.e.labels, obj.Labels)
		}
		if k := obj.Namespace + "/" + obj.Name; k != r.e.key {
			t.Errorf("the record keyed %s holds %s", r.e.key, k)
		}
	}
}

// A compact informer whose decoder leaves managedFields and annotations
// out (FactoryOptions.Wire) keeps records of listed objects without them,
// as of watched ones: its store holds what a read returns, whichever way
// an object last arrived, and the option saves what it saves a decoding
// informer.
func TestFactoryCompactListedRecordsTrimmed(t *testing.T) {
	const n = 200
	fields := `{"f:data":{` + strings.Repeat(`"f:key-0000000000":{},`, 90) + `"f:last":{}}}`
	cm := func(i, rv int) *corev1.ConfigMap {
		name := fmt.Sprintf("cm-%03d", i)
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: strconv.Itoa(rv),
				Annotations: map[string]string{"example.com/keep": "yes", "drop.example.org/big": strings.Repeat("d", 200)},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "writer-" + name, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
					FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(strings.ReplaceAll(fields, "0000000000", name+"-x"))}}},
			Data: map[string]string{"k": name},
		}
	}
	keep := func(k string) bool { return strings.HasPrefix(k, "example.com/") }
	bytesOf := func(opts wire.Options, watched bool) int64 {
		t.Helper()
		srv := newFakeAPI(t, configMapsResource)
		for i := range n {
			create(t, srv, cm(i, 0))
		}
		f := newTestFactory(t, srv, FactoryOptions{Wire: opts})
		cms, err := For[*corev1.ConfigMap](f, ForOptions[*corev1.ConfigMap]{Compact: true})
		if err != nil {
			t.Fatal(err)
		}
		syncFactory(t, t.Context(), f)
		if watched {
			for i := range n {
				if err := srv.Update(cm(i, 0)); err != nil {
					t.Fatal(err)
				}
			}
			waitUntil(t, "every update applied", func() bool {
				for _, c := range cms.GetIndexer().List() {
					if rv, _ := strconv.Atoi(c.ResourceVersion); rv <= n {
						return false
					}
				}
				return true
			})
		}
		for _, c := range cms.GetIndexer().List() {
			if opts.DropManagedFields && len(c.ManagedFields) > 0 {
				t.Fatalf("%s read with managedFields", c.Name)
			}
			if opts.Annotations != nil && len(c.Annotations) != 1 {
				t.Fatalf("%s read with annotations %v", c.Name, c.Annotations)
			}
		}
		_, b := cms.GetIndexer().Compact()
		return b
	}
	whole := bytesOf(wire.Options{}, false)
	for _, opts := range []wire.Options{{DropManagedFields: true}, {DropManagedFields: true, Annotations: keep}} {
		listed, watched := bytesOf(opts, false), bytesOf(opts, true)
		t.Logf("DropManagedFields, annotations filtered %v: %d B of records listed, %d B watched, %d B without the options", opts.Annotations != nil, listed, watched, whole)
		if listed > watched*11/10 || watched > listed*11/10 {
			t.Errorf("records of listed objects hold %d B, of the same objects watched %d B", listed, watched)
		}
		if listed > whole/2 {
			t.Errorf("records of listed objects hold %d B without managedFields, %d B with", listed, whole)
		}
	}
}

// A compact informer makes the records of objects that come by watch events
// of the events' bytes (wire.Compact.Offer) rather than by encoding the
// decoded objects again: with DropManagedFields and an annotations filter,
// each record is the encoding of the object read from it, which is the
// server's less what the options leave out. With a transform, which may
// change the objects, they are encoded.
func TestFactoryCompactWatchedRecordsOfEventBytes(t *testing.T) {
	const n = 40
	keep := func(k string) bool { return k != "drop.example.org/big" }
	for _, transform := range []bool{false, true} {
		t.Run(fmt.Sprintf("transform=%v", transform), func(t *testing.T) {
			srv := newFakeAPI(t, podsResource)
			src := testobj.RealisticPods("ns", n, 2)
			for _, p := range src {
				p.Annotations["drop.example.org/big"] = strings.Repeat("d", 300)
				create(t, srv, p)
			}
			f := newTestFactory(t, srv, FactoryOptions{Wire: wire.Options{DropManagedFields: true, Annotations: keep}})
			pods, err := For[*corev1.Pod](f, ForOptions[*corev1.Pod]{Compact: true})
			if err != nil {
				t.Fatal(err)
			}
			if transform {
				if err := pods.SetTransform(func(p *corev1.Pod) (*corev1.Pod, error) { return p, nil }); err != nil {
					t.Fatal(err)
				}
			}
			syncFactory(t, t.Context(), f)
			for _, p := range src {
				p.Labels["rev"] = "2"
				if err := srv.Update(p); err != nil {
					t.Fatal(err)
				}
			}
			waitUntil(t, "every update applied", func() bool {
				for _, p := range pods.GetIndexer().List() {
					if p.Labels["rev"] != "2" {
						return false
					}
				}
				return len(pods.GetIndexer().List()) == n
			})
			codec := pods.GetIndexer().compact.codec
			want := int64(n)
			if transform {
				want = 0
			}
			if got := codec.OfferedRecords(); got != want {
				t.Errorf("%d records made of event bytes, want %d", got, want)
			}
			for _, p := range src {
				key := p.Namespace + "/" + p.Name
				got, ok := pods.GetIndexer().GetByKey(key)
				if !ok {
					t.Fatalf("%s is not in the store", key)
				}
				w := p.DeepCopy()
				w.ManagedFields, w.ResourceVersion = nil, got.ResourceVersion // the server's
				delete(w.Annotations, "drop.example.org/big")
				if diff := cmp.Diff(w, got, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("%s read otherwise than the server's (-want +got):\n%s", key, diff)
				}
				enc, err := got.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				if rec := pods.GetIndexer().recordOf(key).AppendTo(nil); !bytes.Equal(rec, enc) {
					t.Fatalf("%s: its record is not the encoding of the object read from it", key)
				}
			}
		})
	}
}
