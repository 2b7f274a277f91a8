// Package deque provides a growable ring buffer used by the queues.
package deque

// Deque is a double-ended queue backed by a ring buffer that grows as needed.
// The zero value is an empty deque ready to use. A Deque is not safe for
// concurrent use; its owner guards it.
type Deque[E any] struct {
	buf  []E // len(buf) is zero or a power of two
	head int // index of the front element in buf
	n    int // number of elements
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
	return e, true
}

// At returns the i-th element from the front; it panics if i is out of range.
func (d *Deque[E]) At(i int) E {
	if i < 0 || i >= d.n {
		panic("deque: index out of range")
	}
	return d.buf[(d.head+i)&(len(d.buf)-1)]
}

// Clear removes every element, keeping the buffer for reuse.
func (d *Deque[E]) Clear() {
	if d.n > 0 {
		clear(d.buf)
	}
	d.head, d.n = 0, 0
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
	buf := make([]E, size)
	if d.n > 0 {
		tail := copy(buf, d.buf[d.head:])
		if tail < d.n {
			copy(buf[tail:], d.buf[:d.head])
		}
	}
	d.buf, d.head = buf, 0
}
