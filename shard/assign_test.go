package shard

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/sharding"
)

// TestAssignPartition: for member sets of 1 to 12 and every bucket count,
// each bucket has exactly one owner, no member exceeds ceil(n/m), and the
// order the members are given in does not matter.
func TestAssignPartition(t *testing.T) {
	for _, n := range []int{1, 2, 64, 128, 1024} {
		for m := 1; m <= 12; m++ {
			members := make([]string, m)
			for i := range members {
				members[i] = fmt.Sprintf("replica-%d", i)
			}
			a := Assign(members, n)
			rand.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
			b := Assign(members, n)
			all := newBuckets(n)
			for _, name := range members {
				set := a[name]
				if !set.Equal(b[name]) {
					t.Fatalf("n=%d m=%d: %s owns %v, and %v with the members in another order", n, m, name, set, b[name])
				}
				if !all.Intersect(set).Empty() {
					t.Fatalf("n=%d m=%d: %s owns buckets another member owns", n, m, name)
				}
				if capacity := (n + m - 1) / m; set.Len() > capacity {
					t.Fatalf("n=%d m=%d: %s owns %d buckets, more than %d", n, m, name, set.Len(), capacity)
				}
				all = all.Union(set)
			}
			if all.Len() != n {
				t.Fatalf("n=%d m=%d: %d buckets owned, want all %d", n, m, all.Len(), n)
			}
		}
	}
}

// TestAssignMovesLittle: a member joining or leaving a group moves at most
// a little more than the buckets it must take or give up (the ideal is
// 1/(m+1) of the space for a join of the (m+1)th member, 1/m for a leave).
func TestAssignMovesLittle(t *testing.T) {
	const n = 128
	names := func(m int) []string {
		out := make([]string, m)
		for i := range out {
			out[i] = fmt.Sprintf("controller-%c", 'a'+i)
		}
		return out
	}
	moved := func(a, b map[string]Buckets) int {
		c := 0
		for bucket := range n {
			var oa, ob string
			for m, s := range a {
				if s.Has(bucket) {
					oa = m
				}
			}
			for m, s := range b {
				if s.Has(bucket) {
					ob = m
				}
			}
			if oa != ob {
				c++
			}
		}
		return c
	}
	for m := 1; m < 10; m++ {
		small, big := Assign(names(m), n), Assign(names(m+1), n)
		ideal := float64(n) / float64(m+1)
		got := float64(moved(small, big))
		t.Logf("%d -> %d members: %v buckets moved, ideal %.1f", m, m+1, got, ideal)
		if got > 1.5*ideal+2 {
			t.Errorf("%d -> %d members moved %v buckets, ideal %.1f", m, m+1, got, ideal)
		}
	}
}

func TestBucketsRangesAndSelector(t *testing.T) {
	b := newBuckets(4).with(0).with(1).with(3)
	if got, want := b.Selector(KeyUID), "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"; got != want {
		t.Errorf("Selector = %q\nwant %q", got, want)
	}
	if got := allBuckets(1).Selector(KeyNamespace); got != "shardRange(object.metadata.namespace, '0x0000000000000000', '0x10000000000000000')" {
		t.Errorf("one bucket: %q", got)
	}
	for _, tc := range []struct {
		h    uint64
		want bool
	}{{0, true}, {0x7fffffffffffffff, true}, {0x8000000000000000, false}, {0xbfffffffffffffff, false}, {0xc000000000000000, true}, {^uint64(0), true}} {
		if got := b.HasHash(tc.h); got != tc.want {
			t.Errorf("HasHash(%#x) = %v", tc.h, got)
		}
		in := false
		for _, r := range b.Ranges() {
			in = in || r.Contains(tc.h)
		}
		if in != tc.want {
			t.Errorf("Ranges contain %#x: %v", tc.h, in)
		}
	}
	round, err := decodeBuckets(b.encode())
	if err != nil || !round.Equal(b) || round.N() != 4 {
		t.Errorf("decode(encode) = %v, %v", round, err)
	}
	for _, bad := range []string{"", "3:0000000000000000", "4:", "4:zz00000000000000", "4:0000000000000010", "x:0000000000000000",
		"4:1 zzzzzzzzzzzzzz", "4:+000000000000001", "4 :0000000000000001", "04x:0000000000000001"} {
		if _, err := decodeBuckets(bad); err == nil {
			t.Errorf("decodeBuckets(%q) succeeded", bad)
		}
	}
}

// TestHashMatchesAPIServer: Hash is FNV-1a as apimachinery's HashField
// prints it.
func TestHashMatchesAPIServer(t *testing.T) {
	for _, s := range []string{"", "a", "0b9c6c2e-6d41-4d2b-a2f4-1b0f7d4ec5a1", "kube-system"} {
		if got, want := fmt.Sprintf("%016x", Hash(s)), sharding.HashField(s); got != want {
			t.Errorf("Hash(%q) = %s, want %s", s, got, want)
		}
	}
}
