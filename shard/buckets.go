package shard

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// Key is the object field whose hash places an object in the hash space,
// as the API server's shard selectors name it.
type Key string

const (
	// KeyUID hashes metadata.uid: objects spread evenly, and each object
	// stays where it is for its whole life.
	KeyUID Key = "object.metadata.uid"
	// KeyNamespace hashes metadata.namespace: a namespace's objects share
	// one owner.
	KeyNamespace Key = "object.metadata.namespace"
)

// Hash is the 64-bit FNV-1a hash of s, the hash the API server places
// objects with (apimachinery's sharding.HashField, as a number).
func Hash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// Range is a part [Start, End) of the 64-bit hash space. End 0 stands for
// 2^64, the end of the space.
type Range struct {
	Start, End uint64
}

// Contains reports whether h is in r.
func (r Range) Contains(h uint64) bool {
	return h >= r.Start && (r.End == 0 || h < r.End)
}

// String is r as a shardRange's bounds: 0x-prefixed, 16 lowercase hex
// digits, and 0x10000000000000000 for the end of the space.
func (r Range) String() string { return fmt.Sprintf("[%s, %s)", hexStart(r.Start), hexEnd(r.End)) }

func hexStart(v uint64) string { return fmt.Sprintf("0x%016x", v) }

func hexEnd(v uint64) string {
	if v == 0 {
		return "0x10000000000000000"
	}
	return hexStart(v)
}

// Buckets is a set of the equal parts (buckets) the hash space is cut in:
// bucket i of n holds the hashes whose top log2(n) bits are i. The zero
// value is the empty set of no buckets. A Buckets is immutable once built.
type Buckets struct {
	n    int
	bits []uint64
}

// newBuckets returns the empty set of n buckets.
func newBuckets(n int) Buckets { return Buckets{n: n, bits: make([]uint64, (n+63)/64)} }

// allBuckets returns the set of all n buckets.
func allBuckets(n int) Buckets {
	b := newBuckets(n)
	for i := range n {
		b.bits[i/64] |= 1 << (i % 64)
	}
	return b
}

// validBucketCount reports an error unless n is a power of two in [1, 4096].
func validBucketCount(n int) error {
	if n < 1 || n > 4096 || n&(n-1) != 0 {
		return fmt.Errorf("%w: Buckets %d is not a power of two between 1 and 4096", ErrInvalidOptions, n)
	}
	return nil
}

// N is the number of buckets the space is cut in.
func (b Buckets) N() int { return b.n }

// Has reports whether bucket i is in b.
func (b Buckets) Has(i int) bool {
	return i >= 0 && i < b.n && b.bits[i/64]&(1<<(i%64)) != 0
}

// HasHash reports whether the bucket of hash h is in b.
func (b Buckets) HasHash(h uint64) bool {
	if b.n == 0 {
		return false
	}
	return b.Has(bucketOf(h, b.n))
}

// bucketOf is the bucket of hash h among n (a power of two).
func bucketOf(h uint64, n int) int {
	if n == 1 {
		return 0
	}
	return int(h >> (64 - bits.TrailingZeros(uint(n))))
}

// Len is the number of buckets in b.
func (b Buckets) Len() int {
	c := 0
	for _, w := range b.bits {
		c += bits.OnesCount64(w)
	}
	return c
}

// Empty reports whether b has no bucket.
func (b Buckets) Empty() bool { return b.Len() == 0 }

// Share is the part of the hash space b covers, in [0, 1].
func (b Buckets) Share() float64 {
	if b.n == 0 {
		return 0
	}
	return float64(b.Len()) / float64(b.n)
}

func (b Buckets) with(i int) Buckets {
	c := b.clone()
	c.bits[i/64] |= 1 << (i % 64)
	return c
}

func (b Buckets) clone() Buckets {
	return Buckets{n: b.n, bits: append([]uint64(nil), b.bits...)}
}

// combine returns the set op(b, o) word by word; b and o have the same n,
// or one is the zero Buckets (taken as empty).
func (b Buckets) combine(o Buckets, op func(x, y uint64) uint64) Buckets {
	n := max(b.n, o.n)
	r := newBuckets(n)
	for i := range r.bits {
		var x, y uint64
		if i < len(b.bits) {
			x = b.bits[i]
		}
		if i < len(o.bits) {
			y = o.bits[i]
		}
		r.bits[i] = op(x, y)
	}
	return r
}

// Union is b ∪ o.
func (b Buckets) Union(o Buckets) Buckets {
	return b.combine(o, func(x, y uint64) uint64 { return x | y })
}

// Minus is b \ o.
func (b Buckets) Minus(o Buckets) Buckets {
	return b.combine(o, func(x, y uint64) uint64 { return x &^ y })
}

// Intersect is b ∩ o.
func (b Buckets) Intersect(o Buckets) Buckets {
	return b.combine(o, func(x, y uint64) uint64 { return x & y })
}

// Equal reports whether b and o hold the same buckets.
func (b Buckets) Equal(o Buckets) bool {
	return b.Minus(o).Empty() && o.Minus(b).Empty()
}

// Ranges returns the hash ranges b covers, adjacent buckets merged, in
// order.
func (b Buckets) Ranges() []Range {
	var out []Range
	if b.n == 0 {
		return nil
	}
	width := uint64(1) << (64 - bits.TrailingZeros(uint(b.n))) // 0 when n == 1: the whole space
	for i := 0; i < b.n; i++ {
		if !b.Has(i) {
			continue
		}
		j := i
		for j+1 < b.n && b.Has(j+1) {
			j++
		}
		out = append(out, Range{Start: uint64(i) * width, End: uint64(j+1) * width}) // wraps to 0 at the end
		i = j
	}
	return out
}

// Selector is b as a ListOptions.ShardSelector over key: one shardRange
// per range, joined with " || ", as the API server echoes it; "" for no
// bucket (which a server would read as everything: never send it).
func (b Buckets) Selector(key Key) string {
	var sb strings.Builder
	for i, r := range b.Ranges() {
		if i > 0 {
			sb.WriteString(" || ")
		}
		fmt.Fprintf(&sb, "shardRange(%s, '%s', '%s')", key, hexStart(r.Start), hexEnd(r.End))
	}
	return sb.String()
}

// String lists b's ranges.
func (b Buckets) String() string {
	rs := b.Ranges()
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.String()
	}
	return fmt.Sprintf("%d/%d buckets %s", b.Len(), b.n, strings.Join(parts, " "))
}

// encode is b as hex words, for a Lease annotation: n, ":", then the
// words, most significant bucket last.
func (b Buckets) encode() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d:", b.n)
	for _, w := range b.bits {
		fmt.Fprintf(&sb, "%016x", w)
	}
	return sb.String()
}

// decodeBuckets reads what encode wrote.
func decodeBuckets(s string) (Buckets, error) {
	nText, words, ok := strings.Cut(s, ":")
	n, err := strconv.Atoi(nText)
	if !ok || err != nil || validBucketCount(n) != nil {
		return Buckets{}, fmt.Errorf("shard: malformed bucket set %q", s)
	}
	b := newBuckets(n)
	if len(words) != 16*len(b.bits) {
		return Buckets{}, fmt.Errorf("shard: malformed bucket set %q", s)
	}
	for i := range b.bits {
		if b.bits[i], err = strconv.ParseUint(words[16*i:16*i+16], 16, 64); err != nil {
			return Buckets{}, fmt.Errorf("shard: malformed bucket set %q: %w", s, err)
		}
	}
	if n < 64 && b.bits[0]>>n != 0 {
		return Buckets{}, fmt.Errorf("shard: malformed bucket set %q: bucket beyond %d", s, n)
	}
	return b, nil
}
