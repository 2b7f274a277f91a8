package wire

import (
	"strconv"
	"testing"
	"unsafe"
)

// collidingStrings returns n distinct strings that meet in one set of the
// interner.
func collidingStrings(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	set := internSet(hashString("value-0"))
	for k := 0; len(out) < n; k++ {
		if k > 1<<24 {
			t.Fatalf("found %d strings in set %d, want %d", len(out), set, n)
		}
		if s := "value-" + strconv.Itoa(k); internSet(hashString(s)) == set {
			out = append(out, s)
		}
	}
	return out
}

// intern gets s from in, as the decoder reads it from a buffer of its own.
func intern(in *interner, s string) string { return in.get([]byte(s)) }

// same reports whether a and b are the one string in memory.
func same(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// A set keeps two strings: a string handed out again is held as shared,
// and strings that come for its set take the way of the string handed out
// less, not its own; of two strings handed out, a newcomer takes one from
// the count of the one handed out less, and its way once that count is
// used up; a string not handed out again gives way to the second string
// that comes after it.
func TestInternerKeepsStringsHandedOut(t *testing.T) {
	strs := collidingStrings(t, 12)
	in := newInterner()
	kept := intern(in, strs[0])
	for range 3 {
		if got := intern(in, strs[0]); !same(got, kept) {
			t.Fatal("the string was not handed out again")
		}
	}
	if !in.holds(kept) {
		t.Fatal("a string handed out again is not held as shared")
	}
	// Strings that come once come and go in the other way.
	var last string
	for k, s := range strs[1:9] {
		if last = intern(in, s); in.holds(last) || !in.holds(kept) {
			t.Fatalf("newcomer %d took the way of a string handed out 3 times", k)
		}
	}
	// The last of them is in the other way: handed out again, it is
	// shared, and the next newcomer takes its count, the one after that
	// its way.
	other := intern(in, strs[8])
	if !same(other, last) || !in.holds(other) {
		t.Fatal("the other way's string was not handed out again, or is not held")
	}
	if got := intern(in, strs[9]); in.holds(got) || !in.holds(other) || !in.holds(kept) {
		t.Fatal("a newcomer took a way whose string's count was not used up")
	}
	intern(in, strs[9])
	if in.holds(other) || !in.holds(kept) {
		t.Error("the string handed out less kept its way once its count was used up, or the other gave way")
	}
	// A string not handed out again gives way to the second that comes.
	in = newInterner()
	once := intern(in, strs[10])
	intern(in, strs[11])
	if got := intern(in, strs[10]); !same(got, once) {
		t.Error("a string handed out once gave way to the first newcomer of its set")
	}
	in = newInterner()
	once = intern(in, strs[10])
	intern(in, strs[11])
	intern(in, strs[1])
	if got := intern(in, strs[10]); same(got, once) {
		t.Error("a string handed out once kept its way against two newcomers")
	}
}

// A count of hand-outs saturates: of two strings handed out more often
// than a mark counts, the one that came first gives way after internUses
// newcomers, no later.
func TestInternerUsesSaturate(t *testing.T) {
	strs := collidingStrings(t, 3)
	in := newInterner()
	first := intern(in, strs[0])
	second := intern(in, strs[1])
	for range 3 * internUses {
		intern(in, strs[0])
		intern(in, strs[1])
	}
	for range internUses {
		intern(in, strs[2])
		if !in.holds(first) || !in.holds(second) {
			t.Fatal("a string handed out many times gave way")
		}
	}
	intern(in, strs[2])
	if in.holds(first) {
		t.Error("a string kept its way against more newcomers than its count")
	}
	if !in.holds(second) {
		t.Error("the string that came second gave way")
	}
}

// The set of a string depends on each of its bytes: strings that differ
// in one byte, anywhere, spread over the sets. Taken from a hash's low
// bits, the slot left out bytes 6 and 7 of a string's first and last
// eight: the host IPs 172.20.0.15 and 172.20.0.35 met in one slot, and
// evicted each other all through a list of 10,000 Pods.
func TestInternerSlotsTakeEveryByte(t *testing.T) {
	for pos := range 16 {
		sets := map[uint64]bool{}
		b := []byte("0123456789abcdef")
		for c := range 64 {
			b[pos] = byte('0' + c)
			sets[internSet(hashBytes(b))] = true
		}
		if len(sets) < 60 {
			t.Errorf("64 strings that differ in byte %d meet in %d sets", pos, len(sets))
		}
	}
	sets := map[uint64]bool{}
	for i := range 100 {
		sets[internSet(hashString("172.20.0."+strconv.Itoa(10+i)))] = true
	}
	if len(sets) < 95 {
		t.Errorf("100 host IPs meet in %d sets", len(sets))
	}
}

// valuesInOneSet allocates values until n of them are in one set of the
// message table's shared values.
func valuesInOneSet(t *testing.T, tab *msgTable, n int) []unsafe.Pointer {
	t.Helper()
	var out []unsafe.Pointer
	var set *[4]sharedMsg
	for k := 0; len(out) < n; k++ {
		if k > 1<<22 {
			t.Fatalf("found %d values in one set, want %d", len(out), n)
		}
		p := unsafe.Pointer(new([16]byte))
		if s := tab.sharedMsgSet(p); set == nil || s == set {
			set = s
			out = append(out, p)
		}
	}
	return out
}

// A value handed out to many objects keeps its place among the shared
// values against values two objects share; values handed out once give
// way to newer ones, the least recent first; one whose hand-outs stopped
// keeps its place against as many hand-outs of values not in the set as
// it had.
func TestSharedMsgsKeepValuesHandedOutMost(t *testing.T) {
	tab := newMsgTable()
	vals := valuesInOneSet(t, tab, 12)
	note := func(p unsafe.Pointer, times int) {
		for range times {
			tab.noteShared(sharedMsg{p: p})
		}
	}
	note(vals[0], 10)
	for _, p := range vals[1:9] {
		note(p, 1)
	}
	if !tab.holds(vals[0]) {
		t.Fatal("a value handed out 10 times gave way to values handed out once")
	}
	// Each newcomer took one from the count of the least recent of the
	// values handed out once, or, that count used up, its place: the
	// first two gave way, to the fifth and seventh values.
	for _, p := range vals[1:3] {
		if tab.holds(p) {
			t.Errorf("value %p, handed out once, is held after 6 newer ones", p)
		}
	}
	if !tab.holds(vals[7]) || tab.holds(vals[8]) {
		t.Error("the newcomers did not take the places of the values handed out once in turn, every second one")
	}
	// Values whose hand-outs stopped, 3 each: the least recent keeps its
	// place against 3 hand-outs of a newcomer, which takes it at its
	// fourth.
	tab = newMsgTable()
	for _, p := range vals[:4] {
		note(p, 3)
	}
	for k := 1; k <= 3; k++ {
		note(vals[4], 1)
		if tab.holds(vals[4]) {
			t.Fatalf("a newcomer took a place at its hand-out %d, from values handed out 3 times", k)
		}
	}
	note(vals[4], 1)
	if !tab.holds(vals[4]) || tab.holds(vals[0]) {
		t.Error("a newcomer handed out 4 times did not take the place of the least recent value handed out 3 times")
	}
}
