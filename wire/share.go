package wire

import (
	"encoding/binary"
	"hash/maphash"
	"reflect"
	"slices"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mapSet is one set of a four-way set-associative table of maps made for
// runs of map entries: four maps, each with its type and its run, the least
// recently used replaced. Runs that fall in one set (an object's labels and
// its annotations, say, or a Pod's many ResourceLists) do not evict each
// other object after object, unless five or more of one object do. With
// two ways, three of a realistic Pod's maps did for about one table seed in
// 2,000, and its next Pod shared none of them (TestResourceListSharing).
type mapSet struct {
	ways [4]mapSlot
	// used is the set's clock at each way's last use, 0 for never. After
	// 2^32 uses of one set the clock wraps, and a replacement or two may
	// take a way that is not the least recently used: a miss, never a
	// wrong map.
	used  [4]uint32
	clock uint32
}

// mapSlot is a map the table remembers. Its key is its type and the bytes
// it was made for, which it keeps and compares whole: the maps of two types
// whose entries are the same bytes on the wire (a corev1.ResourceList and
// the unnamed map type under it, in a projection) are never one, and a hit
// is never a map made of other bytes.
type mapSlot struct {
	typ unsafe.Pointer // the descriptor of the map's type
	run string         // the bytes the map was made for
	h   uint64         // the hash of those bytes (see mapTable.find)
	m   unsafe.Pointer // the map, a value of typ; nil: the way is empty
	// snap is what a hit compares the map with (see intact).
	snap mapSnapshot
}

// get returns the map of type typ the set remembers for run, of hash h,
// nil if none; a hit makes its way the most recently used. A map found
// changed since it was remembered, written to through an object that
// holds it (which the objects' contract forbids), is forgotten and counted
// in *written: it holds what that write put there, not what run says.
func (set *mapSet) get(typ unsafe.Pointer, run []byte, h uint64, written *uint64) unsafe.Pointer {
	for w := range set.ways {
		slot := &set.ways[w]
		if slot.m == nil || slot.typ != typ || slot.h != h || slot.run != string(run) {
			continue
		}
		if !slot.snap.intact(slot.m) {
			*written++
			set.ways[w], set.used[w] = mapSlot{}, 0
			return nil
		}
		set.clock++
		set.used[w] = set.clock
		return slot.m
	}
	return nil
}

// put remembers m, a map of type t (whose descriptor is typ), for run, of
// hash h, in place of the set's least recently used way; the set keeps
// run, as kept if it is not "" (a string over the same bytes that may be
// kept) or a copy.
func (set *mapSet) put(typ unsafe.Pointer, t reflect.Type, run []byte, kept string, h uint64, m unsafe.Pointer) {
	snap := snapshotMap(t, m)
	if kept == "" {
		kept = string(run)
	}
	w := 0
	for i, u := range set.used {
		if u < set.used[w] {
			w = i
		}
	}
	set.clock++
	set.ways[w] = mapSlot{typ: typ, run: kept, h: h, m: m, snap: snap}
	set.used[w] = set.clock
}

// mapSnapshot is what tells whether a shared map has been written to since
// it was remembered. The common maps, of string keys and values (labels,
// annotations, node selectors) or of string keys and Quantity values
// (ResourceLists), by the hash of their memory (see mapSum): each entry's
// strings by where their bytes are, a Quantity by its fields, so that any
// entry added, removed or set anew, even to an equal value, shows; others
// by a copy through reflect, compared entry by entry.
type mapSnapshot struct {
	sum  uint64        // mapSum of a map of strings or of Quantities
	val  reflect.Value // a copy of any other map
	kind mapKind       // which of the above
	t    reflect.Type  // the map's type, for kind otherMap
}

// mapKind is how a map's entries are compared.
type mapKind uint8

const (
	stringMap   mapKind = iota // string keys and string values
	quantityMap                // string keys and resource.Quantity values
	otherMap
)

// kindOfMap returns how the entries of maps of type t are compared.
func kindOfMap(t reflect.Type) mapKind {
	if t.Key().Kind() != reflect.String {
		return otherMap
	}
	switch {
	case t.Elem().Kind() == reflect.String:
		return stringMap
	case t.Elem() == quantityType:
		return quantityMap
	}
	return otherMap
}

// snapshotMap returns a snapshot of m, a map of type t. The maps of string
// keys are read as maps of string keys and the same values: their
// types differ from those in names only, and the runtime lays them out and
// hashes their keys alike.
func snapshotMap(t reflect.Type, m unsafe.Pointer) mapSnapshot {
	sn := mapSnapshot{kind: kindOfMap(t), t: t}
	if sn.kind != otherMap {
		sn.sum = mapSum(sn.kind, unsafe.Pointer(&m))
		return sn
	}
	mm := m // only this branch's copy escapes, not every call's m
	v := reflect.NewAt(t, unsafe.Pointer(&mm)).Elem()
	sn.val = reflect.MakeMapWithSize(t, v.Len())
	for it := v.MapRange(); it.Next(); {
		sn.val.SetMapIndex(it.Key(), it.Value())
	}
	return sn
}

// bytes returns the heap bytes of the snapshot's copy: its entries refer
// to the map's keys and values, which it does not count.
func (sn *mapSnapshot) bytes() int {
	if !sn.val.IsValid() {
		return 0
	}
	var plain Sizer[map[string]string] // knows of no sharing
	m := sn.val.UnsafePointer()
	return plain.walk(sizePlanOf(sn.t), unsafe.Pointer(&m))
}

// intact reports whether m holds what it held when the snapshot was taken.
func (sn *mapSnapshot) intact(m unsafe.Pointer) bool {
	if sn.kind != otherMap {
		return mapSum(sn.kind, unsafe.Pointer(&m)) == sn.sum
	}
	return otherMapIntact(sn, m)
}

// otherMapIntact is intact for a map of kind otherMap: its copy of m
// escapes, where intact's m would escape for every call.
func otherMapIntact(sn *mapSnapshot, m unsafe.Pointer) bool {
	v := reflect.NewAt(sn.t, unsafe.Pointer(&m)).Elem()
	return v.Len() == sn.val.Len() && reflect.DeepEqual(v.Interface(), sn.val.Interface())
}

// mapTable remembers the maps made for recent runs of map entries, of any
// map type: a four-way set-associative table of bounded size, keyed by the
// map's type and the entries' bytes, which it keeps to compare, so a hit
// is never a wrong map. A map is a pointer to the runtime's map, which the
// table holds as an unsafe.Pointer (and so keeps alive) whatever its type.
type mapTable struct {
	seed maphash.Seed
	sets []mapSet
	once []onceSet // the hashes of runs met once, recently (see find)
	keys []string  // scratch of share
	buf  []byte    // scratch of share
	// written counts the maps found written to since they were
	// remembered (see mapSet.get).
	written uint64
}

const (
	mapSets   = 1 << 7 // of four ways: 512 maps
	mapMaxRun = 2048   // longer runs are not shared
	// mapOnceSets is the size of the table of runs met once, in sets of
	// four hashes: 512 runs.
	mapOnceSets = 1 << 7
)

// stringMapDescriptor is the descriptor of map[string]string.
var stringMapDescriptor = typeDescriptor(stringMapType)

func newMapTable() *mapTable {
	return &mapTable{seed: maphash.MakeSeed(), sets: make([]mapSet, mapSets), once: make([]onceSet, mapOnceSets)}
}

// find returns the set of the map of type typ (a descriptor) made for
// run, nil if run is not to be shared, and the map remembered for them,
// nil if none; a hit makes its way the most recently used. A run enters
// the table the second time it comes, not the first: a map each object
// has its own of (a ConfigMap's data, a StatefulSet Pod's labels) would
// otherwise cost a copy of its bytes and push out maps that repeat.
func (t *mapTable) find(typ unsafe.Pointer, run []byte) (*mapSet, uint64, unsafe.Pointer) {
	if len(run) > mapMaxRun {
		return nil, 0, nil
	}
	// The type's address, mixed into the high bits a set is not chosen
	// by, then folded down: maps of two types with equal runs fall in
	// different sets, most often, and do not evict each other.
	h := maphash.Bytes(t.seed, run) ^ (uint64(uintptr(typ))*0x9e3779b97f4a7c15)>>32
	set := &t.sets[h&(mapSets-1)]
	if m := set.get(typ, run, h, &t.written); m != nil {
		return set, h, m
	}
	if !t.once[h>>40&(mapOnceSets-1)].seenBefore(h | 1) { // never 0, which is none
		return nil, h, nil
	}
	return set, h, nil
}

// share replaces the map at m, decoded from JSON, by an equal one seen
// recently, or remembers it. Its key is the entries in key order, each key
// and value preceded by its length, so that no two maps have one key.
func (t *mapTable) share(m *map[string]string) {
	if len(*m) == 0 {
		return
	}
	t.keys = t.keys[:0]
	n := 0
	for k, v := range *m {
		t.keys = append(t.keys, k)
		n += len(k) + len(v) + 2*binary.MaxVarintLen64
	}
	if n > mapMaxRun {
		clear(t.keys)
		return
	}
	slices.Sort(t.keys)
	t.buf = t.buf[:0]
	for _, k := range t.keys {
		v := (*m)[k]
		t.buf = append(binary.AppendUvarint(t.buf, uint64(len(k))), k...)
		t.buf = append(binary.AppendUvarint(t.buf, uint64(len(v))), v...)
	}
	clear(t.keys)
	ptr := unsafe.Pointer(m)
	if set, h, seen := t.find(stringMapDescriptor, t.buf); seen != nil {
		*(*unsafe.Pointer)(ptr) = seen
	} else if set != nil {
		set.put(stringMapDescriptor, stringMapType, t.buf, "", h, *(*unsafe.Pointer)(ptr))
	}
}

// quantityType is the type of the values of a corev1.ResourceList.
var quantityType = reflect.TypeFor[resource.Quantity]()

// quantityDec is the index of the field of resource.Quantity that holds
// its value as an *inf.Dec (a struct embedding the pointer), or -1 if the
// type has no such field as this package knows it.
var quantityDec = func() int {
	f, ok := quantityType.FieldByName("d")
	if !ok || len(f.Index) != 1 || f.Type.Kind() != reflect.Struct || f.Type.NumField() != 1 || f.Type.Field(0).Type.Kind() != reflect.Pointer {
		return -1
	}
	return f.Index[0]
}()

// quantityHoldsDec reports whether v, a resource.Quantity, holds its value
// as an *inf.Dec, and so must not be shared between objects. It does when
// its value does not fit an int64 and a scale: more digits than an int64
// holds, or a fraction of a binary suffix ("1.5Gi", though the API server
// writes that one "1536Mi"). A copy of a Quantity shares its *inf.Dec, and
// Add, Sub and Neg on a copy (q := list[name]; q.Add(x), or the copy that
// ResourceList.Cpu returns) change the Dec in place, in every object whose
// map holds it. A Quantity kept as an int64 and a scale (most are: "250m",
// "512Mi") holds no pointer, and a copy of it is its own. Only read, a Dec
// would be safe to share (String caches its form in the Quantity it is
// called on, which for a map's value is always a copy); but a reader may
// compute with a copy of a map's values.
func quantityHoldsDec(v reflect.Value) bool {
	if quantityDec < 0 {
		return true // not known: never shared
	}
	return !v.Field(quantityDec).Field(0).IsNil()
}

// bytesTable shares byte slices between objects: the FieldsV1 of
// managedFields, which are the same for the Pods of one ReplicaSet (the
// controller's create) and differ only in their timestamps. A slice equal
// to one made recently is that slice, whose bytes are never written again:
// the decoder replaces a shared slice rather than write into it, and the
// objects are read-only.
//
// A four-way set-associative table, the least recently used way replaced,
// of bounded size: it keeps at most bytesBudget bytes (4 MiB), in slices
// of at most bytesMaxLen, which the objects share and which it keeps,
// after they have gone, until other slices replace them. With four ways,
// the creates of dozens of ReplicaSets whose Pods come interleaved (a
// watch) stay in the table together.
//
// Bytes enter the table the second time they come, not the first: many
// come once (the kubelet's entry names the Pod's IP), and would otherwise
// push out, one Pod after another, those that repeat. Those seen once are
// remembered by their hash alone, in once: four to a set, the oldest
// replaced, so that two that fall in one set (two ReplicaSets' creates,
// interleaved) do not forget each other before they come again.
type bytesTable struct {
	seed  maphash.Seed
	sets  []bytesSet
	once  []onceSet
	held  int    // the bytes of the slices in sets
	clock uint64 // ticks at every use of a way
}

// onceSet holds hashes of bytes seen once recently; 0 is none.
type onceSet struct {
	h    [4]uint64
	next uint8 // the one to replace next
}

type bytesSet struct {
	ways [4]bytesSlot
}

type bytesSlot struct {
	run  string // the slice's bytes, the slice itself seen as a string
	v    []byte
	used uint64 // the clock at its last use; 0: empty
	// fv is the FieldsV1 of v that objects share, made the first time
	// one is decoded once v is here; nil until then (see fieldsV1).
	fv *metav1.FieldsV1
}

const (
	bytesSets   = 1 << 7   // of four ways: 512 slices
	bytesMaxLen = 32 << 10 // longer slices are not shared
	bytesBudget = 4 << 20  // the bytes the table keeps at most
	bytesOnce   = 1 << 8   // sets of four hashes of bytes seen once
)

func newBytesTable() *bytesTable {
	return &bytesTable{seed: maphash.MakeSeed(), sets: make([]bytesSet, bytesSets), once: make([]onceSet, bytesOnce)}
}

// seenBefore reports whether the hash h (never 0) was seen, and forgets
// it if so; if not, it remembers it in place of the oldest of its set.
func (t *bytesTable) seenBefore(h uint64) bool {
	return t.once[h>>32&(bytesOnce-1)].seenBefore(h)
}

// seenBefore reports whether the set holds the hash h (never 0), and
// forgets it if so; if not, it puts h in place of the oldest it holds.
func (set *onceSet) seenBefore(h uint64) bool {
	for i, x := range set.h {
		if x == h {
			set.h[i] = 0
			return true
		}
	}
	set.h[set.next] = h
	set.next = (set.next + 1) % uint8(len(set.h))
	return false
}

// get returns a slice equal to b that the object may keep: one made for
// equal bytes recently, or a new copy, which it remembers if it has seen
// the bytes once before. It is never nil.
func (t *bytesTable) get(b []byte) []byte {
	v, _ := t.getSlot(b)
	return v
}

// getSlot is get, which also returns the slot that holds the slice it
// returns, nil if none does.
func (t *bytesTable) getSlot(b []byte) ([]byte, *bytesSlot) {
	if len(b) == 0 {
		return []byte{}, nil
	}
	if len(b) > bytesMaxLen {
		return cloneBytes(b), nil
	}
	h := maphash.Bytes(t.seed, b)
	set := &t.sets[h&(bytesSets-1)]
	t.clock++
	oldest := &set.ways[0]
	for w := range set.ways {
		slot := &set.ways[w]
		if slot.used != 0 && slot.run == string(b) {
			slot.used = t.clock
			return slot.v, slot
		}
		if slot.used < oldest.used {
			oldest = slot
		}
	}
	v := cloneBytes(b)
	if !t.seenBefore(h | 1) { // never 0, which is none
		return v, nil
	}
	if t.held-len(oldest.v)+len(v) > bytesBudget {
		return v, nil
	}
	t.held += len(v) - len(oldest.v)
	// The key is the copy itself, seen as a string: it is never written.
	*oldest = bytesSlot{run: unsafe.String(unsafe.SliceData(v), len(v)), v: v, used: t.clock}
	return v, oldest
}

// cloneBytes returns a copy of b whose capacity is its length, so that an
// append to it copies.
func cloneBytes(b []byte) []byte {
	v := append([]byte(nil), b...)
	return v[:len(v):len(v)]
}
