package gunzip

import (
	"math/bits"
	"slices"
)

// A table decodes one Huffman code: indexed by the next primary bits of
// the input (least significant first, as deflate packs codes), an entry
// says how many bits the code takes and what it stands for. A code longer
// than primary bits has a link entry pointing at a sub-table, indexed by
// the bits after the primary ones.
//
// An entry is a uint32:
//
//	bits 0-4    bits taken by this lookup (a link's: the primary bits)
//	bits 5-8    extra bits after the code (a length's or a distance's;
//	            a link's: its sub-table's index bits)
//	bits 9-12   kind flags (entryLink, entryInvalid, entryEnd, entryLiteral)
//	bits 16-31  value: a literal byte, a length's or distance's base, or a
//	            link's sub-table offset
type table struct {
	t       []uint32
	primary uint // bits of the primary index; mask is 1<<primary - 1
	mask    uint64
}

const (
	entryLink    = 1 << 9
	entryInvalid = 1 << 10
	entryEnd     = 1 << 11
	entryLiteral = 1 << 12
)

// entry makes an entry of kind flags, value v, n bits taken and extra
// bits after.
func entry(v uint32, n, extra uint, flags uint32) uint32 {
	return v<<16 | uint32(extra)<<5 | uint32(n) | flags
}

const maxCodeLen = 15

// build makes t the table of the code whose lengths are given, symbol by
// symbol, with at most primary bits of primary index; info gives each
// symbol's entry but for its bits taken. It reports false for a code that
// is over-subscribed or incomplete, but for the two cases deflate
// decoders accept: no code at all (a table every lookup of which fails)
// and a single code of one bit.
func (t *table) build(lengths []uint8, primary uint, info []uint32) bool {
	var count [maxCodeLen + 1]int
	maxLen := uint(0)
	for _, l := range lengths {
		if l != 0 {
			count[l]++
			maxLen = max(maxLen, uint(l))
		}
	}
	kraft := 0
	for l := 1; l <= maxCodeLen; l++ {
		kraft += count[l] << (maxCodeLen - l)
	}
	if maxLen != 0 && kraft != 1<<maxCodeLen && !(maxLen == 1 && count[1] == 1) {
		return false
	}
	p := min(primary, max(maxLen, 1))
	t.primary, t.mask = p, 1<<p-1
	t.t = slices.Grow(t.t[:0], 1<<p)[:1<<p]
	complete := kraft == 1<<maxCodeLen
	if !complete {
		// Some index has no code: a lookup of it fails, after p bits.
		for i := range t.t {
			t.t[i] = entryInvalid | uint32(p)
		}
		if maxLen == 0 {
			return true
		}
	}
	var next [maxCodeLen + 2]int
	code := 0
	for l := 1; l <= maxCodeLen; l++ {
		code = (code + count[l-1]) << 1
		next[l] = code
	}
	subBits := uint(0)
	if maxLen > p {
		subBits = maxLen - p
	}
	// Each symbol's code, reversed as the input holds it; a complete
	// code's entries are all written below but for the links, whose slots
	// are cleared first, as they may hold a previous build's.
	var revs [288]uint16
	for sym, l := range lengths {
		if l != 0 {
			revs[sym] = bits.Reverse16(uint16(next[l])) >> (16 - l)
			next[l]++
			if uint(l) > p {
				t.t[uint(revs[sym])&uint(t.mask)] = entryInvalid
			}
		}
	}
	for sym, l8 := range lengths {
		if l8 == 0 {
			continue
		}
		l, rev := uint(l8), uint(revs[sym])
		if l <= p {
			e := info[sym] | uint32(l)
			for i := rev; i < 1<<p; i += 1 << l {
				t.t[i] = e
			}
			continue
		}
		head := rev & uint(t.mask)
		link := t.t[head]
		if link&entryLink == 0 { // the first code of this prefix: a sub-table for it
			off := len(t.t)
			for range 1 << subBits {
				t.t = append(t.t, entryInvalid|uint32(subBits))
			}
			link = entry(uint32(off), p, subBits, entryLink)
			t.t[head] = link
		}
		off := uint(link >> 16)
		e := info[sym] | uint32(l-p)
		for i := rev >> p; i < 1<<subBits; i += 1 << (l - p) {
			t.t[off+i] = e
		}
	}
	return true
}

// The entries' information, symbol by symbol, for the literal/length
// code, the distance code and the code of code lengths.
var litInfo, distInfo, clenInfo [288]uint32

// The fixed codes of a block of BTYPE 01.
var fixedLit, fixedDist table

func init() {
	for s := range 256 {
		litInfo[s] = entry(uint32(s), 0, 0, entryLiteral)
	}
	litInfo[256] = entry(0, 0, 0, entryEnd)
	lengthBase := [...]uint32{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra := [...]uint{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	for i := range lengthBase {
		litInfo[257+i] = entry(lengthBase[i], 0, lengthExtra[i], 0)
	}
	litInfo[286], litInfo[287] = entryInvalid, entryInvalid
	distBase := [...]uint32{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	for i := range distBase {
		extra := uint(0)
		if i >= 4 {
			extra = uint(i/2 - 1)
		}
		distInfo[i] = entry(distBase[i], 0, extra, 0)
	}
	distInfo[30], distInfo[31] = entryInvalid, entryInvalid
	for s := range 19 {
		clenInfo[s] = entry(uint32(s), 0, 0, 0)
	}

	var lengths [288]uint8
	for i := range lengths {
		switch {
		case i < 144:
			lengths[i] = 8
		case i < 256:
			lengths[i] = 9
		case i < 280:
			lengths[i] = 7
		default:
			lengths[i] = 8
		}
	}
	fixedLit.t = make([]uint32, 0, 1<<litPrimary)
	fixedLit.build(lengths[:], litPrimary, litInfo[:])
	for i := range 32 {
		lengths[i] = 5
	}
	fixedDist.t = make([]uint32, 0, 1<<5)
	fixedDist.build(lengths[:32], distPrimary, distInfo[:])
}

const (
	litPrimary  = 10
	distPrimary = 8
	clenPrimary = 7
)
