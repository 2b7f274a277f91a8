package informer

import (
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/typedkube/informer/wire"
)

// A Store counts the bytes its entries hold (Stats.StoreBytes) when it is
// given an objectSizer: each entry's, counted when it is stored (see
// entrySize) and kept in its slot, so that a delete or a replace takes
// away what the add counted; their sum is kept as the Store changes. The
// count costs a write one walk of the object's fields (wire.Sizer.Size)
// and no allocation; reading it costs what the shared bytes cost to add
// up.

// objectSizer tells a Store the bytes of its objects.
type objectSizer[T any] struct {
	// size returns the heap bytes obj holds, such as wire.Sizer.Size;
	// nil: the Store counts no bytes.
	size func(obj T) int
	// shared returns the bytes the objects share, counted once rather
	// than per object: the tables of the decoder that made them
	// (wire.Decoder.SharedBytes); nil if none.
	shared func() int
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
	return objectSizer[T]{size: dec.Sizer().Size, shared: dec.SharedBytes}
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

// entrySize returns the bytes an entry of key and obj holds, with width
// indexes and nlabels labels: what the Store spends on it and, unless s
// is compact (its record is counted by compactState.bytes), obj's. It is
// 0 when s counts no bytes. The caller holds writeMu.
func (s *Store[T]) entrySize(key string, obj T, width, nlabels int) uint32 {
	if s.sizer.size == nil && s.compact == nil {
		return 0
	}
	n := int(unsafe.Sizeof(slot[T]{})) + itemsEntryBytes + stringBytes(len(key)) +
		width*indexEntryBytes + nlabels*labelEntryBytes
	if s.compact == nil {
		n += s.sizer.size(obj)
	}
	return uint32(min(n, math.MaxUint32))
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
// none: its entries (entrySize), what its objects share, and in a compact
// store its records, the runs they share and the objects its codec keeps
// decoded.
func (s *Store[T]) storeBytes() int64 {
	n := s.bytes.Load()
	if s.sizer.shared != nil {
		n += int64(s.sizer.shared())
	}
	if s.compact != nil {
		_, b := s.Compact()
		n += b + int64(s.compact.codec.DecodedBytes())
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
	}
}

// isStarted reports whether the informer has started: its transform can
// no longer change.
func (s *SharedIndexInformer[T]) isStarted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}
