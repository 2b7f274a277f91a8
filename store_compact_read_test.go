package informer

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/internal/testobj"
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
