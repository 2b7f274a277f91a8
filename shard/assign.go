package shard

import (
	"slices"
	"strings"
)

// Assign returns the buckets each member owns when the hash space is cut in
// n buckets (a power of two) and shared among members. It depends on the
// set of members only (not their order), so every replica that sees the
// same members computes the same assignment; every bucket has exactly one
// owner; each member owns at most ceil(n/len(members)) buckets; and a
// member joining or leaving moves few buckets besides those it takes or
// gives up.
//
// It is rendezvous hashing with bounded loads: each (member, bucket) pair
// has a pseudo-random score, and pairs are taken from the highest score
// down, skipping a bucket already owned and a member already full.
func Assign(members []string, n int) map[string]Buckets {
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	out := make(map[string]Buckets, len(ms))
	if len(ms) == 0 || validBucketCount(n) != nil {
		return out
	}
	type pair struct {
		score  uint64
		member int
		bucket int
	}
	pairs := make([]pair, 0, len(ms)*n)
	for mi, m := range ms {
		hm := Hash(m)
		for b := range n {
			pairs = append(pairs, pair{score: mix(hm ^ mix(uint64(b)+1)), member: mi, bucket: b})
		}
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		switch {
		case a.score != b.score:
			if a.score > b.score {
				return -1
			}
			return 1
		case a.member != b.member:
			return strings.Compare(ms[a.member], ms[b.member])
		}
		return a.bucket - b.bucket
	})
	capacity := (n + len(ms) - 1) / len(ms)
	load := make([]int, len(ms))
	owned := make([]bool, n)
	sets := make([]Buckets, len(ms))
	for i := range sets {
		sets[i] = newBuckets(n)
	}
	left := n
	for _, p := range pairs {
		if left == 0 {
			break
		}
		if owned[p.bucket] || load[p.member] == capacity {
			continue
		}
		owned[p.bucket] = true
		load[p.member]++
		sets[p.member].bits[p.bucket/64] |= 1 << (p.bucket % 64)
		left--
	}
	for i, m := range ms {
		out[m] = sets[i]
	}
	return out
}

// mix is SplitMix64's finalizer: it spreads the bits of x.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
