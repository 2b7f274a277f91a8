package wire

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// Record is one object at rest in a compact store: its encoding, protobuf
// (the bare message, as the API server sends it) or JSON, laid out so that
// the runs of bytes it has in common with other objects are kept once.
// A Record never changes once made, but for the decoded object it caches
// (see Compact). The runs it shares are plain memory that it points into,
// kept alive by the garbage collector as long as one record points there.
//
// Layout: the record's own bytes, the object's bytes minus the shared runs,
// in order, then, if it shares any, the uvarint of how many runs it shares
// and for each, in order of position, two uvarints: how many own bytes come
// before it since the run before it, and its length; all in one allocation
// the collector does not scan (data). runs points at the first of as many
// pointers to the runs' bytes or, when the record shares one run only (a
// ConfigMap's record, say), at that run's bytes, which saves the block of
// one pointer: an allocation per record and its 8 bytes. The encoding is
// the own bytes with each run put back where its ref says: AppendTo
// returns it. A ref costs its pointer and its two uvarints (2.35 bytes on
// average for realistic Pods), where an array of {at, n uint32; p *byte}
// cost 16 bytes a ref; the struct is 48 bytes with its two blocks'
// pointers and lengths, where a string and a slice made it 64.
type Record struct {
	data *byte // ownLen own bytes, then the refs' uvarints
	// runs is a **byte, the first of the pointers to the shared runs'
	// bytes, or the *byte of the one run if there is one (see eachRef). It
	// is an unsafe.Pointer so that a run's bytes, which need not be
	// aligned, are never taken for a pointer's place.
	runs unsafe.Pointer
	// obj is the decoded object while the record is in its Compact's
	// cache of decoded objects, nil otherwise: a *P, written with atomic
	// operations.
	obj unsafe.Pointer
	// ownLen is the length of the own bytes, dataLen that of data.
	ownLen, dataLen uint32
	// size is the length of the encoding.
	size uint32
	// place is 1 + the record's index in its Compact's cache ring, 0
	// while it is not there; the cache's lock guards it.
	place uint32
	// kind is 1 + the index of the object's TypeMeta in its Compact's
	// table of kinds, for a protobuf record made by Encode of an object
	// that had one (protobuf has no TypeMeta); 0 otherwise.
	kind uint16
	// json tells a JSON record.
	json bool
	// hot is set when the cached object is read, and cleared by the
	// cache's clock hand as it passes (see decodedCache).
	hot atomic.Bool
}

// ref is one shared run of a Record: n bytes at p, to be put at own[at:].
type ref struct {
	at uint32
	n  uint32
	p  *byte
}

// newRecord returns the record of an encoding of size bytes, json or
// protobuf, made of own and refs, which it copies.
func newRecord(own []byte, refs []ref, size int, json bool) *Record {
	r := &Record{ownLen: uint32(len(own)), size: uint32(size), json: json}
	n, at := len(own), uint32(0)
	if len(refs) > 0 {
		n += uvarintLen(uint64(len(refs)))
	}
	for _, rf := range refs {
		n += uvarintLen(uint64(rf.at-at)) + uvarintLen(uint64(rf.n))
		at = rf.at
	}
	if n > 0 {
		data := make([]byte, len(own), n)
		copy(data, own)
		if len(refs) > 0 {
			data = binary.AppendUvarint(data, uint64(len(refs)))
		}
		at = 0
		for _, rf := range refs {
			data = binary.AppendUvarint(data, uint64(rf.at-at))
			data = binary.AppendUvarint(data, uint64(rf.n))
			at = rf.at
		}
		r.data, r.dataLen = unsafe.SliceData(data), uint32(len(data))
	}
	switch len(refs) {
	case 0:
	case 1:
		r.runs = unsafe.Pointer(refs[0].p)
	default:
		runs := make([]*byte, len(refs))
		for i, rf := range refs {
			runs[i] = rf.p
		}
		r.runs = unsafe.Pointer(unsafe.SliceData(runs))
	}
	return r
}

// uvarintLen returns the length of the uvarint of v.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// own returns the record's own bytes.
func (r *Record) own() string { return unsafe.String(r.data, r.ownLen) }

// meta returns the record's refs' uvarints, after their count, and how
// many runs it shares.
func (r *Record) meta() ([]byte, int) {
	if r.dataLen == r.ownLen {
		return nil, 0
	}
	meta := unsafe.Slice(r.data, r.dataLen)[r.ownLen:]
	n, k := binary.Uvarint(meta)
	return meta[k:], int(n)
}

// eachRef calls yield with the record's refs, in order.
func (r *Record) eachRef(yield func(ref) bool) {
	meta, n := r.meta()
	if n == 0 {
		return
	}
	var one [1]*byte
	runs := one[:]
	if n == 1 {
		one[0] = (*byte)(r.runs)
	} else {
		runs = unsafe.Slice((**byte)(r.runs), n)
	}
	at := uint64(0)
	for _, p := range runs {
		d, k := binary.Uvarint(meta)
		size, l := binary.Uvarint(meta[k:])
		meta = meta[k+l:]
		at += d
		if !yield(ref{at: uint32(at), n: uint32(size), p: p}) {
			return
		}
	}
}

// recordHeader is what a Record costs besides its bytes: the struct itself,
// as the allocator rounds it.
const recordHeader = 48

// refSize is what one ref costs a record: its pointer and, about, its two
// uvarints.
const refSize = 8 + 3

// Len returns the length of the record's encoding.
func (r *Record) Len() int { return int(r.size) }

// JSON reports whether the record holds JSON rather than protobuf.
func (r *Record) JSON() bool { return r.json }

// Bytes returns what the record holds on its own: its struct, the bytes it
// does not share with its refs, and its pointers to the runs it shares, as
// the allocator rounds their blocks. The shared runs are counted by the
// Compact that made it (see Compact.SharedBytesOf), once for all the
// records that point at them.
func (r *Record) Bytes() int {
	_, n := r.meta()
	if n == 1 { // the one run's pointer is in the struct
		n = 0
	}
	return recordHeader + allocBytes(int(r.dataLen)) + allocBytes(8*n)
}

// AppendTo appends the record's encoding to dst.
func (r *Record) AppendTo(dst []byte) []byte {
	own, from := r.own(), 0
	for rf := range r.eachRef {
		dst = append(dst, own[from:rf.at]...)
		dst = append(dst, unsafe.String(rf.p, rf.n)...)
		from = int(rf.at)
	}
	return append(dst, own[from:]...)
}

// appendPlaced appends the record's encoding to dst, as AppendTo does, and
// its refs to refs, each with at its place in the encoding rather than in
// the own bytes.
func (r *Record) appendPlaced(dst []byte, refs []ref) ([]byte, []ref) {
	own, from, base := r.own(), 0, len(dst)
	for rf := range r.eachRef {
		dst = append(dst, own[from:rf.at]...)
		refs = append(refs, ref{at: uint32(len(dst) - base), n: rf.n, p: rf.p})
		dst = append(dst, unsafe.String(rf.p, rf.n)...)
		from = int(rf.at)
	}
	return append(dst, own[from:]...), refs
}

// Shared returns how many runs the record shares with others and their
// total length.
func (r *Record) Shared() (runs, bytes int) {
	for rf := range r.eachRef {
		bytes += int(rf.n)
		runs++
	}
	return runs, bytes
}

// holds reports whether p points into the record's memory: its own bytes
// or a run it shares, where the strings of an object decoded from it are
// made (see aliases).
func (r *Record) holds(p unsafe.Pointer) bool {
	in := func(start unsafe.Pointer, n int) bool {
		return uintptr(p) >= uintptr(start) && uintptr(p) < uintptr(start)+uintptr(n)
	}
	if r.ownLen > 0 && in(unsafe.Pointer(r.data), int(r.ownLen)) {
		return true
	}
	for rf := range r.eachRef {
		if in(unsafe.Pointer(rf.p), int(rf.n)) {
			return true
		}
	}
	return false
}

// cached returns the decoded object the record caches, nil if none.
func (r *Record) cached() unsafe.Pointer { return atomic.LoadPointer(&r.obj) }
