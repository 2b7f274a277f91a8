package informer

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/internal/testobj"
	"github.com/typedkube/informer/wire"
	corev1 "k8s.io/api/core/v1"
)

// An object read from a compact store stays as it was read after its
// record is replaced or deleted and the garbage collector has run: the
// strings of a decoded object are made over its record's memory, which
// they keep alive.
func TestCompactReadOutlivesRecord(t *testing.T) {
	x, codec := newCompactIndexer(t, Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]}, 0)
	const n = 60
	pods := testobj.BenchPods(n, 3)
	if err := x.replaceEncoded(listedRecords(t, codec, pods), false); err != nil {
		t.Fatal(err)
	}
	lister := Lister[*corev1.Pod]{indexer: x, resource: corev1.Resource("pods")}
	read := make([]*corev1.Pod, n)
	wants := make([]*corev1.Pod, n)
	for i, p := range pods {
		got, err := lister.ByNamespace(p.Namespace).Get(p.Name)
		if err != nil {
			t.Fatal(err)
		}
		read[i], wants[i] = got, got.DeepCopy()
	}
	// A third updated, a third deleted, then a relist that replaces every
	// record: none of those read is stored any more.
	for i, p := range pods {
		switch i % 3 {
		case 0:
			q := p.DeepCopy()
			q.ResourceVersion += "0"
			q.Spec.Containers[0].Image = fmt.Sprintf("registry.example.com/other:%d", i)
			if err := x.Update(q); err != nil {
				t.Fatal(err)
			}
		case 1:
			if err := x.Delete(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	relisted := testobj.BenchPods(2*n, 3)
	for _, p := range relisted {
		p.ResourceVersion += "1"
		p.Status.PodIP = "10.255.255.255"
	}
	if err := x.replaceEncoded(listedRecords(t, codec, relisted), false); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	// Reads that decode the new records, in the buffers the first reads
	// used, into memory the collector freed.
	for _, p := range relisted {
		if _, err := lister.ByNamespace(p.Namespace).Get(p.Name); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	for i := range read {
		if diff := cmp.Diff(wants[i], read[i]); diff != "" {
			t.Fatalf("Pod %d changed after its record left the store (-read +now):\n%s", i, diff)
		}
	}
}

// A compact store decodes each listed record its index functions need, and
// keeps none of those objects with the list: a list of thousands held
// every one of them until the last record was stored (issue 37's operator:
// a field index on a compact store's 5,000 Pods added a quarter to the
// live heap of its start).
func TestCompactReplaceKeepsNoDecodedObjects(t *testing.T) {
	byNode := func(p *corev1.Pod) ([]string, error) { return []string{p.Spec.NodeName}, nil }
	x, codec := newCompactIndexer(t, Indexers[*corev1.Pod]{"node": byNode}, 0)
	pods := testobj.BenchPods(40, 4)
	for i, p := range pods {
		p.Spec.NodeName = fmt.Sprint("node-", i%4)
	}
	list := listedRecords(t, codec, pods)
	if err := x.replaceEncoded(list, false); err != nil {
		t.Fatal(err)
	}
	for i, e := range list.items {
		if e.decoded || e.obj != nil {
			t.Errorf("item %d (%s) still holds its decoded object", i, e.key)
		}
	}
	got, err := x.ByIndex("node", "node-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 {
		t.Errorf("node-1 has %d Pods, want 10", len(got))
	}
}

// GetByKeyOwned gives a compact store's reader an object of its own when
// the codec holds none decoded: equal to what GetByKey gives, sharing no
// map, slice or pointer with the objects GetByKey shares them between,
// and not kept by the codec; when the codec holds the object decoded, and
// always in a store that is not compact, the cached object, not owned.
func TestStoreGetByKeyOwned(t *testing.T) {
	pods := testobj.RealisticPods("shop", 8, 3)
	x, codec := newCompactIndexer(t, nil, wire.DecodedCacheSize)
	if err := x.replaceEncoded(listedRecords(t, codec, pods), false); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i], _ = MetaNamespaceKeyFunc(p)
	}
	// The first three read as GetByKey reads them: decoded, kept, sharing
	// maps and managedFields between siblings.
	var read []*corev1.Pod
	for _, k := range keys[:3] {
		p, ok := x.GetByKey(k)
		if !ok {
			t.Fatalf("%s: not found", k)
		}
		read = append(read, p)
	}
	if len(testobj.SharedRefs(read[0], read[1])) == 0 {
		t.Fatal("two siblings read with GetByKey share nothing: the test shows nothing")
	}
	cached := codec.Cached()
	var owned []*corev1.Pod
	for i, k := range keys[3:] {
		p, own, ok := x.GetByKeyOwned(k)
		if !ok || !own {
			t.Fatalf("%s, never read: exists %v, owned %v", k, ok, own)
		}
		if diff := cmp.Diff(pods[3+i], p); diff != "" {
			t.Fatalf("%s reads otherwise (-listed +owned):\n%s", k, diff)
		}
		for _, q := range append(read, owned...) {
			if s := testobj.SharedRefs(p, q); len(s) > 0 {
				t.Fatalf("%s: the owned object shares %v with another", k, s)
			}
		}
		owned = append(owned, p)
	}
	if codec.Cached() != cached {
		t.Errorf("%d objects cached after GetByKeyOwned, want %d", codec.Cached(), cached)
	}
	for _, p := range owned {
		p.Labels["written"] = "yes"
		p.ManagedFields[0].FieldsV1.GetRawBytes()[0] = '!' // the bytes the object holds
	}
	for i, k := range keys {
		p, ok := x.GetByKey(k)
		if !ok {
			t.Fatalf("%s: not found", k)
		}
		if diff := cmp.Diff(pods[i], p); diff != "" {
			t.Fatalf("after the owners' writes, %s reads otherwise (-listed +got):\n%s", k, diff)
		}
	}
	if p, own, ok := x.GetByKeyOwned(keys[0]); !ok || own || p != read[0] {
		t.Errorf("%s, held decoded: %p owned %v exists %v; want %p, not owned", keys[0], p, own, ok, read[0])
	}
	if _, own, ok := x.GetByKeyOwned("shop/none"); ok || own {
		t.Errorf("a missing key: exists %v, owned %v", ok, own)
	}

	plain := NewStore(MetaNamespaceKeyFunc[*corev1.Pod])
	if err := plain.Add(pods[0]); err != nil {
		t.Fatal(err)
	}
	if p, own, ok := plain.GetByKeyOwned(keys[0]); !ok || own || p != pods[0] {
		t.Errorf("a plain store: %p owned %v exists %v; want %p, not owned", p, own, ok, pods[0])
	}
}
