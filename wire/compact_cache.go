package wire

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// decodedCache bounds how many records hold a decoded object: a ring of the
// records that do, swept by a clock hand. A record read since the hand last
// passed (hot) gets another turn; the first one that was not gives its
// place, and its decoded object, to the record added. A record that has
// left its store gives its place back at once (forget), and the next record
// added takes a place given back before the hand evicts anyone: a store
// whose objects fit in the ring keeps them all decoded, however often they
// change. A hit costs the reader an atomic load, and a store the first time
// after each pass.
//
// Invariant: a record holds a decoded object iff it is in the ring, but
// for the moment between a decode that sets it and the add that follows;
// a record in the ring is at ring[place-1].
type decodedCache struct {
	mu   sync.Mutex // guards ring, hand, free and the records' place
	ring []*Record
	hand int
	// free holds the places given back, all empty: add fills them
	// before the hand evicts anyone.
	free []uint32
}

func newDecodedCache(n int) decodedCache { return decodedCache{ring: make([]*Record, n)} }

// add puts r, which holds a decoded object, in the ring.
func (c *decodedCache) add(r *Record) {
	if len(c.ring) == 0 {
		atomic.StorePointer(&r.obj, nil)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.free); n > 0 {
		i := c.free[n-1]
		c.free = c.free[:n-1]
		c.ring[i], r.place = r, i+1
		return
	}
	// Two turns at most: the first clears every hot mark, unless readers
	// set them again as fast, and the second then takes the place it is at.
	for range 2 * len(c.ring) {
		v := c.ring[c.hand]
		if v != nil && v.hot.Load() {
			v.hot.Store(false)
			c.hand = (c.hand + 1) % len(c.ring)
			continue
		}
		break
	}
	if v := c.ring[c.hand]; v != nil {
		drop(v)
	}
	c.ring[c.hand], r.place = r, uint32(c.hand)+1
	c.hand = (c.hand + 1) % len(c.ring)
}

// forget takes r, which has left its store, out of the ring, dropping its
// decoded object, and gives its place back.
func (c *decodedCache) forget(r *Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.place == 0 {
		return
	}
	i := r.place - 1
	c.ring[i] = nil
	drop(r)
	c.free = append(c.free, i)
}

// drop makes r, leaving its place in the ring, let go of its decoded
// object. The caller holds the cache's lock.
func drop(r *Record) {
	atomic.StorePointer(&r.obj, nil)
	r.hot.Store(false)
	r.place = 0
}

// len returns how many records the ring holds.
func (c *decodedCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.ring {
		if r != nil {
			n++
		}
	}
	return n
}

// each calls f with every record in the ring and its decoded object.
func (c *decodedCache) each(f func(r *Record, obj unsafe.Pointer)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.ring {
		if r == nil {
			continue
		}
		if p := r.cached(); p != nil {
			f(r, p)
		}
	}
}
