package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DecodeError reports bytes that could not be decoded into a field: Path
// is the field's path in the projection ("" for the message itself), Err
// wraps ErrTruncated or ErrMalformed (that of a type's own Unmarshal, such
// as metav1.Time's or resource.Quantity's, as ErrMalformed).
type DecodeError struct {
	Path string
	Err  error
}

func (e *DecodeError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("wire: field %s: %v", e.Path, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// state is what one decoding uses: the decoder's string table and options.
type state struct {
	strs   *interner
	maps   *mapTable         // nil: no map sharing
	bytes  *bytesTable       // nil: no sharing of FieldsV1
	times  *timeTable        // nil: no sharing of times
	filter func(string) bool // annotations kept; nil keeps all
	// notShared is set by a Quantity whose value must not be shared
	// between objects (see quantityHoldsDec), a map's value among them:
	// the map being decoded is then not remembered for its entries.
	notShared bool
	// alias, when set, says where the bytes being decoded, a record's
	// encoding put back together, lie in the record's memory: strings are
	// made over that memory rather than copied (see aliases).
	alias *aliases
	share *sharing // told of the maps handed to a second object; nil: none
	// msgs shares pointed-at messages (see share_msg.go); nil: none.
	msgs *msgTable
}

// message decodes the protobuf message b into the struct at base.
func (s *state) message(b []byte, base unsafe.Pointer, x *plan) error {
	for i := 0; i < len(b); {
		num, typ, ok := oneByteTag(b, i) // nearly every key, without tag's call
		next := i + 1
		var err error
		if !ok {
			if num, typ, next, err = tag(b, i); err != nil {
				return &DecodeError{Err: err}
			}
		}
		o := x.lookup(num)
		if o == nil {
			if i, err = skip(b, next, typ); err != nil {
				return &DecodeError{Err: err}
			}
			continue
		}
		if o.kind == opMap && s.maps != nil && typ == wireBytes {
			if i, err = s.sharedMap(b, i, num, at(base, o.off), o); err != nil {
				return fieldError(o, err)
			}
			continue
		}
		if o.runShare && s.msgs != nil && typ == wireBytes && (*sliceHeader)(at(base, o.off)).len == 0 {
			end, done, err := s.sharedRun(b, i, at(base, o.off), o)
			if err != nil {
				return fieldError(o, err)
			}
			if done {
				i = end
				continue
			}
		}
		switch o.kind { // field's, without the call: most fields are scalars
		case opScalar:
			i, err = s.scalar(b, next, typ, at(base, o.off), o)
		case opRepeated:
			i, err = s.repeated(b, next, typ, at(base, o.off), o)
		default:
			i, err = s.value(b, next, typ, at(base, o.off), o)
		}
		if err != nil {
			return fieldError(o, err)
		}
	}
	return nil
}

// fieldError is the error err of decoding the field of o: its path is
// o's name, then the path of the field inside it that err is about.
func fieldError(o *op, err error) error {
	var de *DecodeError
	if errors.As(err, &de) {
		if de.Path == "" { // about the nested message itself
			return &DecodeError{Path: o.name, Err: de.Err}
		}
		return &DecodeError{Path: join(o.name, de.Path), Err: de.Err}
	}
	return &DecodeError{Path: o.name, Err: err}
}

// wireOf returns the wire type a value of kind k is encoded with.
func wireOf(o *op) int {
	switch o.kind {
	case opScalar, opPtrScalar:
		switch o.sk {
		case reflect.String, reflect.Slice:
			return wireBytes
		case reflect.Float64:
			return wireFixed64
		case reflect.Float32:
			return wireFixed32
		}
		return wireVarint
	}
	return wireBytes
}

func wrongWire(o *op, typ int) error {
	return fmt.Errorf("%w: wire type %d, want %d", ErrMalformed, typ, wireOf(o))
}

// field decodes the value at b[i:], of wire type typ, into the field at ptr
// and returns the index after it.
func (s *state) field(b []byte, i, typ int, ptr unsafe.Pointer, o *op) (int, error) {
	if o.kind == opRepeated {
		return s.repeated(b, i, typ, ptr, o)
	}
	return s.value(b, i, typ, ptr, o)
}

// value decodes one value (not a repeated field) into ptr.
func (s *state) value(b []byte, i, typ int, ptr unsafe.Pointer, o *op) (int, error) {
	switch o.kind {
	case opScalar:
		return s.scalar(b, i, typ, ptr, o)
	case opPtrScalar:
		p := unsafe_New(o.elemType) // the type's descriptor: no reflect call, and a string or number goes to the small allocators as new's would
		next, err := s.scalar(b, i, typ, p, o)
		if err != nil {
			return 0, err
		}
		*(*unsafe.Pointer)(ptr) = p
		return next, nil
	}
	if typ != wireBytes {
		return 0, wrongWire(o, typ)
	}
	start, end, ok := oneByteLength(b, i) // nearly every length, without lengthDelimited's call
	var err error
	if !ok {
		if start, end, err = lengthDelimited(b, i); err != nil {
			return 0, err
		}
	}
	v := b[start:end]
	switch o.kind {
	case opMessage:
		err = s.message(v, ptr, o.plan)
	case opPtrMessage:
		p := *(*unsafe.Pointer)(ptr)
		if o.ptrShare == shareFields && s.bytes != nil {
			if p == nil {
				if raw, ok := fieldsRaw(v); ok {
					*(*unsafe.Pointer)(ptr) = unsafe.Pointer(s.bytes.fieldsV1(raw))
					break
				}
			} else { // the field again, merged into the first: never into a shared one
				c := *(*metav1.FieldsV1)(p)
				p = unsafe.Pointer(&c)
				*(*unsafe.Pointer)(ptr) = p
			}
		}
		if s.msgs != nil && o.copyOnMerge {
			if p != nil { // the field again, or a merge: never into a shared value
				p = mergeCopy(p, o)
				*(*unsafe.Pointer)(ptr) = p
			} else if o.msgShare && len(v) <= msgMaxLen {
				var done bool
				if done, err = s.sharedMessage(v, ptr, o); done {
					break
				}
			}
		}
		if p == nil {
			p = unsafe_New(o.elemType)
			*(*unsafe.Pointer)(ptr) = p
		}
		err = s.message(v, p, o.plan)
	case opUnmarshal:
		if k := o.typ.Kind(); k == reflect.Slice || k == reflect.Map {
			emptyIfNil(reflect.NewAt(o.typ, ptr).Elem())
		}
		if err = asUnmarshaler(o.tab, ptr).Unmarshal(v); err != nil {
			err = malformed(err)
		} else if o.quantity {
			cacheString((*resource.Quantity)(ptr))
			s.notShared = s.notShared || quantityHoldsDecAt(ptr)
		}
	case opPtrUnmarshal:
		if o.ptrShare == shareTime && s.times != nil {
			return end, s.sharedTime(v, ptr)
		}
		p := *(*unsafe.Pointer)(ptr)
		if p != nil && s.msgs != nil { // it may be a shared message's: decoded into a copy
			p = mergeCopy(p, o)
			*(*unsafe.Pointer)(ptr) = p
		}
		if p == nil {
			p = unsafe_New(o.elemType)
			*(*unsafe.Pointer)(ptr) = p
		}
		if err = asUnmarshaler(o.tab, p).Unmarshal(v); err != nil {
			err = malformed(err)
		} else if o.quantity {
			cacheString((*resource.Quantity)(p))
			s.notShared = s.notShared || quantityHoldsDecAt(p)
		}
	case opMap:
		err = s.mapEntry(v, ptr, o)
	default:
		err = fmt.Errorf("%w: unexpected field", ErrMalformed)
	}
	if err != nil {
		return 0, err
	}
	return end, nil
}

// scalar decodes a string, bytes, bool, integer or float into ptr.
func (s *state) scalar(b []byte, i, typ int, ptr unsafe.Pointer, o *op) (int, error) {
	if typ != o.wire {
		return 0, wrongWire(o, typ)
	}
	switch o.sk {
	case reflect.String:
		start, end, ok := oneByteLength(b, i) // as in value
		if !ok {
			var err error
			if start, end, err = lengthDelimited(b, i); err != nil {
				return 0, err
			}
		}
		if str, ok := s.alias.str(b[start:end]); ok {
			*(*string)(ptr) = str
		} else if o.kept {
			*(*string)(ptr) = s.strs.get(b[start:end])
		} else {
			*(*string)(ptr) = string(b[start:end])
		}
		return end, nil
	case reflect.Slice: // []byte
		start, end, err := lengthDelimited(b, i)
		if err != nil {
			return 0, err
		}
		dst := (*[]byte)(ptr)
		if o.shared && s.bytes != nil {
			// Never into the slice there: it may be shared.
			*dst = s.bytes.get(b[start:end])
			return end, nil
		}
		*dst = append((*dst)[:0], b[start:end]...)
		if *dst == nil {
			*dst = []byte{}
		}
		return end, nil
	case reflect.Float64:
		if len(b)-i < 8 {
			return 0, ErrTruncated
		}
		*(*float64)(ptr) = math.Float64frombits(binary.LittleEndian.Uint64(b[i:]))
		return i + 8, nil
	case reflect.Float32:
		if len(b)-i < 4 {
			return 0, ErrTruncated
		}
		*(*float32)(ptr) = math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))
		return i + 4, nil
	}
	v, next, err := varint(b, i)
	if err != nil {
		return 0, err
	}
	switch o.sk {
	case reflect.Bool:
		*(*bool)(ptr) = v != 0
	case reflect.Int32:
		*(*int32)(ptr) = int32(v)
	case reflect.Int64:
		*(*int64)(ptr) = int64(v)
	case reflect.Uint32:
		*(*uint32)(ptr) = uint32(v)
	case reflect.Uint64:
		*(*uint64)(ptr) = v
	case reflect.Int:
		*(*int)(ptr) = int(v)
	case reflect.Uint:
		*(*uint)(ptr) = uint(v)
	case reflect.Int8:
		*(*int8)(ptr) = int8(v)
	case reflect.Int16:
		*(*int16)(ptr) = int16(v)
	case reflect.Uint8:
		*(*uint8)(ptr) = uint8(v)
	case reflect.Uint16:
		*(*uint16)(ptr) = uint16(v)
	}
	return next, nil
}

// cacheString makes q, just decoded and not yet shared, hold its string
// form: Quantity's String (which its protobuf encoder calls) makes it once
// and keeps it in the value, a write that, on a cached object another
// goroutine reads, would be a race. The parts of a cached object are
// encoded again to tell whether an update changed them (derivedParts).
// A Quantity in a map (a ResourceList's) is encoded from a copy of it,
// which is no race, but a copy of one that holds no string makes it again
// at every call: three allocations for each of a container's memory
// requests and limits, twice per encoding (Size, then the bytes), at every
// listed Pod's first update. A Quantity parsed from its canonical form
// holds it already, except, as ParseQuantity has it, a binary one whose
// number is a multiple of 8 ("128Mi", "64Mi").
func cacheString(q *resource.Quantity) { _ = q.String() }

// emptyIfNil makes a nil slice or map empty, as the generated decoders
// leave a list-like field that is present.
func emptyIfNil(v reflect.Value) {
	switch v.Kind() {
	case reflect.Slice:
		if v.IsNil() {
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		}
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
	}
}

// sliceHeader is the layout of a slice.
type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}

// grow appends a zero element to the slice at ptr, described by o, and
// returns the address of the new element. When the slice is full, it makes
// room for want more elements at once.
func grow(ptr unsafe.Pointer, o *op, want int) unsafe.Pointer {
	h := (*sliceHeader)(ptr)
	size := o.size
	if h.len == h.cap {
		n := h.len + max(want, 1)
		data := unsafe_NewArray(o.elemType, n)
		if h.len > 0 {
			typedslicecopy(o.elemType, sliceHeader{data: data, len: h.len, cap: n}, *h)
		}
		h.data, h.cap = data, n
	}
	e := unsafe.Add(h.data, uintptr(h.len)*size)
	h.len++
	return e
}

// count returns how many times field num occurs in a row in the message b
// from the field whose value starts at b[i:] (of wire type typ, and
// counted), so that a repeated field's slice is allocated once, at its
// size. The generated encoders write a repeated field's elements one after
// another, so the run is the whole field; an element that comes after
// another field grows the slice again (see grow), and a run that ends in
// bytes that do not read as a field ends the count there, for the decoding
// to report.
func count(b []byte, i, typ int, num int32) int {
	n := 1
	for {
		var err error
		if i, err = skip(b, i, typ); err != nil || i >= len(b) {
			return n
		}
		f, t, next, err := tag(b, i)
		if err != nil || f != num || t != typ {
			return n
		}
		n, i = n+1, next
	}
}

// repeated decodes one occurrence of a repeated field: one element, or a
// packed run of numbers.
func (s *state) repeated(b []byte, i, typ int, ptr unsafe.Pointer, o *op) (int, error) {
	e := o.elem
	if typ == wireBytes && e.wire != wireBytes {
		start, end, err := lengthDelimited(b, i)
		if err != nil {
			return 0, err
		}
		want := 0
		if e.wire == wireVarint {
			for _, c := range b[start:end] {
				if c < 0x80 {
					want++
				}
			}
		} else {
			want = (end - start) / int(e.typ.Size())
		}
		for j := start; j < end; want-- {
			if j, err = s.scalar(b[:end], j, e.wire, grow(ptr, o, want), e); err != nil {
				return 0, err
			}
		}
		return end, nil
	}
	if typ != e.wire {
		return 0, wrongWire(e, typ)
	}
	want := 1
	if h := (*sliceHeader)(ptr); h.len == h.cap {
		want = count(b, i, typ, o.num)
	}
	return s.value(b, i, typ, grow(ptr, o, want), e)
}

var stringMapType = reflect.TypeFor[map[string]string]()

// initialEventsEnd is the annotation of the bookmark ending a watch-list
// stream's initial events; no annotation filter drops it.
const initialEventsEnd = "k8s.io/initial-events-end"

// mapEntry decodes one map entry into the map at ptr. A missing key or
// value is the zero value, as in the generated decoders.
func (s *state) mapEntry(b []byte, ptr unsafe.Pointer, o *op) error {
	if o.typ == stringMapType {
		var k, v string
		valAt, valType := -1, 0 // the value's field, decoded once the key is known
		for i := 0; i < len(b); {
			num, typ, next, err := tag(b, i)
			if err != nil {
				return err
			}
			switch num {
			case 1:
				i, err = s.scalar(b, next, typ, unsafe.Pointer(&k), o.key)
			case 2:
				valAt, valType = next, typ
				i, err = skip(b, next, typ)
			default:
				i, err = skip(b, next, typ)
			}
			if err != nil {
				return err
			}
		}
		if o.annot && s.filter != nil && k != initialEventsEnd && !s.filter(k) {
			return nil
		}
		if valAt >= 0 {
			if _, err := s.scalar(b, valAt, valType, unsafe.Pointer(&v), o.elem); err != nil {
				return err
			}
		}
		m := (*map[string]string)(ptr)
		if *m == nil {
			*m = make(map[string]string)
		}
		(*m)[k] = v
		return nil
	}
	k := reflect.New(o.typ.Key()).Elem()
	v := reflect.New(o.typ.Elem()).Elem()
	empty := o.elem.kind == opScalar && o.elem.sk == reflect.Slice || o.elem.kind == opUnmarshal
	if empty {
		emptyIfNil(v) // a missing bytes or list value is empty, not nil
	}
	sawValue := false
	for i := 0; i < len(b); {
		num, typ, next, err := tag(b, i)
		if err != nil {
			return err
		}
		switch num {
		case 1:
			i, err = s.value(b, next, typ, k.Addr().UnsafePointer(), o.key)
		case 2:
			if sawValue {
				// The value again: it replaces the first, as for the
				// generated decoders, which start each from zero.
				v.SetZero()
				if empty {
					emptyIfNil(v)
				}
			}
			sawValue = true
			i, err = s.value(b, next, typ, v.Addr().UnsafePointer(), o.elem)
		default:
			i, err = skip(b, next, typ)
		}
		if err != nil {
			return err
		}
	}
	// A Quantity value that holds an inf.Dec set notShared as value
	// decoded it.
	m := reflect.NewAt(o.typ, ptr).Elem()
	if m.IsNil() {
		m.Set(reflect.MakeMap(o.typ))
	}
	m.SetMapIndex(k, v)
	return nil
}

// hashBytes is a cheap hash of a short string: its length and its first
// and last eight bytes, mixed. Collisions only cost the table a miss.
func hashBytes(b []byte) uint64 {
	var lo, hi uint64
	if len(b) >= 8 {
		lo = binary.LittleEndian.Uint64(b)
		hi = binary.LittleEndian.Uint64(b[len(b)-8:])
	} else {
		for j, c := range b {
			lo |= uint64(c) << (8 * j)
		}
	}
	h := (lo ^ uint64(len(b))*0x9e3779b97f4a7c15) * 0xff51afd7ed558ccd
	h ^= hi * 0xc4ceb9fe1a85ec53
	return h ^ h>>29
}

// interner shares the strings it has seen recently: a two-way
// set-associative table, so its memory is bounded and a string seen once
// costs one slot for a while, never a leak. A string comes into its set's
// first way; the string it meets gives way to another only once it was
// handed out no more often than strings came that would have taken its
// place, and of a set's two strings the one handed out less is the one
// that gives way (of two handed out as often, the one that came first).
// So a string the Pods of a ReplicaSet share stays while the strings each
// Pod has its own of (its name, IPs, container IDs) come by, and one whose
// hand-outs stopped gives way in time. Until 2026-12-06 each new string
// took its slot: over 10,000 realistic Pods in order of name whose
// containers are decoded for each (their token volumes named per Pod), the
// first ReplicaSets' images and mount paths were let go of (and made
// again for later Pods), and a Sizer counted them for each Pod that held
// them (StoreBytes 1.10x the heap in process). Until later that day it was
// direct-mapped, one string a slot: two strings a ReplicaSet's Pods share
// that met in a slot were one of them made again for each Pod, 9% of a
// realistic Pod's allocations (BenchmarkRealisticPodHeap).
type interner struct {
	slots []string // a set's two ways, side by side
	// marks are each slot's internShared bit and its count of hand-outs
	// (internUses), less one for each string that came for the slot
	// since.
	marks []uint8
}

const (
	internSetBits = 12
	internSlots   = 2 << internSetBits // two ways a set
	internMaxLen  = 128

	// internShared marks a slot whose string was handed out again, to a
	// second object: shared, for a Sizer.
	internShared = 1 << 7
	internUses   = internShared - 1
)

// internSet is the first slot of the set of the string of hash h, the
// second being the next: the high bits of h mixed once more, which each
// byte of the string moves. h's low bits leave out what is above the low
// bits of the words hashed (strings such as 172.20.0.15 and 172.20.0.35
// met in one slot), and its high bits take little of the high bytes of
// its first word.
func internSet(h uint64) uint64 { return h * 0x9e3779b97f4a7c15 >> (64 - internSetBits) << 1 }

func newInterner() *interner {
	return &interner{slots: make([]string, internSlots), marks: make([]uint8, internSlots)}
}

func (in *interner) get(b []byte) string {
	if in == nil || len(b) > internMaxLen {
		return string(b)
	}
	if len(b) == 0 {
		return ""
	}
	i := internSet(hashBytes(b))
	for w := i; w < i+2; w++ {
		if s := in.slots[w]; s == string(b) {
			m := in.marks[w]
			if m&internUses < internUses {
				m++
			}
			in.marks[w] = m | internShared
			return s
		}
	}
	// The way handed out less, the second on a tie: it came first, or
	// has been there since the first came.
	j := i + 1
	if in.marks[i]&internUses < in.marks[j]&internUses {
		j = i
	}
	if m := in.marks[j]; m&internUses > 0 {
		in.marks[j] = m - 1
		return string(b)
	}
	s := string(b)
	if j != i { // the first way's string moves to the second
		in.slots[j], in.marks[j] = in.slots[i], in.marks[i]
	}
	in.slots[i], in.marks[i] = s, 0
	return s
}

// sharedTime decodes the metav1.Time v into the *metav1.Time at ptr: the
// time table's for v's seconds, or a new one, which the table keeps. A
// time already there (the field again) is decoded into a copy, never into
// one objects share.
func (s *state) sharedTime(v []byte, ptr unsafe.Pointer) error {
	at := (**metav1.Time)(ptr)
	if *at == nil {
		p, sec, ok := s.times.time(v)
		if p != nil {
			*at = p
			return nil
		}
		p = new(metav1.Time)
		if err := p.Unmarshal(v); err != nil {
			return malformed(err)
		}
		if ok {
			s.times.remember(sec, p)
		}
		*at = p
		return nil
	}
	c := **at
	if err := c.Unmarshal(v); err != nil {
		return malformed(err)
	}
	*at = &c
	return nil
}

// sharedMap decodes the entries of the map field num, of any map type,
// that start at b[i] (at its tag) and follow one another, into the map at
// ptr, and returns the index after them. The same entries seen recently
// for a map of the same type give the map made for them then: objects
// share it.
func (s *state) sharedMap(b []byte, i int, num int32, ptr unsafe.Pointer, o *op) (int, error) {
	m := (*unsafe.Pointer)(ptr) // a map is a pointer, whatever its type
	merged := *m != nil
	if merged {
		// A second run of the field, or a merge into an existing object:
		// the map may be shared, so it is copied before it is added to.
		// It then holds more than the run's entries, and is not
		// remembered for them.
		cloneMap(ptr, o.typ)
	}
	// The run ends before an entry whose bounds cannot be read. Its entries
	// are decoded before that error is returned, so that an error inside
	// one of them is reported first, as decoding entry by entry does.
	end := i
	var badEntry error
	for end < len(b) {
		n, typ, next, err := tag(b, end)
		if err != nil || n != num || typ != wireBytes {
			break
		}
		e, err := skip(b, next, typ)
		if err != nil {
			badEntry = err
			break
		}
		end = e
	}
	run := b[i:end]
	var set *mapSet // where to remember the map; nil after a merge
	var h uint64    // the hash of run, where set is
	if !merged && badEntry == nil {
		var seen unsafe.Pointer
		if set, h, seen = s.maps.find(o.mapType, run); seen != nil {
			*m = seen
			s.share.noteShared(seen, o.typ)
			return end, nil
		}
	}
	outer := s.notShared // that of a map whose value holds this one
	s.notShared = false
	for j := i; j < end; {
		_, typ, next, err := tag(b, j)
		if err != nil {
			return 0, err
		}
		if j, err = s.value(b, next, typ, ptr, o); err != nil {
			return 0, err
		}
	}
	if badEntry != nil {
		return 0, badEntry
	}
	shareable := !s.notShared
	s.notShared = outer || s.notShared
	if set != nil && shareable && *m != nil && len(run) > 0 {
		kept, _ := s.alias.str(run) // the run in a record's memory, if it lies there
		set.put(o.mapType, o.typ, run, kept, h, *m)
	}
	return end, nil
}

// cloneMap replaces the map at ptr, of type t, by a copy of it, whose
// values are the same values: an entry added later replaces a value, and
// never writes into it.
func cloneMap(ptr unsafe.Pointer, t reflect.Type) {
	if t == stringMapType {
		m := (*map[string]string)(ptr)
		*m = maps.Clone(*m)
		return
	}
	m := reflect.NewAt(t, ptr).Elem()
	c := reflect.MakeMapWithSize(t, m.Len())
	for it := m.MapRange(); it.Next(); {
		c.SetMapIndex(it.Key(), it.Value())
	}
	m.Set(c)
}
