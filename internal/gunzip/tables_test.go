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

// build gives the tables the code's definition gives (byCode: each
// symbol's canonical code, as deflate assigns them, read from a flat table
// of every 15-bit input), looked up with every input of 15 bits, for
// complete codes of every shape, at every primary size; the same for the
// codes deflate accepts that are not complete, and refuses the others. The
// table built into is reused, as a Reader reuses its own, and holds a
// previous build's links.
func FuzzBuild(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3, 286, 30, 19} {
		f.Add(seed, uint16(seed))
	}
	f.Fuzz(func(t *testing.T, seed uint64, pick uint16) {
		rnd := rand.New(rand.NewPCG(seed, uint64(pick)))
		var got table
		want := make([]byCodeEntry, 1<<maxCodeLen)
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
			wantPrimary, okWant := byCode(want, lengths, primary, litInfo[:])
			if okGot != okWant {
				t.Fatalf("lengths %v, primary %d: build reports %v, the code's definition %v", lengths, primary, okGot, okWant)
			}
			if !okGot {
				continue
			}
			if got.primary != wantPrimary {
				t.Fatalf("lengths %v: primary bits %d, want %d", lengths, got.primary, wantPrimary)
			}
			for in := range uint64(1 << 15) {
				ge, gn := lookup(&got, in)
				if w := want[in]; ge != w.e || gn != w.n {
					t.Fatalf("lengths %v, primary %d, input %015b: entry %#x of %d bits, want %#x of %d", lengths, primary, bits.Reverse16(uint16(in))>>1, ge, gn, w.e, w.n)
				}
			}
		}
	})
}

// byCodeEntry is what a code says of one input: the entry, without its
// bits taken, and the bits taken.
type byCodeEntry struct {
	e uint32
	n uint
}

// byCode fills dec, indexed by every input of 15 bits (the first bit read
// first), with what the code of lengths says of it, as RFC 1951 defines
// the code: symbols get consecutive codes, shorter codes first and, among
// codes of one length, in symbol order. An input no code starts (a code
// that is not complete) fails after the primary bits. It returns the
// primary bits a table of the code has (at most primary, at most the
// longest code, at least 1), and false for a code deflate refuses: one
// over-subscribed or incomplete, but for none at all and a single code of
// one bit.
func byCode(dec []byCodeEntry, lengths []uint8, primary uint, info []uint32) (uint, bool) {
	var count [maxCodeLen + 1]int
	n, maxLen, kraft := 0, uint(0), 0
	for _, l := range lengths {
		if l != 0 {
			count[l]++
			n++
			maxLen = max(maxLen, uint(l))
			kraft += 1 << (maxCodeLen - l)
		}
	}
	if kraft != 1<<maxCodeLen && n != 0 && !(n == 1 && maxLen == 1) {
		return 0, false
	}
	p := min(primary, max(maxLen, 1))
	for i := range dec {
		dec[i] = byCodeEntry{entryInvalid, p}
	}
	var next [maxCodeLen + 1]int // the next code of each length
	for l, code := 1, 0; l <= maxCodeLen; l++ {
		code = (code + count[l-1]) << 1
		next[l] = code
	}
	for sym, l := range lengths {
		if l == 0 {
			continue
		}
		rev := int(bits.Reverse16(uint16(next[l])) >> (16 - l))
		next[l]++
		for in := rev; in < len(dec); in += 1 << l {
			dec[in] = byCodeEntry{info[sym] &^ 31, uint(l)}
		}
	}
	return p, true
}
