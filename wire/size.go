package wire

import (
	"hash/maphash"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"reflect"
	"sync"
	"time"
	"unsafe"
)

// A Sizer estimates the heap bytes a value of type T holds: the memory its
// pointers, slices, strings and maps reach, as the Go allocator rounds
// each block, without T's own inline bytes (see Size). It reads the value
// by a plan built once from T's type, as a Decoder's, so that the walk
// costs a visit of the fields that are set and no allocation.
//
// What it counts, per block reached:
//   - a string: its length, rounded to the allocator's size class; short
//     strings (under 16 bytes) by their length rounded to 8, as the
//     allocator aligns and packs them into shared 16-byte blocks;
//   - a slice: its capacity times its element's size, rounded;
//   - a pointer: its element's size, rounded, and what that reaches;
//   - a map: the Go runtime's layout (Go 1.24+ swiss tables, measured on
//     Go 1.26): 48 bytes of header, and for more than 0 entries one group
//     of 8 slots (8 bytes of control, 8 key-value slots, rounded) up to 8
//     entries; beyond, a table of the next power of two over 8/7 of the
//     entries, in groups, plus 40 bytes; then what keys and values reach;
//   - an interface: its dynamic value, walked by reflection (slower: only
//     for types that hold one, such as unstructured.Unstructured);
//   - nothing for time.Location pointers (time.Time's): they point at
//     process-wide locations.
//
// A Sizer from a Decoder (Decoder.Sizer) counts what the decoder shares
// between objects once, in Decoder.SharedBytes, and not per object:
// strings its string table holds, label and annotation maps it handed to
// more than one object, and the FieldsV1 bytes its table of them holds.
// A Sizer of its own (NewSizer) knows no sharing and counts everything.
//
// A Sizer is safe for concurrent use.
type Sizer[T any] struct {
	top *sizeType
	// shares is the decoder whose sharing the Sizer knows; nil if none.
	shares *sharing
	// rec, when set, is the record the object was decoded from: its
	// strings and bytes made over the record's memory are the record's,
	// counted with it (Record.Bytes), not with the object.
	rec *Record
}

// sizeType is the plan of one type: the parts of a value of it that reach
// heap memory. Nodes of struct types list their fields; others are one
// node.
type sizeType struct {
	kind   reflect.Kind
	size   uintptr      // the type's size
	typ    reflect.Type // for interface fallbacks and map layouts
	fields []sizeField  // reflect.Struct: the fields that reach memory
	elem   *sizeType    // slices, arrays, pointers: the element; maps: the value
	key    *sizeType    // maps: the key
	n      int          // arrays: the length
	slot   uintptr      // maps: the size of a key-value slot
	// leaf: a value of this type reaches no memory worth counting (no
	// pointers, or a type whose pointers are process-wide).
	leaf bool
	// stringMap: a map[string]string, which a decoder may share.
	stringMap bool
	// fieldsRaw: FieldsV1.Raw, which a decoder may share.
	fieldsRaw bool
	// ptrShare: a pointer a decoder may share (*metav1.Time,
	// *metav1.FieldsV1; see share_ptr.go).
	ptrShare ptrShare
	// scratch holds *mapScratch for the walks of a map of this type.
	scratch *sync.Pool
}

type sizeField struct {
	off uintptr
	t   *sizeType
}

var (
	sizePlansMu sync.Mutex
	// sizePlans caches the plans of types, as encoding/json caches its
	// encoders: a plan is a pure function of its type.
	sizePlans = map[reflect.Type]*sizeType{}
)

// NewSizer returns a Sizer of values of type T that knows no sharing.
func NewSizer[T any]() *Sizer[T] {
	return &Sizer[T]{top: sizePlanOf(reflect.TypeFor[T]())}
}

// sizePlanOf returns the plan of t, building it once.
func sizePlanOf(t reflect.Type) *sizeType {
	sizePlansMu.Lock()
	defer sizePlansMu.Unlock()
	return buildSizePlan(t)
}

var stringType = reflect.TypeFor[string]()

// locationPtrType is a time.Time's pointer to its Location: process-wide
// memory (UTC, Local, a zone loaded once), which no walk of a value
// follows.
var locationPtrType = reflect.TypeFor[*time.Location]()

// buildSizePlan builds the plan of t. The caller holds sizePlansMu.
func buildSizePlan(t reflect.Type) *sizeType {
	if x := sizePlans[t]; x != nil {
		return x
	}
	x := &sizeType{kind: t.Kind(), size: t.Size(), typ: t}
	sizePlans[t] = x // recursive types end here
	switch t.Kind() {
	case reflect.String:
	case reflect.Pointer:
		if t == locationPtrType {
			x.leaf = true
			break
		}
		x.elem = buildSizePlan(t.Elem())
		x.ptrShare = ptrShareOf(t.Elem())
	case reflect.Slice:
		x.elem = buildSizePlan(t.Elem())
	case reflect.Array:
		x.elem = buildSizePlan(t.Elem())
		x.n = t.Len()
		x.leaf = x.elem.leaf
	case reflect.Map:
		x.key = buildSizePlan(t.Key())
		x.elem = buildSizePlan(t.Elem())
		x.slot = mapSlotSize(t)
		x.stringMap = t.Key() == stringType && t.Elem() == stringType
		x.scratch = &sync.Pool{New: func() any {
			return &mapScratch{k: reflect.New(t.Key()).Elem(), v: reflect.New(t.Elem()).Elem()}
		}}
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			ft := buildSizePlan(f.Type)
			if ft.leaf {
				continue
			}
			if t == fieldsV1Type && f.Name == "Raw" {
				cp := *ft
				cp.fieldsRaw = true
				ft = &cp
			}
			x.fields = append(x.fields, sizeField{off: f.Offset, t: ft})
		}
		x.leaf = len(x.fields) == 0
	case reflect.Interface:
	default: // numbers, booleans; channels and functions are not followed
		x.leaf = true
	}
	return x
}

// mapSlotSize returns the size of one key-value slot of the map type t.
func mapSlotSize(t reflect.Type) uintptr {
	return reflect.StructOf([]reflect.StructField{
		{Name: "K", Type: t.Key()},
		{Name: "V", Type: t.Elem()},
	}).Size()
}

// Size returns the heap bytes v reaches (see Sizer). For a pointer type,
// such as *corev1.Pod, that is the object it points at and all it holds.
func (s *Sizer[T]) Size(v T) int {
	if s.shares != nil {
		s.shares.mu.Lock()
		defer s.shares.mu.Unlock()
	}
	if s.top.kind == reflect.Pointer && !s.top.leaf {
		// Read here, so that v does not escape: the walk allocates nothing.
		q := *(*unsafe.Pointer)(unsafe.Pointer(&v))
		if unsafe.Sizeof(v) > unsafe.Sizeof(q) {
			// An interface holding the pointer top plans (a Decoder
			// made by NewDecoderOf): its data word.
			q = (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1]
		}
		if q == nil {
			return 0
		}
		return allocBytes(int(s.top.elem.size)) + s.walk(s.top.elem, q)
	}
	return s.walkValue(v)
}

// walkValue walks v, a T that is not a pointer, which escapes: apart from
// Size, so that Size's own v does not.
//
//go:noinline
func (s *Sizer[T]) walkValue(v T) int { return s.walk(s.top, unsafe.Pointer(&v)) }

// stringSize returns the bytes of str: none if the decoder shares it.
func (s *Sizer[T]) stringSize(str string) int {
	if s.shares != nil && s.shares.strs.holds(str) {
		return 0
	}
	if s.rec != nil && len(str) > 0 && s.rec.holds(unsafe.Pointer(unsafe.StringData(str))) {
		return 0
	}
	return stringBytes(len(str))
}

// walk returns the bytes the value of plan x at p reaches.
func (s *Sizer[T]) walk(x *sizeType, p unsafe.Pointer) int {
	if x.leaf {
		return 0
	}
	switch x.kind {
	case reflect.String:
		return s.stringSize(*(*string)(p))
	case reflect.Pointer:
		q := *(*unsafe.Pointer)(p)
		if q == nil {
			return 0
		}
		if x.ptrShare != shareNone && s.shares != nil && s.shares.holdsPtr(x.ptrShare, q) {
			return 0 // counted once, by SharedBytes
		}
		if x.elem.kind == reflect.Struct && s.shares != nil && s.shares.msgs.holds(q) {
			return 0 // a shared message: counted once, by SharedBytes
		}
		return allocBytes(int(x.elem.size)) + s.walk(x.elem, q)
	case reflect.Slice:
		h := (*sliceHeader)(p)
		if h.data == nil || h.cap == 0 {
			return 0
		}
		if x.fieldsRaw && s.shares != nil && s.shares.holdsBytes(unsafe.Slice((*byte)(h.data), h.len)) {
			return 0
		}
		if s.rec != nil && x.elem.kind == reflect.Uint8 && s.rec.holds(h.data) {
			return 0
		}
		if x.elem.kind == reflect.Struct && s.shares != nil && s.shares.msgs.holds(h.data) {
			return 0 // a shared run of messages: counted once, by SharedBytes
		}
		n := allocBytes(h.cap * int(x.elem.size))
		if !x.elem.leaf {
			for i := range h.len {
				n += s.walk(x.elem, unsafe.Add(h.data, uintptr(i)*x.elem.size))
			}
		}
		return n
	case reflect.Array:
		n := 0
		for i := range x.n {
			n += s.walk(x.elem, unsafe.Add(p, uintptr(i)*x.elem.size))
		}
		return n
	case reflect.Struct:
		n := 0
		for _, f := range x.fields {
			n += s.walk(f.t, unsafe.Add(p, f.off))
		}
		return n
	case reflect.Map:
		return s.mapBytes(x, p)
	case reflect.Interface:
		v := reflect.NewAt(x.typ, p).Elem()
		if v.IsNil() {
			return 0
		}
		return s.dynamic(v.Elem())
	}
	return 0
}

// mapBytes returns the bytes of the map at p, of plan x.
func (s *Sizer[T]) mapBytes(x *sizeType, p unsafe.Pointer) int {
	if *(*unsafe.Pointer)(p) == nil {
		return 0
	}
	if s.shares != nil && s.shares.sharedMap(*(*unsafe.Pointer)(p)) {
		return 0 // counted once, by SharedBytes
	}
	if x.stringMap {
		m := *(*map[string]string)(p)
		n := mapLayoutBytes(len(m), int(x.slot))
		for k, v := range m {
			n += s.stringSize(k) + s.stringSize(v)
		}
		return n
	}
	m := reflect.NewAt(x.typ, p).Elem()
	n := mapLayoutBytes(m.Len(), int(x.slot))
	if x.key.leaf && x.elem.leaf {
		return n
	}
	sc := x.scratch.Get().(*mapScratch)
	sc.it.Reset(m)
	for sc.it.Next() {
		sc.k.SetIterKey(&sc.it)
		sc.v.SetIterValue(&sc.it)
		n += s.walk(x.key, sc.k.Addr().UnsafePointer()) + s.walk(x.elem, sc.v.Addr().UnsafePointer())
	}
	sc.it.Reset(reflect.Value{})
	sc.k.SetZero()
	sc.v.SetZero()
	x.scratch.Put(sc)
	return n
}

// mapScratch is what a walk of a map other than a map[string]string
// iterates with: reused, so that a walk allocates nothing.
type mapScratch struct {
	it   reflect.MapIter
	k, v reflect.Value // addressable, of the map's key and value types
}

// dynamic returns the bytes an interface's dynamic value v reaches,
// including v's own block when it is not stored in the interface word.
func (s *Sizer[T]) dynamic(v reflect.Value) int {
	t := v.Type()
	x := sizePlanOf(t)
	if t.Kind() == reflect.Pointer || t.Kind() == reflect.Map || t.Kind() == reflect.Chan || t.Kind() == reflect.Func || t.Kind() == reflect.UnsafePointer {
		c := reflect.New(t)
		c.Elem().Set(v)
		return s.walk(x, c.UnsafePointer())
	}
	// Boxed: a block of its own for the value, which the walk then reads.
	c := reflect.New(t)
	c.Elem().Set(v)
	n := 0
	if t.Size() > 0 && !(t.Kind() == reflect.Bool || t.Kind() == reflect.Uint8 || t.Kind() == reflect.Int8) {
		n = allocBytes(int(t.Size()))
	}
	return n + s.walk(x, c.UnsafePointer())
}

// mapLayoutBytes returns the bytes of a Go map of n entries with slots of
// slot bytes (see Sizer).
func mapLayoutBytes(n, slot int) int {
	const header, table, group = 48, 40, 8
	if n == 0 {
		return header
	}
	if n <= group {
		return header + allocBytes(group+group*slot)
	}
	capacity := group
	for capacity*7/8 < n {
		capacity *= 2
	}
	groups := capacity / group
	return header + table + allocBytes(groups*(group+group*slot))
}

// stringBytes returns the bytes of a string of n bytes: short ones are
// packed by the allocator's tiny allocator, 16-byte blocks shared by small
// objects without pointers (a block each under the race detector).
func stringBytes(n int) int {
	if n < 16 && tinyPacked {
		return (n + 7) &^ 7
	}
	return allocBytes(n)
}

// sizeClasses are the Go allocator's size classes up to 32 KiB
// (runtime/sizeclasses.go, Go 1.26).
var sizeClasses = [...]uint16{
	8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280,
	1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528,
	6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072,
	20480, 21760, 24576, 27264, 28672, 32768,
}

// allocBytes returns the size of the block the allocator gives for n bytes.
func allocBytes(n int) int {
	if n <= 0 {
		return 0
	}
	if n > 32768 {
		const page = 8192
		return (n + page - 1) / page * page
	}
	lo, hi := 0, len(sizeClasses)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if int(sizeClasses[mid]) < n {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return int(sizeClasses[lo])
}

// sharing is what a Decoder shares between objects, as a Sizer reads it.
// Its tables are the decoder's, guarded by its mu.
type sharing struct {
	mu    *sync.Mutex
	strs  *interner
	bytes *bytesTable
	times *timeTable
	msgs  *msgTable
	// tables are the decoder's map tables, whose sets and keys
	// SharedBytes counts; the maps in them are counted by the objects
	// that hold them, or in maps.
	tables []*mapTable
	// maps are the maps the decoder handed to a second object (a hit of
	// its map table), of any map type: a direct-mapped table of recent
	// ones, by address. It keeps them alive, and SharedBytes counts them.
	maps *[sharedMapSlots]sharedMapRef
}

// sharedMapRef is a map noted shared: the map, of type typ.
type sharedMapRef struct {
	m   unsafe.Pointer // a map is a pointer, whatever its type
	typ reflect.Type
}

const sharedMapSlots = 1 << 10

// noteShared records that m, a map of type typ the map table remembered,
// was handed to another object. The caller holds the decoder's mu.
func (sh *sharing) noteShared(m unsafe.Pointer, typ reflect.Type) {
	if sh == nil || sh.maps == nil {
		return
	}
	sh.maps[sharedSlot(m)] = sharedMapRef{m, typ}
}

// sharedMap reports whether m, a map of any type, is one of the maps
// noted shared.
func (sh *sharing) sharedMap(m unsafe.Pointer) bool {
	if sh.maps == nil || m == nil {
		return false
	}
	return sh.maps[sharedSlot(m)].m == m
}

func sharedSlot(m unsafe.Pointer) uint64 {
	return (uint64(uintptr(m)) >> 4 * 0x9e3779b97f4a7c15 >> 54) & (sharedMapSlots - 1)
}

func samePtr(a, b map[string]string) bool {
	return *(*unsafe.Pointer)(unsafe.Pointer(&a)) == *(*unsafe.Pointer)(unsafe.Pointer(&b))
}

// holdsPtr reports whether q, a pointer to the type what names, is one
// the decoder's tables hold and objects share.
func (sh *sharing) holdsPtr(what ptrShare, q unsafe.Pointer) bool {
	switch what {
	case shareTime:
		return sh.times.holds((*metav1.Time)(q))
	case shareFields:
		return sh.bytes.holdsFieldsV1((*metav1.FieldsV1)(q))
	}
	return false
}

// holdsBytes reports whether b is a slice the decoder's FieldsV1 table
// holds, which objects share.
func (sh *sharing) holdsBytes(b []byte) bool {
	return sh.bytes.holding(b) != nil
}

// holding returns the slot of t that holds the very slice b, nil if none
// does.
func (t *bytesTable) holding(b []byte) *bytesSlot {
	if t == nil || len(b) == 0 || len(b) > bytesMaxLen {
		return nil
	}
	set := &t.sets[maphash.Bytes(t.seed, b)&(bytesSets-1)]
	for w := range set.ways {
		if slot := &set.ways[w]; slot.used != 0 && len(slot.v) == len(b) && unsafe.SliceData(slot.v) == unsafe.SliceData(b) {
			return slot
		}
	}
	return nil
}

// holds reports whether s is the very string the table holds for its
// bytes, and has handed to a second object: one that objects share.
func (in *interner) holds(s string) bool {
	if in == nil || len(s) == 0 || len(s) > internMaxLen {
		return false
	}
	i := internSet(hashString(s))
	for w := i; w < i+2; w++ {
		if t := in.slots[w]; in.marks[w]&internShared != 0 && len(t) == len(s) && unsafe.StringData(t) == unsafe.StringData(s) {
			return true
		}
	}
	return false
}

// hashString is hashBytes of s's bytes.
func hashString(s string) uint64 {
	return hashBytes(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// heldBytes returns what the sharing tables hold: the slots of the string
// table and the strings in them, the maps noted shared, the slices of the
// FieldsV1 table and its bookkeeping. The caller holds mu.
func (sh *sharing) heldBytes() int {
	n := 0
	if in := sh.strs; in != nil {
		n += allocBytes(len(in.slots)*int(unsafe.Sizeof(""))) + allocBytes(len(in.marks))
		for i, s := range in.slots {
			if in.marks[i]&internShared != 0 { // others are counted by the object that holds them
				n += stringBytes(len(s))
			}
		}
	}
	if sh.maps != nil {
		n += allocBytes(len(sh.maps) * int(unsafe.Sizeof(sharedMapRef{})))
		var plain Sizer[map[string]string] // knows of no sharing
		for _, r := range sh.maps {
			if r.m != nil { // a map has one slot: each is counted once
				n += plain.walk(sizePlanOf(r.typ), unsafe.Pointer(&r.m))
			}
		}
	}
	for _, t := range sh.tables {
		n += allocBytes(len(t.sets)*int(unsafe.Sizeof(mapSet{}))) + allocBytes(len(t.once)*int(unsafe.Sizeof(onceSet{})))
		for i := range t.sets {
			for _, w := range t.sets[i].ways {
				n += stringBytes(len(w.run)) + w.snap.bytes()
			}
		}
	}
	if t := sh.bytes; t != nil {
		n += allocBytes(len(t.sets)*int(unsafe.Sizeof(bytesSet{}))) + allocBytes(len(t.once)*int(unsafe.Sizeof(onceSet{})))
		for i := range t.sets {
			for _, w := range t.sets[i].ways {
				n += allocBytes(cap(w.v))
				if w.fv != nil {
					n += allocBytes(int(unsafe.Sizeof(metav1.FieldsV1{})))
				}
			}
		}
	}
	if sh.times != nil {
		n += sh.times.heldBytes()
	}
	if t := sh.msgs; t != nil {
		n += allocBytes(int(unsafe.Sizeof(*t))) + allocBytes(cap(t.buf))
		sz := Sizer[byte]{shares: sh}
		for i := range t.sets {
			for _, sl := range t.sets[i] {
				n += allocBytes(cap(sl.b))
			}
		}
		for i := range t.shared { // others are counted by the object that holds them
			for _, m := range t.shared[i] {
				n += sz.sharedMsgBytes(m)
			}
		}
	}
	return n
}

// sharedMsgBytes returns the bytes of m, a value of the message table
// that objects share: a pointed-at message or a run's elements.
func (s *Sizer[T]) sharedMsgBytes(m sharedMsg) int {
	if m.p == nil {
		return 0
	}
	x := sizePlanOf(m.o.typ.Elem())
	if m.o.kind != opRepeated {
		return allocBytes(int(x.size)) + s.walk(x, m.p)
	}
	n := allocBytes(int(m.n) * int(x.size))
	for k := range int(m.n) {
		n += s.walk(x, unsafe.Add(m.p, uintptr(k)*x.size))
	}
	return n
}

// Sizer returns a Sizer of the objects d decodes that knows what d shares
// between them (see Sizer): what it shares is counted by SharedBytes, not
// per object. Without sharing (Options.NoSharing), it is NewSizer's.
func (d *Decoder[PP]) Sizer() *Sizer[PP] {
	return &Sizer[PP]{top: sizePlanOf(d.elemPointer()), shares: d.share}
}

// SharedBytes returns the bytes d's sharing tables hold, which the objects
// it decoded share: its table of strings, the maps it handed to more than
// one object of late, its table of FieldsV1 bytes, its table of
// pointed-at messages and the 2,048 last it handed to more than one
// object. They are bounded (about 300 KiB of tables, at most 4 MiB of
// FieldsV1 bytes and 512 KiB of messages' bytes), and what a Sizer of d
// leaves out of each object's size.
func (d *Decoder[PP]) SharedBytes() int {
	if d.share == nil {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.share.heldBytes()
}

// SharedMapsWritten counts the shared maps d found written to since it
// handed them out: maps its objects share (see Options.NoMapSharing) that
// a reader changed through one object, which the objects' contract
// forbids; and likewise the pointed-at messages and runs its objects share
// (see share_msg.go). d checks a map or a message each time it would hand
// it to one more object, by a hash of its memory taken when it remembered
// it (a map of other values than strings and Quantities against a copy),
// and hands out such a map no more:
// objects decoded after the write get what the server sent. The objects
// that held the map before still hold it, written. A count above zero
// says that the program writes to objects it must only read.
func (d *Decoder[PP]) SharedMapsWritten() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var n uint64
	for _, t := range []*mapTable{d.maps, d.jsonMaps} {
		if t != nil {
			n += t.written
		}
	}
	if d.msgs != nil {
		n += d.msgs.written
	}
	return n
}
