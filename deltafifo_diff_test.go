package informer

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// deltaRec is one Delta in a form both implementations map to.
type deltaRec struct {
	Type    string
	Obj     *corev1.Pod
	TombKey string // set for a tombstone
}

type popRec struct {
	Deltas  []deltaRec
	Initial bool
}

func typedRecs(d Deltas[*corev1.Pod]) []deltaRec {
	out := make([]deltaRec, len(d))
	for i, x := range d {
		out[i] = deltaRec{Type: x.Type.String(), Obj: x.Object}
		if x.Tombstone != nil {
			out[i].TombKey = x.Tombstone.Key
			if x.Tombstone.Obj != x.Object {
				panic("tombstone object differs from the delta's object")
			}
		}
	}
	return out
}

func upstreamRecs(d cache.Deltas) []deltaRec {
	out := make([]deltaRec, len(d))
	for i, x := range d {
		out[i].Type = string(x.Type)
		switch o := x.Object.(type) {
		case cache.DeletedFinalStateUnknown:
			out[i].TombKey = o.Key
			out[i].Obj, _ = o.Obj.(*corev1.Pod)
		case *corev1.Pod:
			out[i].Obj = o
		}
	}
	return out
}

// sortedKnown makes ListKeys deterministic, so that both implementations
// queue tombstones and resyncs in the same order.
type sortedKnown struct{ *Indexer[*corev1.Pod] }

func (s sortedKnown) ListKeys() []string { return sorted(s.Indexer.ListKeys()) }

type sortedKnownUpstream struct{ cache.Indexer }

func (s sortedKnownUpstream) ListKeys() []string { return sorted(s.Indexer.ListKeys()) }

// applyTyped is what an informer does with popped Deltas: apply them to the
// store that is the queue's KnownObjects.
func applyTyped(store *Indexer[*corev1.Pod], d Deltas[*corev1.Pod]) {
	for _, x := range d {
		switch {
		case x.Tombstone != nil:
			store.deleteKey(x.Tombstone.Key)
		case x.Type == Deleted:
			store.Delete(x.Object)
		default:
			store.Update(x.Object)
		}
	}
}

func applyUpstream(store cache.Indexer, d cache.Deltas) {
	for _, x := range d {
		if x.Type == cache.Deleted {
			store.Delete(x.Object)
		} else {
			store.Update(x.Object)
		}
	}
}

// runDeltaFIFODiff applies the operations encoded in data to a DeltaFIFO and
// to client-go's cache.NewDeltaFIFOWithOptions, each with or without a
// consumer store as KnownObjects, and compares every popped Deltas.
func runDeltaFIFODiff(t testing.TB, data []byte) {
	r := &opReader{data: data}
	withKnown, emitReplaced, transform := r.intn(2) == 0, r.intn(2) == 0, r.intn(3) == 0
	typedStore := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], nil)
	upstreamStore := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{})
	opts := DeltaFIFOOptions[*corev1.Pod]{EmitDeltaTypeReplaced: emitReplaced}
	uopts := cache.DeltaFIFOOptions{KeyFunction: cache.MetaNamespaceKeyFunc, EmitDeltaTypeReplaced: emitReplaced}
	if withKnown {
		opts.KnownObjects = sortedKnown{typedStore}
		uopts.KnownObjects = sortedKnownUpstream{upstreamStore}
	}
	if transform {
		// Both implementations must get the same transformed pointer.
		memo := map[*corev1.Pod]*corev1.Pod{}
		tf := func(p *corev1.Pod) *corev1.Pod {
			if q, ok := memo[p]; ok {
				return q
			}
			q := p.DeepCopy()
			q.Annotations = map[string]string{"transformed": "yes"}
			memo[p], memo[q] = q, q
			return q
		}
		opts.Transformer = func(p *corev1.Pod) (*corev1.Pod, error) { return tf(p), nil }
		uopts.Transformer = func(o any) (any, error) { return tf(o.(*corev1.Pod)), nil }
	}
	typed := NewDeltaFIFO(opts)
	upstream := cache.NewDeltaFIFOWithOptions(uopts)
	pop := func(step int) {
		var got, want popRec
		_, err := typed.Pop(func(d Deltas[*corev1.Pod], initial bool) error {
			got = popRec{typedRecs(d), initial}
			applyTyped(typedStore, d)
			return nil
		})
		_, uerr := upstream.Pop(func(o any, initial bool) error {
			want = popRec{upstreamRecs(o.(cache.Deltas)), initial}
			applyUpstream(upstreamStore, o.(cache.Deltas))
			return nil
		})
		checkErr(t, step, "Pop", err, uerr)
		if got.Initial != want.Initial || !slices.Equal(got.Deltas, want.Deltas) {
			checkDiff(t, step, "Pop", got, want)
		}
	}
	for step := 0; r.more(); step++ {
		switch op := r.intn(9); op {
		case opAdd, opAdd2, opUpdate, opDelete, opReplace:
			diffWrite(t, step, r, op, typed, upstream)
		case 5:
			checkErr(t, step, "Resync", typed.Resync(), upstream.Resync())
		case 6, 7:
			if typed.Len() > 0 {
				pop(step)
			}
		case 8:
			if r.intn(4) == 0 {
				typed.Close()
				upstream.Close()
			}
		}
		if typed.HasSynced() != upstream.HasSynced() {
			t.Fatalf("step %d: HasSynced=%v, upstream %v", step, typed.HasSynced(), upstream.HasSynced())
		}
		if typed.IsClosed() != upstream.IsClosed() {
			t.Fatalf("step %d: IsClosed=%v, upstream %v", step, typed.IsClosed(), upstream.IsClosed())
		}
		checkEqual(t, step, "consumer store", sortedPods(typedStore.List()), sortedPods(toPods(upstreamStore.List())))
	}
	typed.Close()
	upstream.Close()
	for step := -1; typed.Len() > 0; step-- {
		pop(step)
	}
	_, err := typed.Pop(nil)
	_, uerr := upstream.Pop(func(any, bool) error { return nil })
	if !errors.Is(err, ErrClosed) || !errors.Is(uerr, cache.ErrFIFOClosed) {
		t.Fatalf("Pop on a closed, drained DeltaFIFO: %v; upstream %v", err, uerr)
	}
}

func TestDeltaFIFODifferential(t *testing.T) {
	runRandomSequences(t, 10000, runDeltaFIFODiff)
}

func FuzzDeltaFIFODifferential(f *testing.F) {
	f.Add([]byte{0, 0, 0, 4, 0, 1, 2, 3, 4, 5, 6, 7, 8, 4, 6, 6, 6, 6})
	f.Fuzz(func(t *testing.T, data []byte) { runDeltaFIFODiff(t, data) })
}
