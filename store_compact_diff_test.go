package informer

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/typedkube/informer/wire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// newCompactIndexer returns an Indexer of Pods that keeps them as records of
// a codec caching cached decoded objects, with indexers.
func newCompactIndexer(t testing.TB, indexers Indexers[*corev1.Pod], cached int) (*Indexer[*corev1.Pod], *wire.Compact[*corev1.Pod]) {
	t.Helper()
	codec := wire.NewCompact(podDecoder(), cached)
	x := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], indexers)
	// The namespace index is MetaNamespaceIndexFunc, if any.
	x.setCompact(codec, true)
	return x, codec
}

// podDecoder is the Decoder of Pods the tests share: building one takes
// milliseconds.
var podDecoder = sync.OnceValue(func() *wire.Decoder[*corev1.Pod] {
	dec, err := wire.NewDecoder[*corev1.Pod, *corev1.Pod](wire.Options{})
	if err != nil {
		panic(err)
	}
	return dec
})

// failIndex fails on an object labelled app=fail.
func failIndex(p *corev1.Pod) ([]string, error) {
	if p.Labels["app"] == "fail" {
		return nil, errors.New("a failing index")
	}
	return nil, nil
}

// checkSame compares two values with go-cmp, deeply: a compact store's
// objects are equal to those it was given, not the same.
func checkSame(t testing.TB, step int, what string, compact, plain any) {
	t.Helper()
	if equality.Semantic.DeepEqual(plain, compact) { // the fast test: go-cmp is slow
		return
	}
	if diff := cmp.Diff(plain, compact, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("step %d: %s differs (-plain +compact):\n%s", step, what, diff)
	}
}

// listedRecords returns pods as a compact source lists them: records of
// their protobuf, with their labels read from the bytes.
func listedRecords(t testing.TB, codec *wire.Compact[*corev1.Pod], pods []*corev1.Pod) *encodedList[*corev1.Pod] {
	t.Helper()
	l := &encodedList[*corev1.Pod]{codec: codec}
	for _, p := range pods {
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		rec, err := codec.Protobuf(b)
		if err != nil {
			t.Fatal(err)
		}
		lbls, err := codec.ProtobufLabels(b)
		if err != nil {
			t.Fatal(err)
		}
		key, _ := MetaNamespaceKeyFunc(p)
		l.items = append(l.items, encoded[*corev1.Pod]{key: key, rec: rec, labels: lbls})
	}
	return l
}

// flippedLabels is a LabelsFunc that is not the object's labels: its app
// label is the object's with x and y swapped, and it adds the Pod's name.
func flippedLabels(p *corev1.Pod) map[string]string {
	out := map[string]string{"name": p.Name}
	for k, v := range p.Labels {
		if k == "app" {
			v = map[string]string{"x": "y", "y": "x"}[v]
		}
		out[k] = v
	}
	return out
}

// diffSelectors are the selectors the compact differential test queries:
// equality and set requirements the label index answers, and the others,
// which it tests on each candidate.
var diffSelectors = []string{"", "app=x", "app in (x,y)", "app", "app!=x", "!app", "app=x,tags notin (t1)", "tags=t1,app!=y", "app notin (x)", "name=p1", "name!=p2,app"}

// runCompactDiff applies the operations encoded in data to a compact
// Indexer and to a plain one, and compares every read of theirs under
// go-cmp: a compact store hands out other objects than it was given, equal
// ones. Its codec caches 2 decoded objects, so that reads decode.
func runCompactDiff(t testing.TB, data []byte) {
	r := &opReader{data: data}
	indexers := Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod], "app": appIndex, "fails": failIndex}
	compact, codec := newCompactIndexer(t, indexers, 2)
	plain := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], indexers)
	labelled := false
	indexNames := []string{NamespaceIndex, "app", "tags", "missing"}
	values := []string{"", "ns-a", "ns-b", "x", "y", "t1", "t2", "t3"}
	for step := 0; r.more(); step++ {
		switch op := r.intn(12); op {
		case opAdd, opAdd2, opUpdate, opDelete, opReplace:
			compactWrite(t, step, r, op, compact, plain)
		case 5: // a relist from a compact source: records, kept as they are
			list := r.pods(6)
			checkErr(t, step, "replaceEncoded", compact.replaceEncoded(listedRecords(t, codec, list), true), plain.replace(list, keysOf2(list), true))
		case 6:
			key := r.key()
			got, ok := compact.GetByKey(key)
			want, wantOK := plain.GetByKey(key)
			if ok != wantOK {
				t.Fatalf("step %d: GetByKey(%s) exists %v, plain %v", step, key, ok, wantOK)
			}
			checkSame(t, step, "GetByKey("+key+")", got, want)
		case 7:
			name, value := indexNames[r.intn(len(indexNames))], values[r.intn(len(values))]
			got, err := compact.ByIndex(name, value)
			want, wantErr := plain.ByIndex(name, value)
			checkErr(t, step, "ByIndex", err, wantErr)
			checkSame(t, step, "ByIndex("+name+","+value+")", sortedPods(got), sortedPods(want))
			checkSame(t, step, "ByIndexSeq", sortedPods(seqObjects(compact.ByIndexSeq(name, value))), sortedPods(want))
			p := r.pod()
			got, err = compact.Index(name, p)
			want, wantErr = plain.Index(name, p)
			checkErr(t, step, "Index", err, wantErr)
			checkSame(t, step, "Index("+name+")", sortedPods(got), sortedPods(want))
		case 8:
			var err, wantErr error
			if r.intn(2) == 0 {
				err, wantErr = compact.AddIndexers(Indexers[*corev1.Pod]{"tags": tagsIndex}), plain.AddIndexers(Indexers[*corev1.Pod]{"tags": tagsIndex})
			} else {
				err, wantErr = compact.AddIndexers(Indexers[*corev1.Pod]{"other": appIndex}), plain.AddIndexers(Indexers[*corev1.Pod]{"other": appIndex})
			}
			checkErr(t, step, "AddIndexers", err, wantErr)
		case 9:
			if !labelled {
				labelled = true
				// The informer's own label index, which a compact store
				// answers from its records' bytes; a user's, with
				// MetaLabelsFunc or with labels of the user's making,
				// which it answers from decoded objects.
				var err error
				f := MetaLabelsFunc[*corev1.Pod]
				switch r.intn(3) {
				case 0:
					err = compact.addLabelIndex(f, true)
				case 1:
					err = compact.AddLabelIndex(f)
				case 2:
					f = flippedLabels
					err = compact.AddLabelIndex(f)
				}
				checkErr(t, step, "AddLabelIndex", err, plain.AddLabelIndex(f))
			}
			fallthrough
		case 10:
			sel, err := labels.Parse(diffSelectors[r.intn(len(diffSelectors))])
			if err != nil {
				t.Fatal(err)
			}
			ns := diffNamespaces[r.intn(len(diffNamespaces))]
			compareSelect(t, step, sel, ns, compact, plain)
		case 11: // an index function that fails on some objects
			p := r.pod()
			p.Labels = map[string]string{"app": "fail"}
			checkErr(t, step, "Add failing", compact.Add(p), plain.Add(p))
		}
		compareCompact(t, step, compact, plain)
	}
}

// compactWrite is diffWrite between a compact and a plain Indexer.
func compactWrite(t testing.TB, step int, r *opReader, op int, compact, plain *Indexer[*corev1.Pod]) {
	t.Helper()
	switch op {
	case opAdd, opAdd2:
		p := r.pod()
		checkErr(t, step, "Add", compact.Add(p), plain.Add(p))
	case opUpdate:
		p := r.pod()
		checkErr(t, step, "Update", compact.Update(p), plain.Update(p))
	case opDelete:
		p := r.pod()
		checkErr(t, step, "Delete", compact.Delete(p), plain.Delete(p))
	case opReplace:
		list := r.pods(6)
		checkErr(t, step, "Replace", compact.Replace(list, "rv"), plain.Replace(list, "rv"))
	}
}

func keysOf2(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i], _ = MetaNamespaceKeyFunc(p)
	}
	return out
}

func seqObjects[K any](seq func(yield func(K, *corev1.Pod) bool)) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range seq {
		out = append(out, p)
	}
	return out
}

// compareSelect compares the label queries of the two indexers: BySelector,
// BySelectorSeq, and a Lister's List and Select, in namespace ns and in
// all.
func compareSelect(t testing.TB, step int, sel labels.Selector, ns string, compact, plain *Indexer[*corev1.Pod]) {
	t.Helper()
	what := "selector " + sel.String()
	got, err := compact.BySelector(sel)
	want, wantErr := plain.BySelector(sel)
	checkErr(t, step, what, err, wantErr)
	checkSame(t, step, "BySelector "+what, sortedPods(got), sortedPods(want))
	checkSame(t, step, "BySelectorSeq "+what, sortedPods(seqObjects(compact.BySelectorSeq(sel))), sortedPods(want))
	cl, pl := Lister[*corev1.Pod]{indexer: compact}, Lister[*corev1.Pod]{indexer: plain}
	got, err = cl.ByNamespace(ns).List(sel)
	want, wantErr = pl.ByNamespace(ns).List(sel)
	checkErr(t, step, "Lister "+what, err, wantErr)
	checkSame(t, step, "Lister.ByNamespace("+ns+").List "+what, sortedPods(got), sortedPods(want))
	checkSame(t, step, "Lister.ByNamespace("+ns+").Select "+what, sortedPods(slices.Collect(cl.ByNamespace(ns).Select(sel))), sortedPods(want))
	for _, p := range want {
		g, err := cl.ByNamespace(p.Namespace).Get(p.Name)
		if err != nil {
			t.Fatalf("step %d: Lister.Get(%s/%s): %v", step, p.Namespace, p.Name, err)
		}
		checkSame(t, step, "Lister.Get", g, p)
	}
}

// compareCompact compares the whole visible state of the two indexers.
func compareCompact(t testing.TB, step int, compact, plain *Indexer[*corev1.Pod]) {
	t.Helper()
	checkSame(t, step, "List", sortedPods(compact.List()), sortedPods(plain.List()))
	checkEqual(t, step, "ListKeys", sorted(compact.ListKeys()), sorted(plain.ListKeys()))
	checkSame(t, step, "All", sortedPods(seqObjects(compact.All())), sortedPods(plain.List()))
	if compact.Len() != plain.Len() {
		t.Fatalf("step %d: Len %d, plain %d", step, compact.Len(), plain.Len())
	}
	names := sorted(keysOf(compact.GetIndexers()))
	checkEqual(t, step, "GetIndexers", names, sorted(keysOf(plain.GetIndexers())))
	for _, name := range names {
		vals := sorted(compact.ListIndexFuncValues(name))
		checkEqual(t, step, "ListIndexFuncValues("+name+")", vals, sorted(plain.ListIndexFuncValues(name)))
		for _, v := range vals {
			got, err := compact.IndexKeys(name, v)
			want, wantErr := plain.IndexKeys(name, v)
			checkErr(t, step, "IndexKeys", err, wantErr)
			checkEqual(t, step, "IndexKeys("+name+","+v+")", got, want)
		}
	}
	snap := compact.snapshot()
	slices.SortFunc(snap, func(a, b entry[*corev1.Pod]) int { return strings.Compare(a.key, b.key) })
	for _, e := range snap {
		want, _ := plain.GetByKey(e.key)
		checkSame(t, step, "snapshot "+e.key, e.obj, want)
	}
	ok, bytes := compact.Compact()
	if !ok || (compact.Len() > 0) != (bytes > 0) {
		t.Fatalf("step %d: Compact() = %v, %d with %d objects", step, ok, bytes, compact.Len())
	}
}

func TestCompactDifferential(t *testing.T) {
	runRandomSequences(t, 3000, runCompactDiff)
}

func FuzzCompactDifferential(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 5, 9, 0, 10})
	f.Fuzz(func(t *testing.T, data []byte) { runCompactDiff(t, data) })
}

// A compact store hands out equal objects, with what the encoding keeps:
// its times to the second; in protobuf, whose objects have no TypeMeta,
// the TypeMeta of the objects it was given is kept beside the records.
func TestCompactStoreKeepsWhatTheEncodingHas(t *testing.T) {
	x, _ := newCompactIndexer(t, Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]}, 0)
	now := metav1.Now()
	p := &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "1", CreationTimestamp: now}}
	if err := x.Add(p); err != nil {
		t.Fatal(err)
	}
	got, ok := x.GetByKey("ns/p")
	if !ok {
		t.Fatal("not found")
	}
	want := p.DeepCopy()
	want.CreationTimestamp = metav1.NewTime(now.Truncate(time.Second))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
