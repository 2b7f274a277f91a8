package wire

import (
	"fmt"
	"reflect"
	"unsafe"
)

// Validate reports whether Protobuf would decode b, the bare protobuf
// message of a T: it makes the checks Protobuf makes, field by field
// (lengths, wire types, varints, the annotation filter, the Unmarshal of
// the types that decode themselves), without building a P. It returns the
// error Protobuf would, or nil. It allocates nothing but what a type's own
// Unmarshal does, into a value of that type that it reuses.
//
// A compact store (see Compact) keeps the bytes of a listed object without
// decoding them; Validate is how it refuses, as a decoding informer does,
// the bytes it could not decode later. Validate remembers the parts it
// found valid, until EndValidation, so that the parts siblings share are
// checked once (see validMemo).
func (d *Decoder[PP]) Validate(b []byte) (err error) {
	if d.plan == nil {
		return d.noProtobuf()
	}
	defer recoverMalformed(&err)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.scratch == nil {
		d.scratch = make(map[*op]*scratchValue)
	}
	if d.memo == nil {
		d.memo = newValidMemo()
	}
	v := validator{filter: d.opts.Annotations, scratch: d.scratch, memo: d.memo}
	return v.message(b, d.plan)
}

// EndValidation lets go of what Validate remembers: the caller has
// validated a list (see validMemo).
func (d *Decoder[PP]) EndValidation() {
	d.mu.Lock()
	d.memo = nil
	d.mu.Unlock()
}

// validator checks protobuf bytes against a plan as state decodes them.
// Each of its methods mirrors the state method of the same name: a change
// to what one accepts belongs in both (TestValidateAgreesWithDecode and
// FuzzValidate compare them).
type validator struct {
	filter func(string) bool
	// scratch holds, per op of a type that decodes itself, a value of that
	// type to unmarshal into; guarded by the Decoder's mu.
	scratch map[*op]*scratchValue
	// memo holds what was found valid before (see validMemo); guarded by
	// the Decoder's mu. depth is that of the message being checked, fields
	// the count of fields walked so far.
	memo          *validMemo
	depth, fields int
}

// scratchValue is a value Validate unmarshals into, kept between calls.
type scratchValue struct {
	p unsafe.Pointer
	v reflect.Value // the value at p
	// flat: no slice or map inside the value (through its struct fields),
	// so that reset is zeroing the whole value.
	flat bool
}

func (v *validator) message(b []byte, x *plan) error {
	for i := 0; i < len(b); {
		num, typ, next, err := tag(b, i)
		if err != nil {
			return &DecodeError{Err: err}
		}
		v.fields++
		o := x.lookup(num)
		if o == nil {
			if i, err = skip(b, next, typ); err != nil {
				return &DecodeError{Err: err}
			}
			continue
		}
		if i, err = v.field(b, next, typ, o); err != nil {
			return fieldError(o, err)
		}
	}
	return nil
}

// submessage checks val, a message under x nested in the one Validate
// was given, or finds it in the memo.
func (v *validator) submessage(val []byte, x *plan) error {
	v.depth++
	err := v.memoMessage(val, x)
	v.depth--
	return err
}

func (v *validator) memoMessage(val []byte, x *plan) error {
	if v.memo == nil || v.depth != memoDepth || len(val) < memoMin {
		return v.message(val, x)
	}
	c := v.memo.costOf(x)
	var h uint64
	if c.worthLooking() {
		var ok bool
		h, ok = v.memo.valid(val, x)
		c.looked(ok)
		if ok {
			return nil
		}
	}
	fields := v.fields
	if err := v.message(val, x); err != nil {
		return err
	}
	c.bytes += len(val)
	c.fields += v.fields - fields
	c.walks++
	if h != 0 {
		v.memo.remember(h, val, x)
	}
	return nil
}

func (v *validator) field(b []byte, i, typ int, o *op) (int, error) {
	if o.kind == opRepeated {
		return v.repeated(b, i, typ, o)
	}
	return v.value(b, i, typ, o)
}

func (v *validator) value(b []byte, i, typ int, o *op) (int, error) {
	if o.kind == opScalar || o.kind == opPtrScalar {
		return v.scalar(b, i, typ, o)
	}
	if typ != wireBytes {
		return 0, wrongWire(o, typ)
	}
	start, end, err := lengthDelimited(b, i)
	if err != nil {
		return 0, err
	}
	val := b[start:end]
	switch o.kind {
	case opMessage, opPtrMessage:
		err = v.submessage(val, o.plan)
	case opUnmarshal, opPtrUnmarshal:
		err = v.unmarshal(val, o)
	case opMap:
		err = v.mapEntry(val, o)
	default:
		err = fmt.Errorf("%w: unexpected field", ErrMalformed)
	}
	if err != nil {
		return 0, err
	}
	return end, nil
}

// unmarshal checks val with o's type's own Unmarshal, or finds it in the
// memo: a short value (a Quantity, a time) is met again and again.
func (v *validator) unmarshal(val []byte, o *op) error {
	var h uint64
	if v.memo != nil && len(val) <= memoShort {
		var ok bool
		if h, ok = v.memo.validShort(val, o); ok {
			return nil
		}
	}
	t := o.typ
	if o.kind == opPtrUnmarshal {
		t = t.Elem()
	}
	if err := asUnmarshaler(o.tab, v.scratchFor(o, t)).Unmarshal(val); err != nil {
		return malformed(err)
	}
	if h != 0 {
		v.memo.rememberShort(h, val, o)
	}
	return nil
}

// scratchFor returns the value of type t that o's Unmarshal fills.
func (v *validator) scratchFor(o *op, t reflect.Type) unsafe.Pointer {
	sv := v.scratch[o]
	if sv == nil {
		p := reflect.New(t)
		sv = &scratchValue{p: p.UnsafePointer(), v: p.Elem(), flat: flat(t)}
		v.scratch[o] = sv
	}
	if sv.flat { // a resource.Quantity, a metav1.Time: one clear, not a walk
		sv.v.SetZero()
		return sv.p
	}
	reset(sv.v)
	if k := t.Kind(); k == reflect.Slice || k == reflect.Map {
		emptyIfNil(sv.v)
	}
	return sv.p
}

// flat reports whether a value of type t holds no slice or map, itself or
// in its struct fields (reset keeps their room; everything else it zeroes).
func flat(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Slice, reflect.Map:
		return false
	case reflect.Struct:
		for i := range t.NumField() {
			if !flat(t.Field(i).Type) {
				return false
			}
		}
	}
	return true
}

// reset zeroes v, a value a type's own Unmarshal filled before, keeping
// the room its slices have: an Unmarshal that appends (metav1.Verbs) does
// not grow it without bound, and one that copies bytes into a slice
// (metav1.FieldsV1) finds the room it needs.
func reset(v reflect.Value) {
	switch v.Kind() {
	case reflect.Slice:
		v.SetLen(0) // what its elements hold stays alive until overwritten: one value's worth

	case reflect.Map:
		v.Clear()
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			reset(reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem())
		}
	default:
		v.SetZero()
	}
}

func (v *validator) scalar(b []byte, i, typ int, o *op) (int, error) {
	if typ != o.wire {
		return 0, wrongWire(o, typ)
	}
	switch o.sk {
	case reflect.String, reflect.Slice:
		_, end, err := lengthDelimited(b, i)
		return end, err
	case reflect.Float64:
		if len(b)-i < 8 {
			return 0, ErrTruncated
		}
		return i + 8, nil
	case reflect.Float32:
		if len(b)-i < 4 {
			return 0, ErrTruncated
		}
		return i + 4, nil
	}
	_, next, err := varint(b, i)
	return next, err
}

func (v *validator) repeated(b []byte, i, typ int, o *op) (int, error) {
	e := o.elem
	if typ == wireBytes && e.wire != wireBytes {
		start, end, err := lengthDelimited(b, i)
		if err != nil {
			return 0, err
		}
		for j := start; j < end; {
			if j, err = v.scalar(b[:end], j, e.wire, e); err != nil {
				return 0, err
			}
		}
		return end, nil
	}
	if typ != e.wire {
		return 0, wrongWire(e, typ)
	}
	return v.value(b, i, typ, e)
}

func (v *validator) mapEntry(b []byte, o *op) error {
	if o.typ == stringMapType {
		var key []byte
		valAt, valType := -1, 0
		for i := 0; i < len(b); {
			num, typ, next, err := tag(b, i)
			if err != nil {
				return err
			}
			switch num {
			case 1:
				var start int
				if start, i, err = v.stringAt(b, next, typ, o.key); err == nil {
					key = b[start:i]
				}
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
		if o.annot && v.filter != nil && string(key) != initialEventsEnd && !v.filter(string(key)) {
			return nil
		}
		if valAt >= 0 {
			if _, err := v.scalar(b, valAt, valType, o.elem); err != nil {
				return err
			}
		}
		return nil
	}
	for i := 0; i < len(b); {
		num, typ, next, err := tag(b, i)
		if err != nil {
			return err
		}
		switch num {
		case 1:
			i, err = v.value(b, next, typ, o.key)
		case 2:
			i, err = v.value(b, next, typ, o.elem)
		default:
			i, err = skip(b, next, typ)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// stringAt checks the string key at b[i:] as scalar does and returns its
// bounds.
func (v *validator) stringAt(b []byte, i, typ int, o *op) (start, end int, err error) {
	if typ != o.wire {
		return 0, 0, wrongWire(o, typ)
	}
	return lengthDelimited(b, i)
}
