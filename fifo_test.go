package informer

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedkube/informer/internal/testobj"
)

func popAllFIFO(f *FIFO[*corev1.Pod]) []string {
	var out []string
	for len(f.ListKeys()) > 0 {
		p, _ := f.Pop(nil)
		out = append(out, podString(p))
	}
	return out
}

func TestFIFOMethods(t *testing.T) {
	f := NewFIFO(MetaNamespaceKeyFunc[*corev1.Pod])
	a1, a2, b1, c1 := testobj.Pod("ns", "a", "1"), testobj.Pod("ns", "a", "2"), testobj.Pod("ns", "b", "1"), testobj.Pod("ns", "c", "1")
	f.Add(a1)
	f.Add(b1)
	f.Update(a2) // keeps a's place, replaces the object
	if err := f.AddIfNotPresent(a1); err != nil {
		t.Fatal(err)
	}
	f.AddIfNotPresent(c1)
	if got, ok, err := f.Get(a1); err != nil || !ok || got != a2 {
		t.Fatalf("Get = %v, %v, %v; want the newest a", got, ok, err)
	}
	if got, ok := f.GetByKey("ns/c"); !ok || got != c1 {
		t.Fatalf("GetByKey(ns/c) = %v, %v", got, ok)
	}
	if keys := sorted(f.ListKeys()); !slices.Equal(keys, []string{"ns/a", "ns/b", "ns/c"}) {
		t.Fatalf("ListKeys = %v", keys)
	}
	checkEqual(t, 0, "List", sortedPods(f.List()), sortedPods([]*corev1.Pod{a2, b1, c1}))
	f.Delete(b1)
	if got := popAllFIFO(f); !slices.Equal(got, []string{"ns/a@2", "ns/c@1"}) {
		t.Fatalf("popped %v", got)
	}
	// Resync queues again what is stored but not queued; with nothing
	// stored it queues nothing.
	f.Resync()
	if n := len(f.ListKeys()); n != 0 {
		t.Fatalf("%d keys after Resync of an empty FIFO", n)
	}
}

func TestFIFOBadInput(t *testing.T) {
	f := NewFIFO(MetaNamespaceKeyFunc[*corev1.Pod])
	for name, op := range map[string]func() error{
		"Add":             func() error { return f.Add(nil) },
		"Update":          func() error { return f.Update(nil) },
		"Delete":          func() error { return f.Delete(nil) },
		"AddIfNotPresent": func() error { return f.AddIfNotPresent(nil) },
		"Get":             func() error { _, _, err := f.Get(nil); return err },
		"Replace":         func() error { return f.Replace([]*corev1.Pod{nil}, "") },
	} {
		if err := op(); !errors.Is(err, ErrNilObject) {
			t.Errorf("%s(nil) = %v, want ErrNilObject", name, err)
		}
	}
	if f.HasSynced() {
		t.Error("a failed Replace counted as the first write")
	}
	if err := f.Add(testobj.Pod("ns", "", "1")); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("Add without a name = %v, want ErrEmptyKey", err)
	}
}

func TestFIFOPopBlocksUntilAddOrClose(t *testing.T) {
	f := NewFIFO(MetaNamespaceKeyFunc[*corev1.Pod])
	var wg sync.WaitGroup
	got := make(chan *corev1.Pod, 1)
	wg.Go(func() {
		p, err := f.Pop(nil)
		if err != nil {
			t.Error(err)
		}
		got <- p
	})
	select {
	case <-got:
		t.Fatal("Pop returned from an empty FIFO")
	case <-time.After(20 * time.Millisecond):
	}
	a := testobj.Pod("ns", "a", "1")
	f.Add(a)
	if p := <-got; p != a {
		t.Fatalf("Pop = %v", p)
	}
	wg.Go(func() {
		if _, err := f.Pop(nil); !errors.Is(err, ErrClosed) {
			t.Errorf("Pop after Close = %v, want ErrClosed", err)
		}
	})
	f.Close()
	wg.Wait()
	if !f.IsClosed() {
		t.Fatal("IsClosed is false after Close")
	}
	// Items queued after Close are still handed out.
	f.Add(a)
	if p, err := f.Pop(nil); p != a || err != nil {
		t.Fatalf("Pop after Close with an item = %v, %v", p, err)
	}
}

func TestFIFORequeue(t *testing.T) {
	f := NewFIFO(MetaNamespaceKeyFunc[*corev1.Pod])
	a1, a2 := testobj.Pod("ns", "a", "1"), testobj.Pod("ns", "a", "2")
	f.Add(a1)
	boom := errors.New("boom")
	// A newer object queued while processing wins over the requeued one.
	_, err := f.Pop(func(p *corev1.Pod, _ bool) error {
		f.addIfNotPresentLocked("ns/a", a2)
		return &RequeueError{Err: boom}
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Pop = %v, want the inner error", err)
	}
	if got, _ := f.GetByKey("ns/a"); got != a2 {
		t.Fatalf("after requeue the FIFO holds %v, want the newer object", podString(got))
	}
	// A plain error does not requeue.
	f.Pop(func(*corev1.Pod, bool) error { return boom })
	if n := len(f.ListKeys()); n != 0 {
		t.Fatalf("a plain error requeued: %d keys", n)
	}
}
