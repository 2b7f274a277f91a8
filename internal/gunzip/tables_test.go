package gunzip

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomCode returns the lengths of a complete prefix code of n symbols
// (2 <= n <= len(info)) no longer than maxLen bits, of a shape rnd picks, given to
// symbols it picks among size (the rest 0): a leaf split into two until
// there are n of them.
func randomCode(rnd *rand.Rand, n, size int, maxLen uint8) []uint8 {
	leaves := []uint8{0}
	for len(leaves) < n {
		i := rnd.IntN(len(leaves))
		if leaves[i] >= maxLen {
			// Split the shallowest leaf instead: one is below maxLen
			// while there are fewer than 2^maxLen leaves.
			i = slices.Index(leaves, slices.Min(leaves))
		}
		d := leaves[i] + 1
		leaves[i] = d
		leaves = append(leaves, d)
	}
	lengths := make([]uint8, size)
	for i, sym := range rnd.Perm(size)[:n] {
		lengths[sym] = leaves[i]
	}
	return lengths
}

// lookup returns what t says of the 15 bits in: its entry and the bits it
// takes, through a link if it has one.
func lookup(t *table, in uint64) (uint32, uint) {
	e := t.t[in&t.mask]
	n := uint(e & 31)
	if e&entryLink != 0 {
		e = t.t[uint(e>>16)+uint(in>>n&(1<<(e>>5&15)-1))]
		n += uint(e & 31)
	}
	return e &^ 31, n
}

// build gives the tables that writing each code's every slot gave
// (buildEachSlot, the way it was done before), looked up with every
// input of 15 bits, for complete codes of every shape, at every primary
// size; the same for the codes deflate accepts that are not complete, and
// the same refusals. The table built into is reused, as a Reader reuses
// its own, and holds a previous build's links.
func FuzzBuild(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3, 286, 30, 19} {
		f.Add(seed, uint16(seed))
	}
	f.Fuzz(func(t *testing.T, seed uint64, pick uint16) {
		rnd := rand.New(rand.NewPCG(seed, uint64(pick)))
		var got, want table
		for range 8 {
			size, maxLen, primary := 288, uint8(15), uint(1+rnd.IntN(12))
			switch rnd.IntN(3) {
			case 0:
				size, maxLen = 32, 15
			case 1:
				size, maxLen = 19, 7
			}
			var lengths []uint8
			switch rnd.IntN(8) {
			case 0: // any lengths: most are refused
				lengths = make([]uint8, size)
				for i := range lengths {
					lengths[i] = uint8(rnd.IntN(int(maxLen) + 1))
				}
			case 1: // none, or one code of one bit
				lengths = make([]uint8, size)
				if rnd.IntN(2) == 0 {
					lengths[rnd.IntN(size)] = 1
				}
			default:
				lengths = randomCode(rnd, 2+rnd.IntN(size-1), size, maxLen)
			}
			okGot := got.build(lengths, primary, litInfo[:])
			okWant := want.buildEachSlot(lengths, primary, litInfo[:])
			if okGot != okWant {
				t.Fatalf("lengths %v, primary %d: build reports %v, the old way %v", lengths, primary, okGot, okWant)
			}
			if !okGot {
				continue
			}
			if got.primary != want.primary {
				t.Fatalf("lengths %v: primary bits %d, the old way %d", lengths, got.primary, want.primary)
			}
			for in := range uint64(1 << 15) {
				ge, gn := lookup(&got, in)
				we, wn := lookup(&want, in)
				if ge != we || gn != wn {
					t.Fatalf("lengths %v, primary %d, input %015b: entry %#x of %d bits, the old way %#x of %d", lengths, primary, bits.Reverse16(uint16(in))>>1, ge, gn, we, wn)
				}
			}
		}
	})
}

// buildEachSlot is how build made a table before (2026-12-06 to 12-07):
// every slot of each code written in turn. FuzzBuild holds build to it.
func (t *table) buildEachSlot(lengths []uint8, primary uint, info []uint32) bool {
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
