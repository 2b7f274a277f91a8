package deque

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAgainstSlice drives a Deque and a plain slice with the same random
// operations and compares them after every step.
func TestAgainstSlice(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for seq := range 200 {
		var d Deque[int]
		var model []int
		steps := 300
		if seq%10 == 0 {
			steps = 3000 // across many chunks
		}
		for step := range steps {
			switch r.IntN(5) {
			case 0, 1, 2:
				d.PushBack(step)
				model = append(model, step)
			case 3:
				got, ok := d.PopFront()
				if ok != (len(model) > 0) {
					t.Fatalf("seq %d step %d: PopFront ok=%v with model len %d", seq, step, ok, len(model))
				}
				if ok {
					if got != model[0] {
						t.Fatalf("seq %d step %d: PopFront=%d, want %d", seq, step, got, model[0])
					}
					model = model[1:]
				}
			case 4:
				switch r.IntN(60) {
				case 0:
					d.Clear()
					model = nil
				case 1:
					d.ClearKeep()
					model = nil
				case 2:
					d.Shrink()
				}
			}
			if d.Len() != len(model) {
				t.Fatalf("seq %d step %d: Len=%d, want %d", seq, step, d.Len(), len(model))
			}
			var all []int
			d.All(func(e int) bool { all = append(all, e); return true })
			if !slices.Equal(all, model) && !(len(all) == 0 && len(model) == 0) {
				t.Fatalf("seq %d step %d: All=%v, want %v", seq, step, all, model)
			}
			for i, want := range model {
				if got := d.At(i); got != want {
					t.Fatalf("seq %d step %d: At(%d)=%d, want %d", seq, step, i, got, want)
				}
			}
		}
	}
}

func TestPopReleasesReferences(t *testing.T) {
	var d Deque[*int]
	v := 1
	d.PushBack(&v)
	d.PopFront()
	for _, p := range slots(&d) {
		if p != nil {
			t.Fatal("popped element still referenced by the buffer")
		}
	}
}

// After a burst, a Deque gives its memory back, whether drained by
// PopFront or emptied by Clear; a small one keeps its buffer.
func TestShrinksAfterBurst(t *testing.T) {
	var d Deque[int]
	for i := range 100_000 {
		d.PushBack(i)
	}
	for i := range 100_000 {
		if v, _ := d.PopFront(); v != i {
			t.Fatalf("popped %d, want %d", v, i)
		}
	}
	if d.Cap() > keepCap {
		t.Errorf("capacity %d after draining 100,000 elements, want at most %d", d.Cap(), keepCap)
	}
	for i := range 100_000 {
		d.PushBack(i)
	}
	d.Clear()
	if d.Cap() != 0 {
		t.Errorf("capacity %d after Clear of 100,000 elements, want 0", d.Cap())
	}
	for i := range 100 {
		d.PushBack(i)
	}
	c := d.Cap()
	d.Clear()
	if d.Cap() != c {
		t.Errorf("a small buffer was dropped by Clear: capacity %d, was %d", d.Cap(), c)
	}
}

// A deque whose length swings across a quarter of its buffer, as a busy
// producer and consumer make it, keeps its buffer instead of halving it
// at each low and doubling it back at each high (a new buffer and a copy
// per swing); a drained one still gives its memory back (see
// TestShrinksAfterBurst).
func TestSwingsKeepTheBuffer(t *testing.T) {
	var d Deque[int]
	for i := range 2000 {
		d.PushBack(i)
	}
	swing := func() {
		for d.Len() > 500 { // below a quarter of 2048
			d.PopFront()
		}
		for d.Len() < 1100 { // past 1024
			d.PushBack(0)
		}
	}
	swing()
	if allocs := testing.AllocsPerRun(100, swing); allocs > 0.5 {
		t.Errorf("%.2f buffers allocated per swing between 500 and 1,100 elements, want the buffer kept", allocs)
	}
}

// ClearKeep empties a deque and keeps its buffer, wrapped or not, with no
// reference left in it; Shrink then gives a large one back.
func TestClearKeepThenShrink(t *testing.T) {
	type ref struct{ p *int }
	var d Deque[ref]
	for range 3000 {
		d.PushBack(ref{new(int)})
	}
	for range 1000 {
		d.PopFront()
	}
	for range 1500 { // wraps around the end of the buffer
		d.PushBack(ref{new(int)})
	}
	c := d.Cap()
	d.ClearKeep()
	if d.Len() != 0 || d.Cap() != c {
		t.Fatalf("after ClearKeep: length %d, capacity %d; want 0 and %d", d.Len(), d.Cap(), c)
	}
	for i, e := range slots(&d) {
		if e.p != nil {
			t.Fatalf("ClearKeep left a reference at %d", i)
		}
	}
	for i := range 10 {
		d.PushBack(ref{&i})
	}
	if got, _ := d.PopFront(); *got.p != 0 {
		t.Errorf("first element after ClearKeep is %d, want 0", *got.p)
	}
	d.Shrink() // not empty: kept
	if d.Cap() != c {
		t.Errorf("Shrink of a non-empty deque changed its capacity to %d", d.Cap())
	}
	for d.Len() > 0 {
		d.PopFront()
	}
	d.ClearKeep()
	d.Shrink()
	if d.Cap() > keepCap {
		t.Errorf("capacity %d after Shrink of an empty deque of %d, want at most %d", d.Cap(), c, keepCap)
	}
	// Filled again past its capacity, then cleared and shrunk.
	for range 5000 {
		d.PushBack(ref{new(int)})
	}
	d.ClearKeep()
	if d.Cap() < 5000 {
		t.Fatalf("capacity %d after ClearKeep of 5,000 elements, want them kept", d.Cap())
	}
	d.Shrink()
	if d.Cap() > keepCap {
		t.Errorf("capacity %d after Shrink of an empty deque, want at most %d", d.Cap(), keepCap)
	}
}

// slots returns every element place of d's chunks, in use and kept.
func slots[E any](d *Deque[E]) []E {
	var out []E
	for _, c := range append(slices.Clone(d.chunks), d.free...) {
		out = append(out, c[:]...)
	}
	return out
}

// A burst grows a deque a chunk at a time: what it allocates is about
// what it holds, never a buffer per doubling, and its elements stay where
// they are (a pointer into a chunk keeps reading the same element).
func TestBurstAllocatesChunks(t *testing.T) {
	const n = 100 * chunkLen
	allocs := testing.AllocsPerRun(5, func() {
		var d Deque[int]
		for i := range n {
			d.PushBack(i)
		}
	})
	// A chunk per chunkLen elements, and the chunks slice's doublings.
	if want := float64(n/chunkLen) + 10; allocs > want {
		t.Errorf("%.0f allocations for a burst of %d, want at most %.0f", allocs, n, want)
	}
	var d Deque[int]
	d.PushBack(-1)
	first := &d.chunks[0][0]
	for i := range n {
		d.PushBack(i)
	}
	if *first != -1 || first != &d.chunks[0][0] {
		t.Errorf("the front element moved during a burst")
	}
}

// A queue kept busy by a producer and a consumer, however long, reuses
// its chunks: a steady stream allocates nothing.
func TestSteadyStreamReusesChunks(t *testing.T) {
	var d Deque[int]
	for i := range 10 * chunkLen {
		d.PushBack(i)
	}
	next := 0
	stream := func() {
		for range 3 * chunkLen {
			d.PushBack(0)
			if v, _ := d.PopFront(); v != next && next < 10*chunkLen {
				t.Fatalf("popped %d, want %d", v, next)
			}
			next++
		}
	}
	stream()
	if allocs := testing.AllocsPerRun(50, stream); allocs > 0 {
		t.Errorf("%.2f allocations per %d pushes and pops of a steady queue, want 0", allocs, 3*chunkLen)
	}
}
