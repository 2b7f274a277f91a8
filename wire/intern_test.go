package wire

import (
	"strconv"
	"testing"
	"unsafe"
)

// collidingStrings returns n distinct strings that meet in one slot of the
// interner.
func collidingStrings(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	slot := internSlot(hashString("value-0"))
	for k := 0; len(out) < n; k++ {
		if k > 1<<24 {
			t.Fatalf("found %d strings in slot %d, want %d", len(out), slot, n)
		}
		if s := "value-" + strconv.Itoa(k); internSlot(hashString(s)) == slot {
			out = append(out, s)
		}
	}
	return out
}

// intern gets s from in, as the decoder reads it from a buffer of its own.
func intern(in *interner, s string) string { return in.get([]byte(s)) }

// A string handed out again keeps its slot against as many strings that
// come for it as it was handed out; one that was not gives way to the
// first. The string a slot keeps stays shared, for a Sizer, until it
// gives way.
func TestInternerKeepsStringsHandedOut(t *testing.T) {
	strs := collidingStrings(t, 8)
	in := newInterner()
	kept := intern(in, strs[0])
	for range 3 {
		if got := intern(in, strs[0]); unsafe.StringData(got) != unsafe.StringData(kept) {
			t.Fatal("the string was not handed out again")
		}
	}
	if !in.holds(kept) {
		t.Fatal("a string handed out again is not held as shared")
	}
	for k, s := range strs[1:4] {
		got := intern(in, s)
		if in.holds(got) || unsafe.StringData(intern(in, strs[0])) != unsafe.StringData(kept) {
			t.Fatalf("newcomer %d took the slot of a string handed out 3 times", k)
		}
		// The hand-out just done counts again: take it back with one
		// more newcomer, so that each newcomer of the loop finds one
		// fewer.
		intern(in, strs[7])
	}
	if !in.holds(kept) {
		t.Fatal("the string kept lost its mark of shared")
	}
	// Its hand-outs are used up: the next string takes the slot.
	next := intern(in, strs[4])
	if in.holds(kept) {
		t.Error("a string whose hand-outs were used up is still held")
	}
	if got := intern(in, strs[4]); unsafe.StringData(got) != unsafe.StringData(next) {
		t.Error("the string that took the slot is not handed out again")
	}
	// A string not handed out again gives way to the first that comes.
	in = newInterner()
	once := intern(in, strs[5])
	intern(in, strs[6])
	if got := intern(in, strs[5]); unsafe.StringData(got) == unsafe.StringData(once) {
		t.Error("a string handed out once kept its slot against a newcomer")
	}
}

// A count of hand-outs saturates: a string handed out more often than a
// mark counts stays shared and keeps its slot against internUses
// newcomers.
func TestInternerUsesSaturate(t *testing.T) {
	strs := collidingStrings(t, 2)
	in := newInterner()
	kept := intern(in, strs[0])
	for range 3 * internUses {
		intern(in, strs[0])
	}
	for range internUses {
		intern(in, strs[1])
		if !in.holds(kept) {
			t.Fatal("a string handed out many times gave way")
		}
	}
	intern(in, strs[1])
	if in.holds(kept) {
		t.Error("a string kept its slot against more newcomers than its count")
	}
}

// The slot of a string depends on each of its bytes: strings that differ
// in one byte, anywhere, spread over the slots. Taken from a hash's low
// bits, the slot left out bytes 6 and 7 of a string's first and last
// eight: the host IPs 172.20.0.15 and 172.20.0.35 met in one slot, and
// evicted each other all through a list of 10,000 Pods.
func TestInternerSlotsTakeEveryByte(t *testing.T) {
	for pos := range 16 {
		slots := map[uint64]bool{}
		b := []byte("0123456789abcdef")
		for c := range 64 {
			b[pos] = byte('0' + c)
			slots[internSlot(hashBytes(b))] = true
		}
		if len(slots) < 60 {
			t.Errorf("64 strings that differ in byte %d meet in %d slots", pos, len(slots))
		}
	}
	slots := map[uint64]bool{}
	for i := range 100 {
		slots[internSlot(hashString("172.20.0."+strconv.Itoa(10+i)))] = true
	}
	if len(slots) < 95 {
		t.Errorf("100 host IPs meet in %d slots", len(slots))
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
