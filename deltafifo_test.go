package informer

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedkube/informer/internal/testobj"
)

func TestDeltaFIFOMethods(t *testing.T) {
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{})
	a1, a2, b1 := testobj.Pod("ns", "a", "1"), testobj.Pod("ns", "a", "2"), testobj.Pod("", "b", "1")
	f.Add(a1)
	f.Update(a2)
	f.Add(b1)
	if keys := f.ListKeys(); !slices.Equal(keys, []string{"ns/a", "b"}) {
		t.Fatalf("ListKeys = %v", keys)
	}
	checkEqual(t, 0, "List", sortedPods(f.List()), sortedPods([]*corev1.Pod{a2, b1}))
	d, ok, err := f.Get(a1)
	if err != nil || !ok || deltasString(d) != "Added(ns/a@1) Updated(ns/a@2)" {
		t.Fatalf("Get = %s, %v, %v", deltasString(d), ok, err)
	}
	d[0].Object = b1 // a copy: the queue must not see this
	if d, _ := f.GetByKey("ns/a"); d.Oldest().Object != a1 || d.Newest().Object != a2 {
		t.Fatalf("GetByKey = %s", deltasString(d))
	}
	if f.Len() != 2 {
		t.Fatalf("Len = %d", f.Len())
	}
	if key, err := f.KeyOf(Deltas[*corev1.Pod]{tombstone("ns/x", (*corev1.Pod)(nil))}); key != "ns/x" || err != nil {
		t.Fatalf("KeyOf(tombstone) = %q, %v", key, err)
	}
	if _, err := f.KeyOf(nil); !errors.Is(err, ErrEmptyDeltas) {
		t.Fatalf("KeyOf(nil) = %v, want ErrEmptyDeltas", err)
	}
	if err := f.AddIfNotPresent(nil); !errors.Is(err, ErrEmptyDeltas) {
		t.Fatalf("AddIfNotPresent(nil) = %v", err)
	}
	// Without KnownObjects, deleting a key that is not queued does nothing.
	f.Delete(testobj.Pod("ns", "never", "1"))
	if f.Len() != 2 {
		t.Fatal("Delete of an unknown key queued something")
	}
	// Resync without KnownObjects does nothing.
	f.Resync()
	got, _ := f.Pop(nil)
	if deltasString(got) != "Added(ns/a@1) Updated(ns/a@2)" {
		t.Fatalf("Pop = %s", deltasString(got))
	}
	// AddIfNotPresent puts popped Deltas back unless the key is queued.
	if err := f.AddIfNotPresent(got); err != nil {
		t.Fatal(err)
	}
	if keys := f.ListKeys(); !slices.Equal(keys, []string{"b", "ns/a"}) {
		t.Fatalf("ListKeys after AddIfNotPresent = %v", keys)
	}
	f.AddIfNotPresent(Deltas[*corev1.Pod]{{Type: Sync, Object: a1}})
	if d, _ := f.GetByKey("ns/a"); len(d) != 2 {
		t.Fatalf("AddIfNotPresent replaced queued deltas: %s", deltasString(d))
	}
}

func TestDeltaFIFODefaultKeyFunction(t *testing.T) {
	type notMeta struct{ name string }
	f := NewDeltaFIFO(DeltaFIFOOptions[*notMeta]{})
	if err := f.Add(&notMeta{"x"}); err == nil {
		t.Fatal("default key function accepted a type without metadata")
	}
}

func TestDeltaFIFOBadInput(t *testing.T) {
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{})
	for name, op := range map[string]func() error{
		"Add":     func() error { return f.Add(nil) },
		"Update":  func() error { return f.Update(nil) },
		"Delete":  func() error { return f.Delete(nil) },
		"Get":     func() error { _, _, err := f.Get(nil); return err },
		"Replace": func() error { return f.Replace([]*corev1.Pod{testobj.Pod("ns", "a", "1"), nil}, "") },
	} {
		if err := op(); !errors.Is(err, ErrNilObject) {
			t.Errorf("%s(nil) = %v, want ErrNilObject", name, err)
		}
	}
	if f.Len() != 0 || f.HasSynced() {
		t.Fatalf("failed writes changed the queue: Len %d, HasSynced %v", f.Len(), f.HasSynced())
	}
	f.Close()
	if _, err := f.Pop(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Pop on a closed, empty queue = %v", err)
	}
}

func TestDeltaFIFOTransformer(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	known := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], nil)
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{
		KnownObjects: known,
		Transformer: func(p *corev1.Pod) (*corev1.Pod, error) {
			calls++
			if p.Labels["fail"] != "" {
				return nil, boom
			}
			q := p.DeepCopy()
			q.Spec = corev1.PodSpec{} // drop what the program does not need
			q.Annotations = map[string]string{"transformed": "true"}
			return q, nil
		},
	})
	a := testobj.Pod("ns", "a", "1")
	f.Add(a)
	d, _ := f.Pop(nil)
	if got := d.Newest().Object; got == a || got.Annotations["transformed"] != "true" {
		t.Fatal("Add did not transform")
	}
	known.Add(d.Newest().Object)
	// Resync queues known objects as they are: they were transformed.
	calls = 0
	f.Resync()
	if calls != 0 {
		t.Fatalf("Resync called the transformer %d times", calls)
	}
	f.Pop(nil)
	// A failing transform fails the write; a failing Replace changes nothing.
	if err := f.Update(testobj.Pod("ns", "a", "2", "fail=yes")); !errors.Is(err, boom) {
		t.Fatalf("Update with a failing transform = %v", err)
	}
	if err := f.Replace([]*corev1.Pod{testobj.Pod("ns", "b", "1"), testobj.Pod("ns", "c", "1", "fail=yes")}, ""); !errors.Is(err, boom) {
		t.Fatalf("Replace with a failing transform = %v", err)
	}
	if f.Len() != 0 {
		t.Fatalf("failed writes queued %v", f.ListKeys())
	}
	// A transformer returning nil is an error, not a nil in the queue.
	g := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{Transformer: func(*corev1.Pod) (*corev1.Pod, error) { return nil, nil }})
	if err := g.Add(a); !errors.Is(err, ErrNilObject) {
		t.Fatalf("Add with a transformer returning nil = %v", err)
	}
}

func TestDeltaFIFORequeue(t *testing.T) {
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{})
	f.Add(testobj.Pod("ns", "a", "1"))
	f.Add(testobj.Pod("ns", "b", "1"))
	boom := errors.New("boom")
	d, err := f.Pop(func(Deltas[*corev1.Pod], bool) error { return &RequeueError{Err: boom} })
	if !errors.Is(err, boom) || deltasString(d) != "Added(ns/a@1)" {
		t.Fatalf("Pop = %s, %v", deltasString(d), err)
	}
	if keys := f.ListKeys(); !slices.Equal(keys, []string{"ns/b", "ns/a"}) {
		t.Fatalf("after requeue the queue is %v", keys)
	}
	// Appending to requeued Deltas does not write into the caller's array.
	f.Pop(nil)
	got, _ := f.Pop(nil)
	buf := make(Deltas[*corev1.Pod], 1, 4)
	buf[0] = got[0]
	f.AddIfNotPresent(buf)
	f.Update(testobj.Pod("ns", "a", "2"))
	if spare := buf[:2][1]; spare.Object != nil {
		t.Fatal("the queue appended into the caller's array")
	}
}

func TestDeltaTypeString(t *testing.T) {
	for typ, want := range map[DeltaType]string{Added: "Added", Updated: "Updated", Deleted: "Deleted", Replaced: "Replaced", Sync: "Sync", 0: "DeltaType(0)"} {
		if got := typ.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", typ, got, want)
		}
	}
}
