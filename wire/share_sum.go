package wire

import (
	"encoding/binary"
	"hash/maphash"
	"reflect"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Checking a shared value by its memory. A value the table hands out
// again was checked by encoding it with its type's generated encoder and
// comparing with its bytes: about as much work as decoding it, for each
// object that shares it (an eighth of a small Pod's decoding, a sixth of
// a realistic one's). Once a value has encoded back to its bytes, when it
// is remembered, what must hold at each hand-out after that is narrower:
// that no one has written to it. So the table hashes, when it remembers a
// value, the memory the value reaches: its own, and each pointed-at value,
// slice's elements and map's entries under it, but not the bytes of its
// strings, which no one writes (a string written anew has another
// address, in the memory that holds it). A hand-out hashes that memory
// again and compares: a write to any of it, through a pointer, into a
// slice's element or a map, or a field set to another value (even an
// equal one elsewhere in memory), changes the hash but for one chance in
// 2^64.
//
// Types it cannot hash so (an interface, a map other than of strings to
// strings or to Quantities, a recursive type) are checked by encoding, as
// before.

// sumType is what hashing a value of one type follows: the pointers,
// slices and maps in its memory, those of the structs and arrays it holds
// inline among them, each with the offset of its word.
type sumType struct {
	size uintptr
	refs []sumRef
}

type sumRef struct {
	off  uintptr
	kind reflect.Kind // Pointer, Slice or Map
	elem *sumType     // the pointed-at value's or the element's; nil for a map
	// mapKind: a map's, stringMap or quantityMap (see kindOfMap).
	mapKind mapKind
}

var (
	sumTypesMu sync.Mutex
	sumTypes   = map[reflect.Type]*sumType{}
)

// sumPlan returns the plan that hashes the memory of a value of type t,
// nil if some part of t cannot be hashed so.
func sumPlan(t reflect.Type) *sumType {
	sumTypesMu.Lock()
	defer sumTypesMu.Unlock()
	x, ok := buildSumType(t, map[reflect.Type]bool{})
	if !ok {
		return nil
	}
	return x
}

// buildSumType builds the plan of t, false if t cannot be hashed so.
// The caller holds sumTypesMu; building is the types of t being built.
func buildSumType(t reflect.Type, building map[reflect.Type]bool) (*sumType, bool) {
	if x := sumTypes[t]; x != nil {
		return x, true
	}
	x := &sumType{size: t.Size()}
	if building[t] {
		return nil, false // a recursive type: not hashed so
	}
	building[t] = true
	defer delete(building, t)
	if !addRefs(x, t, 0, building) {
		return nil, false
	}
	sumTypes[t] = x
	return x, true
}

// addRefs adds to x the references of the value of type t at offset off.
func addRefs(x *sumType, t reflect.Type, off uintptr, building map[reflect.Type]bool) bool {
	switch t.Kind() {
	case reflect.Pointer:
		if t == locationPtrType {
			return true // process-wide: its address is in the block
		}
		e, ok := buildSumType(t.Elem(), building)
		x.refs = append(x.refs, sumRef{off: off, kind: reflect.Pointer, elem: e})
		return ok
	case reflect.Slice:
		e, ok := buildSumType(t.Elem(), building)
		x.refs = append(x.refs, sumRef{off: off, kind: reflect.Slice, elem: e})
		return ok
	case reflect.Map:
		k := kindOfMap(t)
		if k == otherMap {
			return false
		}
		x.refs = append(x.refs, sumRef{off: off, kind: reflect.Map, mapKind: k})
		return true
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !addRefs(x, f.Type, off+f.Offset, building) {
				return false
			}
		}
		return true
	case reflect.Array:
		for i := range t.Len() {
			if !addRefs(x, t.Elem(), off+uintptr(i)*t.Elem().Size(), building) {
				return false
			}
		}
		return true
	case reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return false
	}
	return true // numbers, booleans, strings: in the block
}

// valueSum hashes the memory reached by the value at p, of o's pointed-at
// type, or by the array of n elements of o's slice type (see above).
func (t *msgTable) valueSum(o *op, p unsafe.Pointer, n int) uint64 {
	x := o.sum
	if o.kind == opRepeated {
		return t.reached(x, p, t.block(p, uintptr(n)*x.size, uint64(n)), n)
	}
	return t.reached(x, p, t.block(p, x.size, 0), 1)
}

// reached hashes, into h, what the n values of plan x at p reach beyond
// their own memory, which h holds already.
func (t *msgTable) reached(x *sumType, p unsafe.Pointer, h uint64, n int) uint64 {
	if len(x.refs) == 0 {
		return h
	}
	for i := range n {
		q := unsafe.Add(p, uintptr(i)*x.size)
		for k := range x.refs {
			r := &x.refs[k]
			w := unsafe.Add(q, r.off)
			if *(*unsafe.Pointer)(w) == nil {
				continue // a nil pointer, slice or map
			}
			switch r.kind {
			case reflect.Pointer:
				v := *(*unsafe.Pointer)(w)
				h = t.reached(r.elem, v, t.block(v, r.elem.size, h), 1)
			case reflect.Slice:
				if s := (*sliceHeader)(w); s.len > 0 {
					h = t.reached(r.elem, s.data, t.block(s.data, uintptr(s.len)*r.elem.size, h), s.len)
				}
			case reflect.Map:
				h = mixSum(h, mapSum(r.mapKind, w))
			}
		}
	}
	return h
}

// block hashes the n bytes at p into h: a few words folded in one by
// one, more through maphash.
func (t *msgTable) block(p unsafe.Pointer, n uintptr, h uint64) uint64 {
	b := unsafe.Slice((*byte)(p), n)
	if n > 64 {
		return mixSum(h, maphash.Bytes(t.seed, b))
	}
	for ; len(b) >= 8; b = b[8:] {
		h = mixSum(h, binary.LittleEndian.Uint64(b)) // not *(*uint64): b may not be aligned to 8
	}
	for _, c := range b {
		h = mixSum(h, uint64(c))
	}
	return h
}

// mapSum hashes the entries of the map at p, of kind stringMap or
// quantityMap (strings to strings, or to Quantities), in no order: the sum
// of each entry's hash, and their count. An entry's strings count by where
// their bytes are, as a struct's do. The map table checks its maps of
// those kinds with it too (see mapSnapshot). A small map is hashed from
// its memory instead (see smallMapSum), which is cheaper than ranging over
// it.
func mapSum(kind mapKind, p unsafe.Pointer) uint64 {
	if sum, ok := smallMapSum(kind, p); ok {
		return sum
	}
	return rangeMapSum(kind, p)
}

// rangeMapSum is mapSum of any map of kind, by ranging over its entries.
func rangeMapSum(kind mapKind, p unsafe.Pointer) uint64 {
	if kind == stringMap {
		m := *(*map[string]string)(p)
		s := uint64(len(m))
		for k, v := range m {
			s += finishSum(mixSum(stringSum(k, 1), stringSum(v, 2)))
		}
		return s
	}
	m := *(*map[string]resource.Quantity)(p)
	s := uint64(len(m))
	for k, q := range m {
		s += finishSum(quantitySum(&q, stringSum(k, 3)))
	}
	return s
}

// stringSum hashes where the bytes of str are, and its length, into h.
func stringSum(str string, h uint64) uint64 {
	return mixSum(mixSum(h, uint64(uintptr(unsafe.Pointer(unsafe.StringData(str))))), uint64(len(str)))
}

// quantityFields are the offsets of a Quantity's fields: its int64
// amount's value and scale, its inf.Dec pointer, its string and format.
var quantityFields = func() (f struct{ value, scale, dec, str, format uintptr }) {
	i, _ := quantityType.FieldByName("i")
	d, _ := quantityType.FieldByName("d")
	s, _ := quantityType.FieldByName("s")
	format, _ := quantityType.FieldByName("Format")
	value, _ := i.Type.FieldByName("value")
	scale, _ := i.Type.FieldByName("scale")
	dec, _ := d.Type.FieldByName("Dec")
	if value.Type.Kind() != reflect.Int64 || scale.Type.Kind() != reflect.Int32 || dec.Type.Kind() != reflect.Pointer ||
		s.Type.Kind() != reflect.String || format.Type.Kind() != reflect.String {
		panic("wire: resource.Quantity is not laid out as this package knows it")
	}
	f.value, f.scale, f.dec = i.Offset+value.Offset, i.Offset+scale.Offset, d.Offset+dec.Offset
	f.str, f.format = s.Offset, format.Offset
	return f
}()

// quantitySum hashes q's fields into h (not its memory: a copy of a map's
// value has padding no one set).
func quantitySum(q *resource.Quantity, h uint64) uint64 {
	p := unsafe.Pointer(q)
	f := &quantityFields
	h = mixSum(h, uint64(*(*int64)(unsafe.Add(p, f.value))))
	h = mixSum(h, uint64(*(*int32)(unsafe.Add(p, f.scale))))
	h = mixSum(h, uint64(uintptr(*(*unsafe.Pointer)(unsafe.Add(p, f.dec)))))
	h = stringSum(*(*string)(unsafe.Add(p, f.str)), h)
	return stringSum(*(*string)(unsafe.Add(p, f.format)), h)
}

// mixSum folds x into the hash h.
func mixSum(h, x uint64) uint64 {
	h = (h ^ x) * 0x9e3779b97f4a7c15
	return h ^ h>>32
}

// finishSum spreads the bits of h, before it is added to others.
func finishSum(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	return h ^ h>>33
}
