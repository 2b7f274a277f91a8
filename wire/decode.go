package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"reflect"
	"unsafe"
)

// DecodeError reports bytes that could not be decoded into a field: Path
// is the field's path in the projection ("" for the message itself), Err
// wraps ErrTruncated, ErrMalformed or the error of a type's own Unmarshal.
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
	filter func(string) bool // annotations kept; nil keeps all
}

// message decodes the protobuf message b into the struct at base.
func (s *state) message(b []byte, base unsafe.Pointer, x *plan) error {
	for i := 0; i < len(b); {
		num, typ, next, err := tag(b, i)
		if err != nil {
			return &DecodeError{Err: err}
		}
		o := x.lookup(num)
		if o == nil {
			if i, err = skip(b, next, typ); err != nil {
				return &DecodeError{Err: err}
			}
			continue
		}
		if i, err = s.field(b, next, typ, at(base, o.off), o); err != nil {
			var de *DecodeError
			if errors.As(err, &de) && de.Path != "" {
				return err
			}
			return &DecodeError{Path: o.path, Err: err}
		}
	}
	return nil
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
		p := reflect.New(o.typ.Elem()).UnsafePointer()
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
	start, end, err := lengthDelimited(b, i)
	if err != nil {
		return 0, err
	}
	v := b[start:end]
	switch o.kind {
	case opMessage:
		err = s.message(v, ptr, o.plan)
	case opPtrMessage:
		p := *(*unsafe.Pointer)(ptr)
		if p == nil {
			p = reflect.New(o.typ.Elem()).UnsafePointer()
			*(*unsafe.Pointer)(ptr) = p
		}
		err = s.message(v, p, o.plan)
	case opUnmarshal:
		err = reflect.NewAt(o.typ, ptr).Interface().(unmarshaler).Unmarshal(v)
	case opPtrUnmarshal:
		p := *(*unsafe.Pointer)(ptr)
		if p == nil {
			p = reflect.New(o.typ.Elem()).UnsafePointer()
			*(*unsafe.Pointer)(ptr) = p
		}
		err = reflect.NewAt(o.typ.Elem(), p).Interface().(unmarshaler).Unmarshal(v)
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
	if typ != wireOf(o) {
		return 0, wrongWire(o, typ)
	}
	switch o.sk {
	case reflect.String:
		start, end, err := lengthDelimited(b, i)
		if err != nil {
			return 0, err
		}
		if o.kept {
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

// sliceHeader is the layout of a slice.
type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}

// grow appends a zero element to the slice at ptr, of type t, and returns
// the address of the new element.
func grow(ptr unsafe.Pointer, t reflect.Type, size uintptr) unsafe.Pointer {
	h := (*sliceHeader)(ptr)
	if h.len == h.cap {
		c := 2 * h.cap
		if c == 0 {
			c = 1
		}
		n := reflect.MakeSlice(t, h.len, c)
		reflect.Copy(n, reflect.NewAt(t, ptr).Elem())
		reflect.NewAt(t, ptr).Elem().Set(n)
	}
	e := unsafe.Add(h.data, uintptr(h.len)*size)
	h.len++
	return e
}

// repeated decodes one occurrence of a repeated field: one element, or a
// packed run of numbers.
func (s *state) repeated(b []byte, i, typ int, ptr unsafe.Pointer, o *op) (int, error) {
	e := o.elem
	if typ == wireBytes && wireOf(e) != wireBytes {
		start, end, err := lengthDelimited(b, i)
		if err != nil {
			return 0, err
		}
		for j := start; j < end; {
			if j, err = s.scalar(b[:end], j, wireOf(e), grow(ptr, o.typ, o.size), e); err != nil {
				return 0, err
			}
		}
		return end, nil
	}
	if typ != wireOf(e) {
		return 0, wrongWire(e, typ)
	}
	return s.value(b, i, typ, grow(ptr, o.typ, o.size), e)
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
		for i := 0; i < len(b); {
			num, typ, next, err := tag(b, i)
			if err != nil {
				return err
			}
			switch num {
			case 1:
				i, err = s.scalar(b, next, typ, unsafe.Pointer(&k), o.key)
			case 2:
				i, err = s.scalar(b, next, typ, unsafe.Pointer(&v), o.elem)
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
		m := (*map[string]string)(ptr)
		if *m == nil {
			*m = make(map[string]string)
		}
		(*m)[k] = v
		return nil
	}
	k := reflect.New(o.typ.Key()).Elem()
	v := reflect.New(o.typ.Elem()).Elem()
	if o.elem.kind == opScalar && o.elem.sk == reflect.Slice {
		v.SetBytes([]byte{}) // a missing bytes value is empty, not nil
	}
	for i := 0; i < len(b); {
		num, typ, next, err := tag(b, i)
		if err != nil {
			return err
		}
		switch num {
		case 1:
			i, err = s.value(b, next, typ, k.Addr().UnsafePointer(), o.key)
		case 2:
			i, err = s.value(b, next, typ, v.Addr().UnsafePointer(), o.elem)
		default:
			i, err = skip(b, next, typ)
		}
		if err != nil {
			return err
		}
	}
	m := reflect.NewAt(o.typ, ptr).Elem()
	if m.IsNil() {
		m.Set(reflect.MakeMap(o.typ))
	}
	m.SetMapIndex(k, v)
	return nil
}

// interner shares the strings it has seen recently: a direct-mapped table,
// so its memory is bounded and a string seen once costs one slot for a
// while, never a leak.
type interner struct {
	seed  maphash.Seed
	slots []string
}

const (
	internSlots  = 1 << 13
	internMaxLen = 128
)

func newInterner() *interner {
	return &interner{seed: maphash.MakeSeed(), slots: make([]string, internSlots)}
}

func (in *interner) get(b []byte) string {
	if in == nil || len(b) > internMaxLen {
		return string(b)
	}
	if len(b) == 0 {
		return ""
	}
	i := maphash.Bytes(in.seed, b) & (internSlots - 1)
	if s := in.slots[i]; s == string(b) {
		return s
	}
	s := string(b)
	in.slots[i] = s
	return s
}
