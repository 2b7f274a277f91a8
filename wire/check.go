package wire

import (
	"encoding"
	"fmt"
	"reflect"
)

// checkMetas refuses a projection p whose Meta would make DeepCopyObject
// (or the Decoder) treat memory as a type it is not. DeepCopyObject of a
// Meta[Q] finds the Q around it by Q's layout: for every struct type S
// reachable from p, a Meta in S must be embedded by value and be a
// Meta[S]. A Meta[NodeSlim] in a DepSlim, a copy-paste slip, would copy a
// DepSlim as if it were a NodeSlim, reading past it; a *Meta has no P
// around it at all.
func checkMetas(p reflect.Type) error {
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type, path string) error
	walk = func(t reflect.Type, path string) error {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			return walk(t.Elem(), path)
		case reflect.Map:
			if err := walk(t.Key(), path); err != nil {
				return err
			}
			return walk(t.Elem(), path)
		case reflect.Struct:
		default:
			return nil
		}
		if seen[t] {
			return nil
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			fpath := join(path, f.Name)
			if err := checkMetaField(t, f, fpath); err != nil {
				return err
			}
			if _, ok := metaParam(f.Type); !ok {
				if err := walk(f.Type, fpath); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(p, "")
}

// checkMetaField checks the field f of the struct type s, if it is a Meta,
// a pointer to one, or a struct that embeds one.
func checkMetaField(s reflect.Type, f reflect.StructField, path string) error {
	if f.Type.Kind() == reflect.Pointer {
		if _, ok := metaParam(f.Type.Elem()); ok {
			return &MismatchError{path, fmt.Sprintf("embed %s by value, not a pointer to it", want(s))}
		}
	}
	param, ok := metaParam(f.Type)
	switch {
	case ok && !f.Anonymous:
		return &MismatchError{path, "a wire.Meta must be embedded"}
	case ok && param != s:
		return &MismatchError{path, fmt.Sprintf("%v is embedded in %v: a Meta's type parameter must be the struct it is embedded in, %s", f.Type, s, want(s))}
	case !ok && f.Anonymous && f.Type.Kind() == reflect.Struct && reflect.PointerTo(f.Type).Implements(metaMarkerType):
		// Its methods would be promoted, and its DeepCopyObject would copy
		// only the embedded struct.
		return &MismatchError{path, fmt.Sprintf("%v embeds a wire.Meta: embed %s in %v itself", f.Type, want(s), s)}
	}
	return nil
}

// want returns the Meta the struct type s should embed.
func want(s reflect.Type) string {
	if s.Name() == "" {
		return "a wire.Meta (in a named struct type T, wire.Meta[T]; an unnamed struct cannot embed one)"
	}
	return "wire.Meta[" + s.Name() + "]"
}

var textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()

// plain reports whether p, a predeclared or unnamed type, has the
// underlying type of t and t is another type: corev1.PodPhase as a
// string, corev1.ResourceList as a map[corev1.ResourceName]
// resource.Quantity. Such a p decodes as t does unless t has an encoding
// of its own (see protobufOwn, jsonOwn).
func plain(p, t reflect.Type) bool {
	if p == t || p.PkgPath() != "" || p.Kind() != t.Kind() {
		return false
	}
	switch p.Kind() {
	case reflect.Map:
		return p.Key() == t.Key() && p.Elem() == t.Elem()
	case reflect.Slice, reflect.Pointer:
		return p.Elem() == t.Elem()
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// protobufOwn reports whether t has a protobuf encoding of its own rather
// than its kind's: a named list or map such as metav1.Verbs is a message
// wrapping its items.
func protobufOwn(t reflect.Type) bool {
	return t.Kind() != reflect.Struct && reflect.PointerTo(t).Implements(unmarshalerType)
}

// jsonOwn reports whether t decodes its own JSON (or text, as a map key or
// a string does), rather than as its kind does.
func jsonOwn(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return pt.Implements(jsonUnmarshalerType) || pt.Implements(textUnmarshalerType)
}
