package informer

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

type popped struct {
	Key     string
	Obj     *corev1.Pod
	Initial bool
}

// runFIFODiff applies the operations encoded in data to a FIFO and to
// client-go's cache.NewFIFO and compares what they hand out.
//
// client-go queues the keys of Replace and Resync in map order, so after
// either the harness pops everything at once and compares the two drains as
// sets. isInInitialList and HasSynced are compared where client-go's own
// answers are deterministic: once a key of the first Replace is deleted
// before it is popped, they depend on that order until the queue is empty.
func runFIFODiff(t testing.TB, data []byte) {
	r := &opReader{data: data}
	typed := NewFIFO(MetaNamespaceKeyFunc[*corev1.Pod])
	upstream := cache.NewFIFO(cache.MetaNamespaceKeyFunc)
	ordered := true // no Replace or Resync since the last drain
	// stale: a Delete while unordered may leave client-go with entries of
	// deleted keys at random places in its queue, which a key added again
	// later reuses; from then on only drains can be compared.
	stale := false
	flagsDeterministic := true // no Delete before the initial population was popped
	popOne := func(step int) {
		var got, want popped
		obj, err := typed.Pop(func(p *corev1.Pod, initial bool) error {
			got = popped{mustKey(p), p, initial}
			return nil
		})
		uobj, uerr := upstream.Pop(func(o any, initial bool) error {
			p := o.(*corev1.Pod)
			want = popped{mustKey(p), p, initial}
			return nil
		})
		checkErr(t, step, "Pop", err, uerr)
		if err == nil && obj != uobj.(*corev1.Pod) {
			t.Fatalf("step %d: Pop returned %v, upstream %v", step, obj, uobj)
		}
		if !flagsDeterministic {
			got.Initial, want.Initial = false, false
		}
		checkEqual(t, step, "Pop", []popped{got}, []popped{want})
	}
	drain := func(step int) {
		var got, want []popped
		for range len(typed.ListKeys()) {
			typed.Pop(func(p *corev1.Pod, initial bool) error {
				got = append(got, popped{Key: mustKey(p), Obj: p})
				return nil
			})
			upstream.Pop(func(o any, initial bool) error {
				p := o.(*corev1.Pod)
				want = append(want, popped{Key: mustKey(p), Obj: p})
				return nil
			})
		}
		byKey := func(a, b popped) int { return strings.Compare(a.Key, b.Key) }
		slices.SortFunc(got, byKey)
		slices.SortFunc(want, byKey)
		checkEqual(t, step, "drain", got, want)
		ordered = !stale
	}
	for step := 0; r.more(); step++ {
		switch op := r.intn(9); op {
		case opAdd, opAdd2, opUpdate:
			diffWrite(t, step, r, op, typed, upstream)
		case opDelete:
			if !typed.HasSynced() {
				flagsDeterministic = false
			}
			if !ordered {
				stale = true
			}
			diffWrite(t, step, r, op, typed, upstream)
		case opReplace:
			diffWrite(t, step, r, op, typed, upstream)
			ordered = false
		case 5:
			checkErr(t, step, "Resync", typed.Resync(), upstream.Resync())
			ordered = false
		case 6, 7:
			switch {
			case len(typed.ListKeys()) == 0:
			case ordered:
				popOne(step)
			default:
				drain(step)
			}
		case 8:
			if r.intn(4) == 0 {
				typed.Close()
				upstream.Close()
			}
		}
		if flagsDeterministic && typed.HasSynced() != upstream.HasSynced() {
			t.Fatalf("step %d: HasSynced=%v, upstream %v", step, typed.HasSynced(), upstream.HasSynced())
		}
		if typed.IsClosed() != upstream.IsClosed() {
			t.Fatalf("step %d: IsClosed=%v, upstream %v", step, typed.IsClosed(), upstream.IsClosed())
		}
	}
	// Close both and drain: they must hold the same objects and then both
	// report the closed queue.
	typed.Close()
	upstream.Close()
	drain(-1)
	_, err := typed.Pop(nil)
	_, uerr := upstream.Pop(func(any, bool) error { return nil })
	if !errors.Is(err, ErrClosed) || !errors.Is(uerr, cache.ErrFIFOClosed) {
		t.Fatalf("Pop on a closed, drained FIFO: %v; upstream %v", err, uerr)
	}
	// Not compared once flagsDeterministic is false: a Replace after such a
	// Delete drops the queue, and whether client-go's count of initial
	// entries still waiting reached zero before it depends on whether its
	// map order put the deleted key before or after the ones popped.
	if flagsDeterministic && typed.HasSynced() != upstream.HasSynced() {
		t.Fatalf("after drain: HasSynced=%v, upstream %v", typed.HasSynced(), upstream.HasSynced())
	}
}

func mustKey(p *corev1.Pod) string {
	key, err := MetaNamespaceKeyFunc(p)
	if err != nil {
		panic(err)
	}
	return key
}

func TestFIFODifferential(t *testing.T) {
	runRandomSequences(t, 10000, runFIFODiff)
}

func FuzzFIFODifferential(f *testing.F) {
	f.Add([]byte{4, 3, 0, 1, 2, 3, 6, 6, 6, 6})
	// The first Replace queues p0 and p1, p0 is deleted, one Pop, then an
	// empty Replace: whether client-go ends synced depends on its map order.
	f.Add([]byte{4, 2, 0, 0, 0, 0, 0, 0, 0, 1, 3, 0, 0, 0, 0, 6, 4, 0})
	f.Fuzz(func(t *testing.T, data []byte) { runFIFODiff(t, data) })
}
