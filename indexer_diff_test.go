package informer

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// runIndexerDiff applies the operations encoded in data to an Indexer and to
// client-go's cache.NewIndexer and compares every observable result.
func runIndexerDiff(t testing.TB, data []byte) {
	r := &opReader{data: data}
	typed := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{
		NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod],
		"app":          appIndex,
	})
	upstream := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
		NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"app":          untyped(appIndex),
	})
	indexNames := []string{NamespaceIndex, "app", "tags", "missing"}
	values := []string{"", "ns-a", "ns-b", "x", "y", "t1", "t2", "t3"}
	for step := 0; r.more(); step++ {
		switch op := r.intn(10); op {
		case opAdd, opAdd2, opUpdate, opDelete, opReplace:
			diffWrite(t, step, r, op, typed, upstream)
		case 5:
			p := r.pod()
			got, ok, err := typed.Get(p)
			want, wantOK, wantErr := upstream.Get(p)
			checkErr(t, step, "Get", err, wantErr)
			if ok != wantOK || (ok && got != want.(*corev1.Pod)) {
				t.Fatalf("step %d: Get(%s/%s) = %v,%v; upstream %v,%v", step, p.Namespace, p.Name, got, ok, want, wantOK)
			}
		case 6:
			name, value := indexNames[r.intn(len(indexNames))], values[r.intn(len(values))]
			got, err := typed.ByIndex(name, value)
			want, wantErr := upstream.ByIndex(name, value)
			checkErr(t, step, "ByIndex", err, wantErr)
			checkEqual(t, step, "ByIndex("+name+","+value+")", sortedPods(got), sortedPods(toPods(want)))
			var seq []*corev1.Pod
			for _, p := range typed.ByIndexSeq(name, value) {
				seq = append(seq, p)
			}
			checkEqual(t, step, "ByIndexSeq("+name+","+value+")", sortedPods(seq), sortedPods(toPods(want)))
		case 7:
			name, p := indexNames[r.intn(len(indexNames))], r.pod()
			got, err := typed.Index(name, p)
			want, wantErr := upstream.Index(name, p)
			checkErr(t, step, "Index", err, wantErr)
			checkEqual(t, step, "Index("+name+")", sortedPods(got), sortedPods(toPods(want)))
		case 8:
			var err, wantErr error
			if r.intn(2) == 0 {
				err = typed.AddIndexers(Indexers[*corev1.Pod]{"tags": tagsIndex})
				wantErr = upstream.AddIndexers(cache.Indexers{"tags": untyped(tagsIndex)})
			} else {
				err = typed.AddIndexers(Indexers[*corev1.Pod]{"app": appIndex, "other": appIndex})
				wantErr = upstream.AddIndexers(cache.Indexers{"app": untyped(appIndex), "other": untyped(appIndex)})
			}
			checkErr(t, step, "AddIndexers", err, wantErr)
		case 9:
			key := r.key()
			got, ok := typed.GetByKey(key)
			want, wantOK, _ := upstream.GetByKey(key)
			if ok != wantOK || (ok && got != want.(*corev1.Pod)) {
				t.Fatalf("step %d: GetByKey(%s) = %v,%v; upstream %v,%v", step, key, got, ok, want, wantOK)
			}
		}
		compareIndexers(t, step, typed, upstream)
	}
}

// compareIndexers compares the whole visible state of the two indexers.
func compareIndexers(t testing.TB, step int, typed *Indexer[*corev1.Pod], upstream cache.Indexer) {
	t.Helper()
	checkEqual(t, step, "List", sortedPods(typed.List()), sortedPods(toPods(upstream.List())))
	checkEqual(t, step, "ListKeys", sorted(typed.ListKeys()), sorted(upstream.ListKeys()))
	if typed.Len() != len(upstream.ListKeys()) {
		t.Fatalf("step %d: Len=%d, upstream has %d keys", step, typed.Len(), len(upstream.ListKeys()))
	}
	var all []*corev1.Pod
	for k, p := range typed.All() {
		if key, _ := MetaNamespaceKeyFunc(p); key != k {
			t.Fatalf("step %d: All yields key %q with the object of %q", step, k, key)
		}
		all = append(all, p)
	}
	checkEqual(t, step, "All", sortedPods(all), sortedPods(toPods(upstream.List())))
	names := sorted(keysOf(typed.GetIndexers()))
	checkEqual(t, step, "GetIndexers", names, sorted(keysOf(upstream.GetIndexers())))
	for _, name := range names {
		vals := sorted(typed.ListIndexFuncValues(name))
		checkEqual(t, step, "ListIndexFuncValues("+name+")", vals, sorted(upstream.ListIndexFuncValues(name)))
		for _, v := range vals {
			got, err := typed.IndexKeys(name, v)
			want, wantErr := upstream.IndexKeys(name, v)
			checkErr(t, step, "IndexKeys", err, wantErr)
			checkEqual(t, step, "IndexKeys("+name+","+v+")", got, want)
		}
	}
}

func keysOf[M ~map[string]V, V any](m M) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestIndexerDifferential(t *testing.T) {
	runRandomSequences(t, 10000, runIndexerDiff)
}

func FuzzIndexerDifferential(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Fuzz(func(t *testing.T, data []byte) { runIndexerDiff(t, data) })
}
