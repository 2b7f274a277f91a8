package wire

import (
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Hashing a small map from its memory. mapSum hashes a map's entries by
// ranging over them, and the runtime's iterator costs more than the
// hashing: checking that a shared map was not written to was most of what
// a hit in the map table cost, 0.75 µs of a compact manager's 27 µs per
// Pod (a Pod's labels, annotations and ResourceLists, each checked when it
// is handed out). Most such maps hold a few entries and were made with no
// more than eight: the runtime keeps those in one group of eight slots,
// each with a control byte that tells whether it holds an entry. Such a
// map's entries are read from its slots, and hashed as mapSum hashes them
// (the same sum, in no order), without the iterator; a map of more entries,
// or one that grew past one group, has a directory of tables instead, and
// is ranged over.
//
// That memory is the runtime's own and may be laid out otherwise by
// another Go release or platform (a 32-bit one has smaller slots, a
// big-endian one numbers the control bytes from the other end): smallMaps
// checks, once, that maps of both kinds of up to eight entries are laid
// out as read here (the entries read from the slots are the map's, and
// their sum is the ranged one), and mapSum ranges over every map
// otherwise.

// mapHeader is the start of the runtime's map header (internal/runtime/maps.Map).
type mapHeader struct {
	used   uint64 // entries
	_      uintptr
	dirPtr unsafe.Pointer // the group of a small map, else the directory
	dirLen int            // 0 for a small map
}

// The slots of the two kinds of maps mapSum hashes, as the runtime lays
// one out: a key, then a value.
type (
	stringSlot   struct{ k, v string }
	quantitySlot struct {
		k string
		v resource.Quantity
	}
)

const (
	groupSlots = 8 // slots in a group, after its 8 control bytes
	// ctrlEmpty is set in the control byte of a slot that holds no
	// entry; a full slot's byte has it clear.
	ctrlEmpty = 0x80
)

// slotSize returns the size of a slot of a map of kind.
func slotSize(kind mapKind) uintptr {
	if kind == stringMap {
		return unsafe.Sizeof(stringSlot{})
	}
	return unsafe.Sizeof(quantitySlot{})
}

// smallMaps reports whether the runtime lays out maps as smallMapSum
// reads them (see checkSmallMaps).
var smallMaps = checkSmallMaps()

// smallMapSum is mapSum of the map at p, of kind stringMap or
// quantityMap, read from its memory; ok is false if the map is not a
// small one (or this runtime's maps are not laid out as this file reads
// them), which mapSum then hashes by its entries.
func smallMapSum(kind mapKind, p unsafe.Pointer) (sum uint64, ok bool) {
	m := *(*unsafe.Pointer)(p)
	if m == nil || !smallMaps {
		return 0, false
	}
	return groupSum(kind, (*mapHeader)(m))
}

// groupSum hashes the map whose header is hdr from its group, if it has
// one (the sum rangeMapSum makes of it); smallMapSum without the layout's
// check.
func groupSum(kind mapKind, hdr *mapHeader) (uint64, bool) {
	if hdr.dirLen != 0 || hdr.dirPtr == nil {
		return 0, false
	}
	size := slotSize(kind)
	s := hdr.used
	for i := range uintptr(groupSlots) {
		slot, full := fullSlot(hdr.dirPtr, i, size)
		if !full {
			continue
		}
		// Each entry as rangeMapSum hashes it, written out again: a
		// function of both, too large to inline, cost a call an entry
		// (19 -> 23 ns for a Pod's labels). checkSmallMaps holds the two
		// equal, and every map is ranged over if they are not.
		if kind == stringMap {
			e := (*stringSlot)(slot)
			s += finishSum(mixSum(stringSum(e.k, 1), stringSum(e.v, 2)))
		} else {
			e := (*quantitySlot)(slot)
			s += finishSum(quantitySum(&e.v, stringSum(e.k, 3)))
		}
	}
	return s, true
}

// fullSlot returns slot i, of size bytes, of the group at g, and whether
// it holds an entry.
func fullSlot(g unsafe.Pointer, i, size uintptr) (unsafe.Pointer, bool) {
	return unsafe.Add(g, groupSlots+i*size), *(*uint8)(unsafe.Add(g, i))&ctrlEmpty == 0
}

// checkSmallMaps reports whether maps of both kinds of up to eight
// entries are laid out as groupSum reads them: a header whose count is
// the map's length, and one group whose full slots hold exactly the map's
// entries, whose sum is the ranged one; and whether a map of nine has a
// directory.
func checkSmallMaps() bool {
	if unsafe.Sizeof(stringSlot{})%8 != 0 || unsafe.Sizeof(quantitySlot{})%8 != 0 ||
		unsafe.Offsetof(stringSlot{}.v) != 16 || unsafe.Offsetof(quantitySlot{}.v) != 16 {
		return false
	}
	keys := []string{"app", "tier", "zone", "pod-template-hash", "version", "team", "track", "release"}
	for n := 1; n <= groupSlots; n++ {
		sm := make(map[string]string)
		qm := make(map[string]resource.Quantity, n)
		for _, k := range keys[:n] {
			sm[k] = k + "-value"
			qm[k] = resource.MustParse("100m")
		}
		if !holdsEntries(stringMap, unsafe.Pointer(&sm), len(sm), func(slot unsafe.Pointer) bool {
			s := (*stringSlot)(slot)
			v, ok := sm[s.k]
			return ok && v == s.v && unsafe.StringData(v) == unsafe.StringData(s.v)
		}) || !holdsEntries(quantityMap, unsafe.Pointer(&qm), len(qm), func(slot unsafe.Pointer) bool {
			s := (*quantitySlot)(slot)
			v, ok := qm[s.k]
			return ok && v.Equal(s.v) && v.Format == s.v.Format
		}) {
			return false
		}
		delete(sm, keys[0]) // a slot emptied
		sm["added"] = "x"   // and one filled
		for _, m := range []struct {
			kind mapKind
			p    unsafe.Pointer
		}{{stringMap, unsafe.Pointer(&sm)}, {quantityMap, unsafe.Pointer(&qm)}} {
			if s, ok := groupSum(m.kind, *(**mapHeader)(m.p)); !ok || s != rangeMapSum(m.kind, m.p) {
				return false
			}
		}
	}
	big := make(map[string]string)
	for i := range groupSlots + 1 {
		big[string(rune('a'+i))] = ""
	}
	hdr := *(**mapHeader)(unsafe.Pointer(&big))
	return hdr.used == uint64(len(big)) && hdr.dirLen != 0
}

// holdsEntries reports whether the map at p, of kind and n entries, has a
// header and one group as groupSum reads them, whose full slots are n
// entries of the map, each as entry reports, and distinct.
func holdsEntries(kind mapKind, p unsafe.Pointer, n int, entry func(slot unsafe.Pointer) bool) bool {
	hdr := *(**mapHeader)(p)
	if hdr.used != uint64(n) || hdr.dirLen != 0 || hdr.dirPtr == nil {
		return false
	}
	seen := make(map[string]bool, n)
	for i := range uintptr(groupSlots) {
		slot, full := fullSlot(hdr.dirPtr, i, slotSize(kind))
		if !full {
			continue
		}
		k := *(*string)(slot)
		if !entry(slot) || seen[k] {
			return false
		}
		seen[k] = true
	}
	return len(seen) == n
}
