package wire

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// decodedCache bounds how many records hold a decoded object: a ring of the
// records that do, swept by a clock hand. A record read since the hand last
// passed (hot) gets another turn; the first one that was not gives its
// place, and its decoded object, to the record added. A hit costs the
// reader an atomic load, and a store the first time after each pass.
//
// Invariant: a record holds a decoded object iff it is in the ring, but
// for the moment between a decode that sets it and the add that follows.
type decodedCache struct {
	mu   sync.Mutex // guards ring and hand
	ring []*Record
	hand int
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
		atomic.StorePointer(&v.obj, nil)
		v.hot.Store(false)
	}
	c.ring[c.hand] = r
	c.hand = (c.hand + 1) % len(c.ring)
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

// each calls f with the decoded object of every record in the ring.
func (c *decodedCache) each(f func(obj unsafe.Pointer)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.ring {
		if r == nil {
			continue
		}
		if p := r.cached(); p != nil {
			f(p)
		}
	}
}
