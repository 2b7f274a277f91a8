// Package deque provides a growable ring buffer used by the queues.
package deque

// Deque is a double-ended queue backed by a ring buffer that grows as needed
// and gives memory back after a burst: a buffer larger than keepCap goes
// back to keepCap when it is drained after at least half as many pops as
// it holds since it was last resized, shrinks by half when it is at most a
// quarter full after four times as many, and Clear drops it.
// Counting pops keeps a queue whose length swings across a quarter of its
// buffer, as a busy producer and consumer make it, from shrinking and
// growing again on every swing (each a new buffer and a copy).
// The zero value is an empty deque ready to use. A Deque is not safe for
// concurrent use; its owner guards it.
type Deque[E any] struct {
	buf  []E // len(buf) is zero or a power of two
	head int // index of the front element in buf
	n    int // number of elements
	pops int // elements popped since buf was last resized
}

// Len returns the number of elements.
func (d *Deque[E]) Len() int { return d.n }

// PushBack appends e at the back.
func (d *Deque[E]) PushBack(e E) {
	if d.n == len(d.buf) {
		d.grow()
	}
	d.buf[(d.head+d.n)&(len(d.buf)-1)] = e
	d.n++
}

// PopFront removes and returns the front element. It reports false when the
// deque is empty.
func (d *Deque[E]) PopFront() (E, bool) {
	var zero E
	if d.n == 0 {
		return zero, false
	}
	e := d.buf[d.head]
	d.buf[d.head] = zero // drop the reference for the garbage collector
	d.head = (d.head + 1) & (len(d.buf) - 1)
	d.n--
	if d.n == 0 {
		d.head = 0
	}
	d.pops++
	switch {
	case len(d.buf) <= keepCap:
	case d.n == 0 && d.pops >= len(d.buf)/2:
		d.resize(keepCap) // drained: nothing to copy
	case d.n <= len(d.buf)/4 && d.pops >= 4*len(d.buf):
		d.resize(len(d.buf) / 2)
	}
	return e, true
}

// keepCap is the capacity a Deque keeps however it is used: below it,
// memory is reused rather than given back.
const keepCap = 1024

// Cap returns the capacity of the buffer.
func (d *Deque[E]) Cap() int { return len(d.buf) }

// At returns the i-th element from the front; it panics if i is out of range.
func (d *Deque[E]) At(i int) E {
	if i < 0 || i >= d.n {
		panic("deque: index out of range")
	}
	return d.buf[(d.head+i)&(len(d.buf)-1)]
}

// Clear removes every element, keeping the buffer for reuse unless it is
// larger than keepCap.
func (d *Deque[E]) Clear() {
	if len(d.buf) > keepCap {
		d.buf, d.head, d.n, d.pops = nil, 0, 0, 0
		return
	}
	d.ClearKeep()
}

// ClearKeep removes every element and keeps the buffer, whatever its size:
// for a deque that is about to be filled again as much (a batch buffer
// while a burst goes on), where Clear would make the next fill grow a new
// buffer from nothing, a new allocation and a copy at every doubling. Its
// owner gives the memory back with Shrink once the burst is over.
func (d *Deque[E]) ClearKeep() {
	if d.n > 0 {
		if end := d.head + d.n; end <= len(d.buf) {
			clear(d.buf[d.head:end])
		} else {
			clear(d.buf[d.head:])
			clear(d.buf[:end-len(d.buf)])
		}
	}
	d.head, d.n, d.pops = 0, 0, 0
}

// Shrink drops the buffer of an empty deque larger than keepCap.
func (d *Deque[E]) Shrink() {
	if d.n == 0 && len(d.buf) > keepCap {
		d.buf, d.head, d.pops = nil, 0, 0
	}
}

// All calls yield for each element from front to back until yield returns
// false. The deque must not be modified during the iteration.
func (d *Deque[E]) All(yield func(E) bool) {
	for i := range d.n {
		if !yield(d.buf[(d.head+i)&(len(d.buf)-1)]) {
			return
		}
	}
}

func (d *Deque[E]) grow() {
	size := 2 * len(d.buf)
	if size == 0 {
		size = 8
	}
	d.resize(size)
}

// resize moves the elements to a buffer of size, a power of two >= n.
func (d *Deque[E]) resize(size int) {
	buf := make([]E, size)
	if d.n > 0 {
		tail := copy(buf, d.buf[d.head:])
		if tail < d.n {
			copy(buf[tail:], d.buf[:d.head])
		}
	}
	d.buf, d.head, d.pops = buf, 0, 0
}
