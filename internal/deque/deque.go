// Package deque provides a growable double-ended queue used by the queues.
package deque

import "slices"

// Deque is a double-ended queue kept in fixed-size chunks. It grows a chunk
// at a time and never moves its elements: a burst costs an allocation per
// chunkLen elements, not a new buffer and a copy of everything at each
// doubling. A chunk emptied at the front is kept for the back to reuse, so a
// queue that a producer and a consumer keep busy allocates nothing. It gives
// memory back after a burst: drained by PopFront, it keeps at most keepCap
// elements' worth of chunks; one that stays at most a quarter full for four
// times its capacity of pops keeps only what it holds and keepCap; Clear
// drops a capacity larger than keepCap.
// The zero value is an empty deque ready to use. A Deque is not safe for
// concurrent use; its owner guards it.
type Deque[E any] struct {
	chunks []*chunk[E] // the chunks in use, front first
	free   []*chunk[E] // emptied chunks kept for reuse
	head   int         // index of the front element in chunks[0]
	n      int         // number of elements
	pops   int         // elements popped since the free chunks were last trimmed
}

// chunkLen is the number of elements of a chunk, a power of two.
const (
	chunkBits = 7
	chunkLen  = 1 << chunkBits
)

type chunk[E any] [chunkLen]E

// keepCap is the capacity a Deque keeps however it is used: below it,
// memory is reused rather than given back.
const keepCap = 1024

// Len returns the number of elements.
func (d *Deque[E]) Len() int { return d.n }

// Cap returns the number of elements the deque's chunks, in use and kept,
// hold.
func (d *Deque[E]) Cap() int { return (len(d.chunks) + len(d.free)) * chunkLen }

// PushBack appends e at the back.
func (d *Deque[E]) PushBack(e E) {
	i := d.head + d.n
	if i>>chunkBits == len(d.chunks) {
		d.chunks = append(d.chunks, d.newChunk())
	}
	*d.place(i) = e
	d.n++
}

// place returns where the element at index i of the chunks in use is,
// counted from the first place of chunks[0].
func (d *Deque[E]) place(i int) *E { return &d.chunks[i>>chunkBits][i&(chunkLen-1)] }

// newChunk returns a kept chunk, or a new one.
func (d *Deque[E]) newChunk() *chunk[E] {
	if k := len(d.free); k > 0 {
		c := d.free[k-1]
		d.free = slices.Delete(d.free, k-1, k) // which clears the place it leaves
		return c
	}
	return new(chunk[E])
}

// PopFront removes and returns the front element. It reports false when the
// deque is empty.
func (d *Deque[E]) PopFront() (E, bool) {
	var zero E
	if d.n == 0 {
		return zero, false
	}
	c := d.chunks[0]
	e := c[d.head]
	c[d.head] = zero // drop the reference for the garbage collector
	d.head++
	d.n--
	d.pops++
	switch {
	case d.n == 0:
		// Drained: the one chunk in use stays for the next push (chunks
		// holds just those the elements fill), and what is kept besides
		// is trimmed to keepCap.
		d.head = 0
		d.trim(keepCap/chunkLen - 1)
	case d.head == chunkLen:
		d.head = 0
		d.free = append(d.free, c)
		copy(d.chunks, d.chunks[1:])
		d.chunks[len(d.chunks)-1] = nil
		d.chunks = d.chunks[:len(d.chunks)-1]
		if cp := d.Cap(); cp > keepCap && d.n <= cp/4 && d.pops >= 4*cp {
			// Low for long: a burst's chunks are no longer needed.
			d.trim(max(keepCap/chunkLen-len(d.chunks), len(d.chunks)))
		}
	}
	return e, true
}

// trim drops kept chunks beyond keep.
func (d *Deque[E]) trim(keep int) {
	if len(d.free) > keep {
		clear(d.free[keep:])
		d.free = d.free[:keep]
	}
	d.pops = 0
}

// At returns the i-th element from the front; it panics if i is out of range.
func (d *Deque[E]) At(i int) E {
	if i < 0 || i >= d.n {
		panic("deque: index out of range")
	}
	return *d.place(d.head + i)
}

// Clear removes every element, keeping the chunks for reuse unless they
// hold more than keepCap elements.
func (d *Deque[E]) Clear() {
	if d.Cap() > keepCap {
		*d = Deque[E]{}
		return
	}
	d.ClearKeep()
}

// ClearKeep removes every element and keeps the chunks, however many: for
// a deque that is about to be filled again as much (a batch buffer while a
// burst goes on), where Clear would make the next fill allocate them again.
// Its owner gives the memory back with Shrink once the burst is over.
func (d *Deque[E]) ClearKeep() {
	if d.n > 0 {
		end := d.head + d.n
		for j, c := range d.chunks {
			lo, hi := max(d.head-j*chunkLen, 0), min(end-j*chunkLen, chunkLen)
			if lo < hi {
				clear(c[lo:hi])
			}
		}
	}
	if len(d.chunks) > 1 {
		d.free = append(d.free, d.chunks[1:]...)
		clear(d.chunks[1:])
		d.chunks = d.chunks[:1]
	}
	d.head, d.n, d.pops = 0, 0, 0
}

// Shrink drops the chunks of an empty deque beyond keepCap elements.
func (d *Deque[E]) Shrink() {
	if d.n == 0 {
		d.trim(keepCap/chunkLen - len(d.chunks))
	}
}

// All calls yield for each element from front to back until yield returns
// false. The deque must not be modified during the iteration.
func (d *Deque[E]) All(yield func(E) bool) {
	for i := range d.n {
		if !yield(*d.place(d.head + i)) {
			return
		}
	}
}
