package wire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// shadower builds, for a projection P of T, a struct type with P's layout
// and T's JSON names, so that the JSON decoder fills a P directly.
type shadower struct {
	done map[shadowKey]reflect.Type // nil while it is being built
}

type shadowKey struct {
	p, t   reflect.Type
	inline bool
}

var jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// shadow returns the type the JSON decoder fills for P's type p, which
// mirrors T's type t.
func (sh *shadower) shadow(p, t reflect.Type, path string) (reflect.Type, error) {
	if p == t {
		return p, nil
	}
	if jsonOwn(t) {
		// Its JSON is not one member per field (intstr.IntOrString is a
		// number or a string): only the type itself can read it.
		return nil, &MismatchError{path, fmt.Sprintf("%s decodes its own JSON: keep its type, not a projection of it", t)}
	}
	if plain(p, t) {
		return p, nil // read as t is: t has no decoding of its own
	}
	return sh.cached(shadowKey{p, t, false}, path, func() (reflect.Type, error) {
		switch {
		case p.Kind() == reflect.Pointer && t.Kind() == reflect.Pointer:
			s, err := sh.shadow(p.Elem(), t.Elem(), path)
			if err != nil {
				return nil, err
			}
			return reflect.PointerTo(s), nil
		case p.Kind() == reflect.Slice && t.Kind() == reflect.Slice:
			s, err := sh.shadow(p.Elem(), t.Elem(), path)
			if err != nil {
				return nil, err
			}
			return reflect.SliceOf(s), nil
		case p.Kind() == reflect.Struct && t.Kind() == reflect.Struct:
			return sh.structOf(p, t, path)
		}
		return nil, mismatch(p, t, path)
	})
}

// inlined returns the type the shadow embeds for P's field of type p that
// mirrors an inlined field of T of type t (corev1.Volume's VolumeSource):
// a struct type of its own, without methods, or a pointer to one, whose
// fields encoding/json promotes as it promotes those of T's field.
// (reflect.StructOf cannot embed a type with methods but as the first
// field, and t has them.)
func (sh *shadower) inlined(p, t reflect.Type, path string) (reflect.Type, error) {
	return sh.cached(shadowKey{p, t, true}, path, func() (reflect.Type, error) {
		switch {
		case p.Kind() == reflect.Pointer && t.Kind() == reflect.Pointer:
			s, err := sh.inlined(p.Elem(), t.Elem(), path)
			if err != nil {
				return nil, err
			}
			return reflect.PointerTo(s), nil
		case p.Kind() == reflect.Struct && t.Kind() == reflect.Struct:
			if jsonOwn(t) {
				return nil, &MismatchError{path, fmt.Sprintf("%s is inlined and decodes its own JSON", t)}
			}
			return sh.structOf(p, t, path)
		}
		return nil, mismatch(p, t, path)
	})
}

// cached returns the shadow of k, building it once.
func (sh *shadower) cached(k shadowKey, path string, build func() (reflect.Type, error)) (reflect.Type, error) {
	if s, ok := sh.done[k]; ok {
		if s == nil {
			return nil, &MismatchError{path, "recursive projections are not supported in JSON"}
		}
		return s, nil
	}
	sh.done[k] = nil
	s, err := build()
	if err != nil {
		return nil, err
	}
	sh.done[k] = s
	return s, nil
}

// structOf returns the shadow of the struct type p mirroring the struct
// type t: p's fields, in p's layout, under t's JSON names.
func (sh *shadower) structOf(p, t reflect.Type, path string) (reflect.Type, error) {
	fields := make([]reflect.StructField, 0, p.NumField())
	names := map[string]string{} // JSON name -> the path of P's field
	for i := range p.NumField() {
		pf := p.Field(i)
		fpath := join(path, pf.Name)
		if !pf.IsExported() {
			if p != t {
				return nil, &MismatchError{fpath, "unexported fields cannot be decoded"}
			}
			// A field of an inlined type of T's own, which JSON never
			// fills: its place in the layout, under a name of ours.
			fields = append(fields, reflect.StructField{Name: "WireUnexported" + strconv.Itoa(i), Type: pf.Type, Tag: `json:"-"`})
			continue
		}
		var tf reflect.StructField
		var ok bool
		if _, meta := metaParam(pf.Type); meta {
			tf, ok = metaField(t)
		} else {
			tf, ok = t.FieldByName(pf.Name)
		}
		if !ok {
			return nil, &MismatchError{fpath, t.String() + " has no such field"}
		}
		if !promotedInJSON(t, tf) {
			return nil, &MismatchError{fpath, "promoted from an embedded field of " + t.String() + "; declare it in a projection of that field"}
		}
		name, inline := jsonName(tf)
		if inline {
			ft, err := sh.inlined(pf.Type, tf.Type, fpath)
			if err != nil {
				return nil, err
			}
			fields = append(fields, reflect.StructField{Name: pf.Name, Type: ft, Anonymous: true})
			continue
		}
		if prev, dup := names[name]; dup && name != "-" {
			return nil, &MismatchError{fpath, fmt.Sprintf("the same JSON member (%q) as %s: keep one of them", name, prev)}
		}
		names[name] = fpath
		ft, err := sh.shadow(pf.Type, tf.Type, fpath)
		if err != nil {
			return nil, err
		}
		fields = append(fields, reflect.StructField{Name: pf.Name, Type: ft, Tag: reflect.StructTag("json:" + strconv.Quote(name))})
	}
	s := reflect.StructOf(fields)
	if s.Size() != p.Size() {
		return nil, &MismatchError{path, "internal: JSON shadow layout differs"}
	}
	for i := range p.NumField() {
		if s.Field(i).Offset != p.Field(i).Offset {
			return nil, &MismatchError{join(path, p.Field(i).Name), "internal: JSON shadow layout differs"}
		}
	}
	return s, nil
}

// promotedInJSON reports whether T's field tf, found by name, is where
// encoding/json finds it too: a field of t's own, or one promoted through
// inlined structs only.
func promotedInJSON(t reflect.Type, tf reflect.StructField) bool {
	for i := 1; i < len(tf.Index); i++ {
		if _, inline := jsonName(t.FieldByIndex(tf.Index[:i])); !inline {
			return false
		}
	}
	return true
}

// jsonName returns the JSON name of T's field f, as encoding/json reads
// it, and whether f is inlined: an embedded struct (or pointer to one)
// without a name, whose fields encoding/json promotes. A ",inline" tag
// alone inlines nothing.
func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "-", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" && f.Anonymous {
		t := f.Type
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Struct {
			return "", true
		}
	}
	if name == "" {
		name = f.Name
	}
	return name, false
}
