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
		for step := range 300 {
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
				if r.IntN(20) == 0 {
					d.Clear()
					model = nil
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
	for _, p := range d.buf {
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
	for i, e := range d.buf {
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
	if d.Cap() != 0 {
		t.Errorf("capacity %d after Shrink of an empty deque of %d, want 0", d.Cap(), c)
	}
}
