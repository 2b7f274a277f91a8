package wire

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// opKind says how a field's value is decoded.
type opKind uint8

const (
	opScalar       opKind = iota // a string, []byte, bool, integer or float
	opPtrScalar                  // a pointer to one of those
	opMessage                    // a struct decoded by a plan
	opPtrMessage                 // a pointer to such a struct
	opUnmarshal                  // a type decoded by its own Unmarshal method
	opPtrUnmarshal               // a pointer to such a type
	opRepeated                   // a slice of any of the above
	opMap                        // a map entry
)

// op decodes one field of a message into the field at off of the struct
// being filled.
type op struct {
	kind   opKind
	num    int32
	off    uintptr
	path   string       // the field's path in P, for errors making the plan
	name   string       // the field's name in P, for decoding errors: plans are shared by fields of one pair of types
	typ    reflect.Type // the field's type in P
	elem   *op          // opRepeated: the element; opMap: the value
	key    *op          // opMap: the key
	plan   *plan        // opMessage, opPtrMessage
	sk     reflect.Kind // scalars: the kind of the value
	size   uintptr      // opRepeated: the size of an element
	kept   bool         // intern the strings of this field
	annot  bool         // the annotations of a Meta
	shared bool         // a []byte shared between objects with equal bytes (FieldsV1's)
	// ptrShare: opPtrMessage, opPtrUnmarshal: a pointer shared between
	// objects whose values are equal on the wire (see share_ptr.go).
	ptrShare ptrShare

	// Set by finish once the plan is built:
	elemType unsafe.Pointer // the descriptor of typ.Elem(), for pointers and slices
	mapType  unsafe.Pointer // opMap: the descriptor of typ, part of a shared map's key
	tab      unsafe.Pointer // opUnmarshal, opPtrUnmarshal: the unmarshaler table of the pointer type
	wire     int            // the wire type of a value: wireOf(o), kept for the decoding loop
	// quantity: opUnmarshal, opPtrUnmarshal of a resource.Quantity, whose
	// String, which its encoder calls, caches the string it makes in the
	// value: the decoder caches it first (see cacheString).
	quantity bool
	// copyOnMerge: opPtrMessage: with messages shared, a value already
	// there is copied before a merge into it (see mergeCopy); msgShare:
	// the pointed-at messages are shared, checked through mtab, the
	// interface table of the type as a sizedMarshaler (see share_msg.go);
	// runShare: opRepeated of messages: a run of elements is shared, as
	// one value, its elements checked through mtab, the table of the
	// element's pointer type.
	copyOnMerge, msgShare, runShare bool
	mtab                            unsafe.Pointer
	// sum: with msgShare or runShare, the plan that hashes the memory of
	// a shared value, checked by that hash after it is remembered (see
	// share_sum.go); nil: checked by encoding it each time.
	sum *sumType
}

// plan decodes a message into a struct type.
type plan struct {
	byNum []*op // by field number; nil where the field is skipped
	meta  bool  // the plan of a metav1.ObjectMeta (or a Meta of a projection)
}

func (p *plan) lookup(num int32) *op {
	if int(num) < len(p.byNum) {
		return p.byNum[num]
	}
	return nil
}

// MismatchError reports a projection P that does not mirror T: a field T
// lacks, a field whose type is neither T's nor a projection of it, or a
// field that is not on the wire. Path is the field's path in P, such as
// "Spec.Containers.Image".
type MismatchError struct {
	Path   string
	Reason string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("wire: projection field %s: %s", e.Path, e.Reason)
}

// Is makes errors.Is(err, ErrMismatch) true.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

// ErrMismatch is wrapped by every *MismatchError.
var ErrMismatch = fmt.Errorf("wire: projection does not mirror its type")

// unmarshaler is the method of every generated protobuf type.
type unmarshaler interface{ Unmarshal([]byte) error }

var (
	unmarshalerType = reflect.TypeFor[unmarshaler]()
	objectMetaType  = reflect.TypeFor[metav1.ObjectMeta]()
	typeMetaType    = reflect.TypeFor[metav1.TypeMeta]()
	fieldsV1Type    = reflect.TypeFor[metav1.FieldsV1]()
	metaMarkerType  = reflect.TypeFor[metaMarker]()
)

// planner builds plans, sharing one per pair of types.
type planner struct {
	plans map[[2]reflect.Type]*plan
	opts  *Options
}

// build returns the plan decoding T's message into P, checking that P
// mirrors T. Both are struct types.
func (pl *planner) build(p, t reflect.Type, path string) (*plan, error) {
	k := [2]reflect.Type{p, t}
	if x := pl.plans[k]; x != nil {
		return x, nil
	}
	x := &plan{meta: t == objectMetaType}
	pl.plans[k] = x // recursive types end here
	for i := range p.NumField() {
		pf := p.Field(i)
		fpath := join(path, pf.Name)
		if _, ok := metaParam(pf.Type); ok { // embedded, a Meta[p]: see checkMetas
			tf, ok := metaField(t)
			if !ok {
				return nil, &MismatchError{fpath, t.String() + " has no metav1.ObjectMeta field"}
			}
			sub, err := pl.build(pf.Type, objectMetaType, fpath)
			if err != nil {
				return nil, err
			}
			num, err := fieldNumber(tf, fpath)
			if err != nil {
				return nil, err
			}
			if err := x.set(num, &op{kind: opMessage, num: num, off: pf.Offset, path: fpath, name: pf.Name, typ: pf.Type, plan: sub}); err != nil {
				return nil, err
			}
			continue
		}
		if !pf.IsExported() {
			return nil, &MismatchError{fpath, "unexported fields cannot be decoded"}
		}
		tf, ok := t.FieldByName(pf.Name)
		if !ok {
			return nil, &MismatchError{fpath, t.String() + " has no such field"}
		}
		if len(tf.Index) > 1 {
			return nil, &MismatchError{fpath, "promoted from an embedded field of " + t.String() + "; declare it in a projection of that field"}
		}
		if tf.Type == typeMetaType && pf.Type == typeMetaType {
			continue // not on the wire: left empty, as client-go's decoders leave it
		}
		if p == t && tf.Tag.Get("protobuf") == "" {
			continue // not on the wire, and the type is the wire type's own
		}
		num, err := fieldNumber(tf, fpath)
		if err != nil {
			return nil, err
		}
		o, err := pl.field(pf.Type, tf.Type, fpath)
		if err != nil {
			return nil, err
		}
		o.num, o.off, o.name = num, pf.Offset, pf.Name
		if t == fieldsV1Type && pf.Name == "Raw" {
			o.shared = true
		}
		if t == objectMetaType {
			switch pf.Name {
			case "Name", "GenerateName", "UID", "ResourceVersion", "SelfLink":
				o.kept = false // unique to each object: not worth sharing
			case "Annotations":
				o.annot = true
			}
			if pf.Name == "ManagedFields" && pl.opts.DropManagedFields {
				continue
			}
		}
		if err := x.set(num, o); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// set makes o the op of field num, which no other field of P may decode
// (a Meta beside a metav1.ObjectMeta would leave one of them empty).
func (x *plan) set(num int32, o *op) error {
	for int(num) >= len(x.byNum) {
		x.byNum = append(x.byNum, nil)
	}
	if prev := x.byNum[num]; prev != nil {
		return &MismatchError{o.path, fmt.Sprintf("the same field on the wire (%d) as %s: keep one of them", num, prev.path)}
	}
	x.byNum[num] = o
	return nil
}

// field returns the op decoding a value of T's type t into P's type p.
func (pl *planner) field(p, t reflect.Type, path string) (*op, error) {
	if p == t {
		return pl.same(t, path)
	}
	if protobufOwn(t) {
		return nil, &MismatchError{path, t.String() + " has its own encoding and cannot be projected: use its type"}
	}
	if plain(p, t) {
		// The same values and the same encoding, under another name.
		return pl.same(p, path)
	}
	switch {
	case p.Kind() == reflect.Struct && t.Kind() == reflect.Struct:
		if custom(t) {
			return nil, &MismatchError{path, t.String() + " has its own encoding and cannot be projected: use its type"}
		}
		sub, err := pl.build(p, t, path)
		if err != nil {
			return nil, err
		}
		return &op{kind: opMessage, path: path, typ: p, plan: sub}, nil
	case p.Kind() == reflect.Pointer && t.Kind() == reflect.Pointer && p.Elem().Kind() == reflect.Struct && t.Elem().Kind() == reflect.Struct:
		if custom(t.Elem()) {
			return nil, &MismatchError{path, t.Elem().String() + " has its own encoding and cannot be projected: use its type"}
		}
		sub, err := pl.build(p.Elem(), t.Elem(), path)
		if err != nil {
			return nil, err
		}
		return &op{kind: opPtrMessage, path: path, typ: p, plan: sub}, nil
	case p.Kind() == reflect.Slice && t.Kind() == reflect.Slice && p.Elem() != reflect.TypeFor[byte]():
		e, err := pl.field(p.Elem(), t.Elem(), path)
		if err != nil {
			return nil, err
		}
		if e.kind == opRepeated || e.kind == opMap {
			return nil, &MismatchError{path, "nested repeated fields are not protobuf"}
		}
		return &op{kind: opRepeated, path: path, typ: p, elem: e, size: p.Elem().Size()}, nil
	}
	return nil, mismatch(p, t, path)
}

// mismatch is the error of a field of type p that is neither t nor a
// projection of it, saying what to write instead where it can.
func mismatch(p, t reflect.Type, path string) error {
	reason := fmt.Sprintf("type %s is neither %s nor a projection of it", p, t)
	if p.Kind() == reflect.Map && t.Kind() == reflect.Map {
		reason += fmt.Sprintf(": a map's keys and values cannot be projected, declare it as %s", t)
		if u := unnamed(t); u != nil {
			reason += " or " + u.String()
		}
	}
	return &MismatchError{path, reason}
}

// unnamed returns the unnamed type of the named map or slice type t, or
// nil.
func unnamed(t reflect.Type) reflect.Type {
	if t.Name() == "" {
		return nil
	}
	switch t.Kind() {
	case reflect.Map:
		return reflect.MapOf(t.Key(), t.Elem())
	case reflect.Slice:
		return reflect.SliceOf(t.Elem())
	}
	return nil
}

// same returns the op decoding a value of type t into the same type.
func (pl *planner) same(t reflect.Type, path string) (*op, error) {
	if (t.Kind() == reflect.Slice || t.Kind() == reflect.Map) && t.Name() != "" && reflect.PointerTo(t).Implements(unmarshalerType) {
		// A named list or map with an encoding of its own, such as
		// metav1.Verbs: a message wrapping its items.
		return &op{kind: opUnmarshal, path: path, typ: t}, nil
	}
	switch t.Kind() {
	case reflect.String:
		return &op{kind: opScalar, path: path, typ: t, sk: t.Kind(), kept: true}, nil
	case reflect.Bool, reflect.Int32, reflect.Int64, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return &op{kind: opScalar, path: path, typ: t, sk: t.Kind()}, nil
	case reflect.Int, reflect.Uint, reflect.Int8, reflect.Int16, reflect.Uint8, reflect.Uint16:
		return &op{kind: opScalar, path: path, typ: t, sk: t.Kind()}, nil
	case reflect.Struct:
		if custom(t) {
			if !reflect.PointerTo(t).Implements(unmarshalerType) {
				return nil, &MismatchError{path, t.String() + " has no protobuf encoding"}
			}
			return &op{kind: opUnmarshal, path: path, typ: t}, nil
		}
		sub, err := pl.build(t, t, path)
		if err != nil {
			return nil, err
		}
		return &op{kind: opMessage, path: path, typ: t, plan: sub}, nil
	case reflect.Pointer:
		e, err := pl.same(t.Elem(), path)
		if err != nil {
			return nil, err
		}
		switch e.kind {
		case opScalar:
			e.kind = opPtrScalar
		case opMessage:
			e.kind = opPtrMessage
			e.ptrShare = ptrShareOf(t.Elem())
		case opUnmarshal:
			e.kind = opPtrUnmarshal
			e.ptrShare = ptrShareOf(t.Elem())
		default:
			return nil, &MismatchError{path, "unsupported pointer type " + t.String()}
		}
		e.typ = t
		return e, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return &op{kind: opScalar, path: path, typ: t, sk: reflect.Slice}, nil
		}
		e, err := pl.same(t.Elem(), path)
		if err != nil {
			return nil, err
		}
		if e.kind == opRepeated || e.kind == opMap {
			return nil, &MismatchError{path, "nested repeated fields are not protobuf"}
		}
		return &op{kind: opRepeated, path: path, typ: t, elem: e, size: t.Elem().Size()}, nil
	case reflect.Map:
		k, err := pl.same(t.Key(), path)
		if err != nil {
			return nil, err
		}
		v, err := pl.same(t.Elem(), path)
		if err != nil {
			return nil, err
		}
		if k.kind != opScalar || v.kind == opRepeated || v.kind == opMap || v.kind == opPtrScalar || v.kind == opPtrMessage || v.kind == opPtrUnmarshal {
			return nil, &MismatchError{path, "unsupported map type " + t.String()}
		}
		k.kept, v.kept = true, v.kind == opScalar && v.sk == reflect.String
		return &op{kind: opMap, path: path, typ: t, key: k, elem: v}, nil
	}
	return nil, &MismatchError{path, "unsupported type " + t.String()}
}

// custom reports whether the struct type t has an encoding of its own
// rather than one field per exported, tagged field: an unexported field, a
// field tagged protobuf:"-", or an interface field, as metav1.Time,
// resource.Quantity and runtime.RawExtension have.
func custom(t reflect.Type) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Tag.Get("protobuf") == "-" || f.Type.Kind() == reflect.Interface {
			return true
		}
	}
	return false
}

// metaField returns T's ObjectMeta field.
func metaField(t reflect.Type) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); f.Type == objectMetaType {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// fieldNumber reads the field number from f's protobuf tag.
func fieldNumber(f reflect.StructField, path string) (int32, error) {
	tag := f.Tag.Get("protobuf")
	if tag == "" || tag == "-" {
		return 0, &MismatchError{path, "the field is not on the wire (no protobuf tag)"}
	}
	parts := strings.Split(tag, ",")
	if len(parts) < 2 {
		return 0, &MismatchError{path, "unreadable protobuf tag " + strconv.Quote(tag)}
	}
	n, err := strconv.ParseInt(parts[1], 10, 32)
	if err != nil || n <= 0 || n > 1<<20 {
		return 0, &MismatchError{path, "unreadable protobuf tag " + strconv.Quote(tag)}
	}
	return int32(n), nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// at returns the address of the field at off of the struct at base.
func at(base unsafe.Pointer, off uintptr) unsafe.Pointer { return unsafe.Add(base, off) }
