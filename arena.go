package informer

// arena allocates slots in chunks, so that adding an object costs no
// allocation of its own, and keeps every slot at a fixed address. Freed slots
// are reused before new ones. The owner guards it.
type arena[T any] struct {
	chunks []*chunk[T]
	spare  []*slot[T] // freed slots, zeroed, reused before new ones
	width  int        // index values per slot
	ids    []slotAt   // where each slot handed out is, by its id: slot(sl.id) == sl
}

// slotAt locates a slot: chunks[chunk].slots[index]. It holds no pointer,
// so that the garbage collector need not scan the table of them.
type slotAt struct{ chunk, index uint32 }

// slot returns the slot with id, which must have been handed out.
func (a *arena[T]) slot(id uint32) *slot[T] {
	at := a.ids[id]
	return &a.chunks[at.chunk].slots[at.index]
}

// chunk is a block of slots and the index value slices they point into.
type chunk[T any] struct {
	slots []slot[T] // slots[:used] have been handed out at least once
	used  int
	vals  [][]string // len(slots)*width; slot i owns vals[i*width:(i+1)*width]
	one   []string   // likewise, where a single index value is kept
	pos   []int32    // likewise, the slots' positions in their buckets
}

const (
	minChunk = 16
	maxChunk = 1024
)

// reserve makes room for n more slots in one chunk.
func (a *arena[T]) reserve(n int) {
	if n > 0 {
		a.newChunk(n)
	}
}

func (a *arena[T]) newChunk(size int) *chunk[T] {
	c := &chunk[T]{slots: make([]slot[T], size)}
	if a.width > 0 {
		c.vals = make([][]string, size*a.width)
		c.one = make([]string, size*a.width)
		c.pos = make([]int32, size*a.width)
		for i := range c.slots {
			lo, hi := i*a.width, (i+1)*a.width
			c.slots[i].vals = c.vals[lo:hi:hi]
			c.slots[i].one = c.one[lo:hi:hi]
			c.slots[i].pos = c.pos[lo:hi:hi]
		}
	}
	a.chunks = append(a.chunks, c)
	return c
}

// alloc returns an unused, zero slot.
func (a *arena[T]) alloc() *slot[T] {
	if n := len(a.spare); n > 0 {
		sl := a.spare[n-1]
		a.spare[n-1] = nil
		a.spare = a.spare[:n-1]
		return sl
	}
	var c *chunk[T]
	if n := len(a.chunks); n > 0 && a.chunks[n-1].used < len(a.chunks[n-1].slots) {
		c = a.chunks[n-1]
	} else {
		size := minChunk
		if n > 0 {
			size = min(max(2*len(a.chunks[n-1].slots), minChunk), maxChunk)
		}
		c = a.newChunk(size)
	}
	sl := &c.slots[c.used]
	c.used++
	sl.id = uint32(len(a.ids))
	a.ids = append(a.ids, slotAt{uint32(len(a.chunks) - 1), uint32(c.used - 1)})
	return sl
}

// release zeroes sl, but for its id, and keeps it for reuse.
func (a *arena[T]) release(sl *slot[T]) {
	var zero T
	sl.key, sl.obj, sl.rec, sl.size, sl.objSize, sl.lbls, sl.rvh = "", zero, nil, 0, 0, nil, 0
	clear(sl.vals)
	clear(sl.one)
	a.spare = append(a.spare, sl)
}

// live yields every slot that holds an object, in arena order.
func (a *arena[T]) live(yield func(*slot[T]) bool) {
	for _, c := range a.chunks {
		for i := range c.slots[:c.used] {
			if sl := &c.slots[i]; sl.key != "" && !yield(sl) {
				return
			}
		}
	}
}

// widen gives every slot room for width index values, keeping the values it
// has. The caller holds the store's locks.
func (a *arena[T]) widen(width int) {
	old := a.width
	a.width = width
	for _, c := range a.chunks {
		vals := make([][]string, len(c.slots)*width)
		one := make([]string, len(c.slots)*width)
		pos := make([]int32, len(c.slots)*width)
		for i := range c.slots {
			sl := &c.slots[i]
			prev := sl.vals
			lo, hi := i*width, (i+1)*width
			copy(pos[lo:hi:hi], sl.pos[:old])
			sl.vals, sl.one, sl.pos = vals[lo:hi:hi], one[lo:hi:hi], pos[lo:hi:hi]
			for j, v := range prev {
				if len(v) == 1 {
					sl.setVals(j, v) // into the new storage
				} else {
					sl.vals[j] = v // already the slot's own
				}
			}
		}
		c.vals, c.one, c.pos = vals, one, pos
	}
}
