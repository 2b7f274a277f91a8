package wire

import (
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
// Layout: own holds the object's bytes minus the shared runs, in order;
// refs[i] says that a shared run of refs[i].n bytes goes before own[refs[i].at:],
// the refs in order of position. The encoding is own with each run put
// back where its ref says: Bytes returns it.
type Record struct {
	own  string
	refs []ref
	// obj is the decoded object while the record is in its Compact's
	// cache of decoded objects, nil otherwise: a *P, written with atomic
	// operations.
	obj unsafe.Pointer
	// size is the length of the encoding; json tells a JSON one.
	size uint32
	// place is 1 + the record's index in its Compact's cache ring, 0
	// while it is not there; the cache's lock guards it.
	place uint32
	// kind is 1 + the index of the object's TypeMeta in its Compact's
	// table of kinds, for a protobuf record made by Encode of an object
	// that had one (protobuf has no TypeMeta); 0 otherwise.
	kind uint16
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

// recordHeader is what a Record costs besides its bytes: the struct itself,
// as the allocator rounds it.
const recordHeader = 64

// refSize is the size of one ref.
const refSize = int(unsafe.Sizeof(ref{}))

// Len returns the length of the record's encoding.
func (r *Record) Len() int { return int(r.size) }

// JSON reports whether the record holds JSON rather than protobuf.
func (r *Record) JSON() bool { return r.json }

// Bytes returns what the record holds on its own: its struct, the bytes it
// does not share, and its refs to those it does, as the allocator rounds
// their blocks. The shared runs are counted by the Compact that made it
// (see Compact.SharedBytesOf), once for all the records that point at them.
func (r *Record) Bytes() int {
	return recordHeader + allocBytes(len(r.own)) + allocBytes(refSize*len(r.refs))
}

// AppendTo appends the record's encoding to dst.
func (r *Record) AppendTo(dst []byte) []byte {
	from := 0
	for _, rf := range r.refs {
		dst = append(dst, r.own[from:rf.at]...)
		dst = append(dst, unsafe.String(rf.p, rf.n)...)
		from = int(rf.at)
	}
	return append(dst, r.own[from:]...)
}

// Shared returns how many runs the record shares with others and their
// total length.
func (r *Record) Shared() (runs, bytes int) {
	for _, rf := range r.refs {
		bytes += int(rf.n)
	}
	return len(r.refs), bytes
}

// holds reports whether p points into the record's memory: its own bytes
// or a run it shares, where the strings of an object decoded from it are
// made (see aliases).
func (r *Record) holds(p unsafe.Pointer) bool {
	in := func(start unsafe.Pointer, n int) bool {
		return uintptr(p) >= uintptr(start) && uintptr(p) < uintptr(start)+uintptr(n)
	}
	if len(r.own) > 0 && in(unsafe.Pointer(unsafe.StringData(r.own)), len(r.own)) {
		return true
	}
	for _, rf := range r.refs {
		if in(unsafe.Pointer(rf.p), int(rf.n)) {
			return true
		}
	}
	return false
}

// cached returns the decoded object the record caches, nil if none.
func (r *Record) cached() unsafe.Pointer { return atomic.LoadPointer(&r.obj) }
