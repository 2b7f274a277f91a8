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
//
// The primary table is built a length at a time, in the order the codes
// are numbered (by length, then symbol): the slots indexed by the first
// l bits are copied into those of the first l+1 (a code of l bits or
// fewer fills both halves), and then each code of l+1 bits takes the one
// slot no shorter code did. Each slot is written by a copy, and each code
// once, where filling every slot of each code took a store a slot (1,024
// for the literals' table alone): for the small blocks of a watch's
// events, a member each, that was most of what building their tables
// cost.
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
	complete := kraft == 1<<maxCodeLen
	if maxLen != 0 && !complete && !(maxLen == 1 && count[1] == 1) {
		return false
	}
	p := min(primary, max(maxLen, 1))
	t.primary, t.mask = p, 1<<p-1
	t.t = slices.Grow(t.t[:0], 1<<p)[:1<<p]
	if !complete {
		// No code (every lookup fails), or one of one bit: the input
		// bit 0 is it, and 1 fails.
		for i := range t.t {
			t.t[i] = entryInvalid | uint32(p)
		}
		for sym, l := range lengths {
			if l != 0 {
				t.t[0] = info[sym] | 1
			}
		}
		return true
	}
	// The symbols in the order of their codes.
	var start [maxCodeLen + 2]int // where the codes of each length start in sorted
	for l := 1; l <= maxCodeLen; l++ {
		start[l+1] = start[l] + count[l]
	}
	var sorted [288]uint16
	next := start
	for sym, l := range lengths {
		if l != 0 {
			sorted[next[l]] = uint16(sym)
			next[l]++
		}
	}
	code, size := 0, 0 // the next code; the slots filled so far, if any
	for l := uint(1); l <= p; l++ {
		if size > 0 {
			copy(t.t[size:2*size], t.t[:size])
			size *= 2
		} else if count[l] > 0 {
			size = 1 << l
		}
		for _, sym := range sorted[start[l]:start[l+1]] {
			t.t[bits.Reverse16(uint16(code))>>(16-l)] = info[sym] | uint32(l)
			code++
		}
		code <<= 1
	}
	if maxLen <= p {
		return true
	}
	// The codes longer than p bits, in sub-tables linked from the slots
	// of their first p bits. Those are the p-bit prefixes no shorter code
	// took, from the next code of p bits on, and hold what a previous
	// build left there: cleared first.
	for c := code >> 1; c < 1<<p; c++ {
		t.t[bits.Reverse16(uint16(c))>>(16-p)] = entryInvalid
	}
	subBits := maxLen - p
	long := sorted[start[p+1]:start[maxLen+1]]
	for l := p + 1; l <= maxLen; l++ {
		for range count[l] {
			rev := uint(bits.Reverse16(uint16(code)) >> (16 - l))
			code++
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
			e := info[long[0]] | uint32(l-p)
			long = long[1:]
			for i := rev >> p; i < 1<<subBits; i += 1 << (l - p) {
				t.t[off+i] = e
			}
		}
		code <<= 1
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
