package informer

import (
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/typedkube/informer/wire"
)

// A Store counts the bytes its entries hold (Stats.StoreBytes) when it is
// given an objectSizer: each entry's, kept in its slot, so that a delete
// or a replace takes away what the add counted; their sum is kept as the
// Store changes. What the Store spends on an entry is counted when it is
// stored (see entrySize), a few additions. The object's own bytes, a walk
// of its fields (wire.Sizer.Size), are counted when the count is read, for
// the objects stored since the last read only (see sizeObjects): a write
// costs no walk, and an object replaced before anyone asked is never
// walked. Reading the count costs one walk per object stored since the
// last read, none under the Store's write lock, and what the shared bytes
// cost to add up.

// objectSizer tells a Store the bytes of its objects.
type objectSizer[T any] struct {
	// size returns the heap bytes obj holds, such as wire.Sizer.Size;
	// nil: the Store counts no bytes.
	size func(obj T) int
	// shared returns the bytes the objects share, counted once rather
	// than per object: the tables of the decoder that made them
	// (wire.Decoder.SharedBytes); nil if none.
	shared func() int
	// written counts the maps the objects shared that the decoder found
	// written to (wire.Decoder.SharedMapsWritten); nil if none are shared.
	written func() uint64
}

// plainSizer returns the objectSizer of T that knows no sharing: an
// estimate for objects not decoded by package wire (client-go's codecs,
// typed and dynamic clients, informertest).
func plainSizer[T any]() objectSizer[T] {
	return objectSizer[T]{size: wire.NewSizer[T]().Size}
}

// decoderSizer returns the objectSizer of the objects dec decodes, which
// counts what dec shares once.
func decoderSizer[T any](dec *wire.Decoder[T]) objectSizer[T] {
	return objectSizer[T]{size: dec.Sizer().Size, shared: dec.SharedBytes, written: dec.SharedMapsWritten}
}

// setSizer makes s count the bytes of its objects with sz. s must be
// empty.
func (s *Store[T]) setSizer(sz objectSizer[T]) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.sizer = sz
}

// What a Store spends per entry besides its object, as measured on Go
// 1.26 (see TestStoreBytesMatchesHeap): its slot, with one index value
// slice, single value and bucket position per index (in arena chunks);
// its key in the items map and the key's string; a pointer in one bucket
// per index; and its labels in the label index.
const (
	itemsEntryBytes = 62 // a map[string]*slot entry, at the map's load
	indexEntryBytes = 24 + 16 + 4 + 10
	labelEntryBytes = 18
)

// entrySize returns the bytes an entry of key holds besides its object
// (counted by sizeObjects; in a compact store its record is counted by
// compactState.bytes), with width indexes and nlabels labels: what the
// Store spends on it. It is 0 when s counts no bytes. The caller holds
// writeMu.
func (s *Store[T]) entrySize(key string, width, nlabels int) uint32 {
	if s.sizer.size == nil && s.compact == nil {
		return 0
	}
	n := int(unsafe.Sizeof(slot[T]{})) + itemsEntryBytes + stringBytes(len(key)) +
		width*indexEntryBytes + nlabels*labelEntryBytes
	return uint32(min(n, math.MaxUint32))
}

// sizeObjects counts the bytes of the objects stored since it last ran:
// it notes them under the read lock, walks them with no lock held (stored
// objects are never modified), and adds their counts under the write lock
// to the slots that still hold them. A decoded store only.
func (s *Store[T]) sizeObjects() {
	if s.sizer.size == nil || s.compact != nil {
		return
	}
	type pending struct {
		sl  *slot[T]
		obj T
		ver uint32
		n   uint32
	}
	var todo []pending
	s.mu.RLock()
	for _, sl := range s.items {
		if sl.objSize == 0 {
			todo = append(todo, pending{sl: sl, obj: sl.obj, ver: sl.ver})
		}
	}
	s.mu.RUnlock()
	if len(todo) == 0 {
		return
	}
	for i := range todo {
		todo[i].n = uint32(max(min(s.sizer.size(todo[i].obj), math.MaxUint32), 1))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range todo {
		// A slot deleted since holds no object; one written since holds
		// another, of another version, and is counted by the next read.
		if sl := p.sl; sl.ver == p.ver && sl.objSize == 0 && s.items[sl.key] == sl {
			sl.objSize = p.n
			s.bytes.Add(int64(p.n))
		}
	}
}

// stringBytes is the heap bytes of a string of n bytes: short ones are
// packed by the allocator, others rounded up to 8 bytes at least.
func stringBytes(n int) int {
	if n < 16 {
		return n
	}
	return (n + 15) &^ 15
}

// storeBytes returns the bytes the Store's cache holds, 0 if it counts
// none: its entries (entrySize), what its objects share, the label index's
// memo, and in a compact store its records, the runs they share and the
// objects its codec keeps decoded.
func (s *Store[T]) storeBytes() int64 {
	s.sizeObjects()
	n := s.bytes.Load()
	if s.sizer.shared != nil {
		n += int64(s.sizer.shared())
	}
	if s.compact != nil {
		_, b := s.Compact()
		n += b + int64(s.compact.codec.DecodedBytes())
	}
	if s.sizer.size != nil || s.compact != nil {
		s.mu.RLock()
		n += int64(s.labels.memoBytes())
		s.mu.RUnlock()
	}
	return n
}

// objectSizer returns the objectSizer of the objects d decodes. It settles
// d (see wireDecoding.settle) only once its informer has started, when its
// transform is final; until then it counts as plainSizer does, and what d
// shares as 0.
func (d *wireDecoding[T]) objectSizer() objectSizer[T] {
	plain := wire.NewSizer[T]()
	var settled atomic.Pointer[wire.Decoder[T]]
	var sizer atomic.Pointer[wire.Sizer[T]]
	decoder := func() *wire.Decoder[T] {
		if dec := settled.Load(); dec != nil {
			return dec
		}
		inf := d.inf.Load()
		if inf == nil || !inf.isStarted() {
			return nil
		}
		dec, _ := d.settle()
		sizer.Store(dec.Sizer())
		settled.Store(dec)
		return dec
	}
	return objectSizer[T]{
		size: func(obj T) int {
			if decoder() == nil {
				return plain.Size(obj)
			}
			return sizer.Load().Size(obj)
		},
		shared: func() int {
			if dec := decoder(); dec != nil {
				return dec.SharedBytes()
			}
			return 0
		},
		written: func() uint64 {
			if dec := decoder(); dec != nil {
				return dec.SharedMapsWritten()
			}
			return 0
		},
	}
}

// sharedMapsWritten returns what Stats.SharedMapsWritten reports.
func (s *Store[T]) sharedMapsWritten() uint64 {
	if s.sizer.written == nil {
		return 0
	}
	return s.sizer.written()
}

// isStarted reports whether the informer has started: its transform can
// no longer change.
func (s *SharedIndexInformer[T]) isStarted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}
