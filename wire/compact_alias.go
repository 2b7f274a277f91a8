package wire

import (
	"sort"
	"unsafe"
)

// Strings over a record's memory. A Record never changes once made, so the
// strings of an object decoded from it need not be copies: each can be
// made over the record's own bytes, or over the shared run it lies in,
// with unsafe.String. A decoding then allocates no string, and looks up
// none in the decoder's table of shared strings.
//
// The object keeps that memory alive for as long as it lives, after the
// record has left the store too: the record's own bytes (its encoding
// minus the shared runs, which are mostly the strings its object does not
// share with others) and the runs its strings lie in. That is about what
// copies of its strings would hold. A map the decoder's table of shared
// maps remembers keeps it alive as well, until the table lets the map go
// (see mapTable: a bounded number of maps).
//
// A decoding reads the record's encoding put back together in a buffer
// (see Record.appendSegments); an aliases maps a string read there to the
// record's memory. A string that lies across two segments (one that reads
// as a message, split inside) is copied, as are bytes, which a reader
// could write to: strings only.

// segment is one run of a record's encoding, as a buffer holds it: its
// end in the buffer, and the record's memory it is a copy of.
type segment struct {
	end int
	p   unsafe.Pointer
}

// aliases maps the bytes of a buffer holding a record's encoding to the
// record's memory. A nil *aliases maps nothing.
type aliases struct {
	buf  []byte    // the buffer
	segs []segment // buf's segments, in order, from offset 0
	// at is the segment of the last string found, where str looks first:
	// a decoding reads the buffer from start to end, so the next string
	// is mostly in that segment or one of the few after it.
	at int
}

// str returns the string of v, a subslice of a.buf, made over the record's
// memory, and true; false if v is not in a.buf or lies across two
// segments.
func (a *aliases) str(v []byte) (string, bool) {
	if a == nil {
		return "", false
	}
	if len(v) == 0 {
		return "", true
	}
	base, p := uintptr(unsafe.Pointer(unsafe.SliceData(a.buf))), uintptr(unsafe.Pointer(unsafe.SliceData(v)))
	if p < base || p-base >= uintptr(len(a.buf)) {
		return "", false
	}
	off := int(p - base)
	i := a.at
	if i > len(a.segs) || i > 0 && off < a.segs[i-1].end {
		i = sort.Search(len(a.segs), func(i int) bool { return a.segs[i].end > off })
	} else {
		for i < len(a.segs) && a.segs[i].end <= off {
			i++
		}
	}
	a.at = i
	if i == len(a.segs) || off+len(v) > a.segs[i].end {
		return "", false
	}
	start := 0
	if i > 0 {
		start = a.segs[i-1].end
	}
	return unsafe.String((*byte)(unsafe.Add(a.segs[i].p, off-start)), len(v)), true
}

// appendSegments is AppendTo into dst[:0], which also returns the
// segments of the encoding in dst, appended to segs[:0].
func (r *Record) appendSegments(dst []byte, segs []segment) ([]byte, []segment) {
	dst, segs = dst[:0], segs[:0]
	ownBytes := r.own()
	own := unsafe.Pointer(r.data)
	from := 0
	for rf := range r.eachRef {
		if at := int(rf.at); at > from {
			dst = append(dst, ownBytes[from:at]...)
			segs = append(segs, segment{end: len(dst), p: unsafe.Add(own, from)})
			from = at
		}
		dst = append(dst, unsafe.String(rf.p, rf.n)...)
		segs = append(segs, segment{end: len(dst), p: unsafe.Pointer(rf.p)})
	}
	if from < len(ownBytes) {
		dst = append(dst, ownBytes[from:]...)
		segs = append(segs, segment{end: len(dst), p: unsafe.Add(own, from)})
	}
	return dst, segs
}
