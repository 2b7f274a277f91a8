package informer

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPatchIndexFuncReadsStore: index functions may read the Indexer, also
// during a relist that changes few objects and is applied in place (patch,
// the informer's path after a 410 when the cached objects are reused). It
// used to run them under the Store's lock: the read deadlocked.
func TestPatchIndexFuncReadsStore(t *testing.T) {
	var x *Indexer[*corev1.Pod]
	x = NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{
		"rv": func(p *corev1.Pod) ([]string, error) {
			x.GetByKey(p.Namespace + "/" + p.Name)
			return []string{p.ResourceVersion}, nil
		},
	})
	if err := x.AddLabelIndex(MetaLabelsFunc[*corev1.Pod]); err != nil {
		t.Fatal(err)
	}
	var list []*corev1.Pod
	var keys []string
	for i := range 20 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("p", i), ResourceVersion: "1", Labels: map[string]string{"v": "1"}}}
		if err := x.Add(p); err != nil {
			t.Fatal(err)
		}
		list = append(list, p)
		keys = append(keys, "ns/"+p.Name)
	}
	// A relist that finds p0 changed and p19 gone; the other pointers are
	// the cached ones.
	list[0] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p0", ResourceVersion: "2", Labels: map[string]string{"v": "2"}}}
	list, keys = list[:19], keys[:19]
	if !x.fewChanges(list, keys) {
		t.Fatal("the relist is not applied in place: the test does not reach patch")
	}
	done := make(chan error, 1)
	go func() { done <- x.replace(list, keys, true) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the relist has not been applied after 10s: an index function that reads the Indexer is blocked")
	}
	if got, _ := x.IndexKeys("rv", "2"); len(got) != 1 || got[0] != "ns/p0" {
		t.Errorf("rv=2 index: %v, want [ns/p0]", got)
	}
	if got, _ := x.IndexKeys("rv", "1"); len(got) != 18 {
		t.Errorf("rv=1 index: %d keys, want 18", len(got))
	}
	if x.Len() != 19 {
		t.Errorf("Len = %d, want 19", x.Len())
	}
	checkLabelIndex(t, 0, x)
}

// TestPatchDuplicateKeysLastWins: of a key listed twice, the last wins in
// a relist applied in place, as in a full replace (and client-go's).
func TestPatchDuplicateKeysLastWins(t *testing.T) {
	for _, changedLast := range []bool{false, true} {
		x := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], nil)
		var list []*corev1.Pod
		var keys []string
		for i := range 20 {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("p", i), ResourceVersion: "1"}}
			if err := x.Add(p); err != nil {
				t.Fatal(err)
			}
			list = append(list, p)
			keys = append(keys, "ns/"+p.Name)
		}
		cached := list[0]
		changed := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p0", ResourceVersion: "2"}}
		fresh := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new", ResourceVersion: "3"}}
		freshLater := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new", ResourceVersion: "4"}}
		first, last := changed, cached
		if changedLast {
			first, last = cached, changed
		}
		list = append([]*corev1.Pod{first}, list...)
		keys = append([]string{"ns/p0"}, keys...)
		list[1] = last
		list = append(list, fresh, freshLater)
		keys = append(keys, "ns/new", "ns/new")
		if !x.fewChanges(list, keys) {
			t.Fatal("the relist is not applied in place: the test does not reach patch")
		}
		if err := x.replace(list, keys, true); err != nil {
			t.Fatal(err)
		}
		if got, _ := x.GetByKey("ns/p0"); got != last {
			t.Errorf("changed last %v: ns/p0 is rv %s, want the last listed, rv %s", changedLast, got.ResourceVersion, last.ResourceVersion)
		}
		if got, _ := x.GetByKey("ns/new"); got != freshLater {
			t.Errorf("changed last %v: ns/new is rv %s, want the last listed, rv 4", changedLast, got.ResourceVersion)
		}
		if x.Len() != 21 {
			t.Errorf("Len = %d, want 21", x.Len())
		}
	}
}
