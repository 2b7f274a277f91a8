package typedcache

import (
	"fmt"
	"reflect"
	"strings"
)

// A projection P mirrors a subset of T's fields by name (package wire
// checked that when the informer was made), so a P becomes a T by copying
// each field of P into T's field of the same name: as is where the types
// are the same, field by field where P's is a projection of T's. The
// embedded wire.Meta[P] goes into T's ObjectMeta, whose fields it mirrors.

// copyFunc copies src into dst, an addressable value, sharing what src
// references (maps, slices, pointers to values of the same type).
type copyFunc func(dst, src reflect.Value)

// wirePkg is the package of wire.Meta.
const wirePkg = "github.com/typedkube/informer/wire"

// isWireMeta reports whether f is an embedded wire.Meta.
func isWireMeta(f reflect.StructField) bool {
	return f.Anonymous && f.Type.PkgPath() == wirePkg && strings.HasPrefix(f.Type.Name(), "Meta[")
}

// projectionCopier returns the copyFunc of a projection src into dst.
func projectionCopier(dst, src reflect.Type) (copyFunc, error) {
	if dst == src {
		return func(d, s reflect.Value) { d.Set(s) }, nil
	}
	if dst.Kind() != src.Kind() {
		return nil, fmt.Errorf("typedcache: %v cannot be copied into %v", src, dst)
	}
	switch src.Kind() {
	case reflect.Struct:
		return structCopier(dst, src)
	case reflect.Pointer:
		elem, err := projectionCopier(dst.Elem(), src.Elem())
		if err != nil {
			return nil, err
		}
		return func(d, s reflect.Value) {
			if s.IsNil() {
				d.SetZero()
				return
			}
			p := reflect.New(dst.Elem())
			elem(p.Elem(), s.Elem())
			d.Set(p)
		}, nil
	case reflect.Slice:
		elem, err := projectionCopier(dst.Elem(), src.Elem())
		if err != nil {
			return nil, err
		}
		return func(d, s reflect.Value) {
			if s.IsNil() {
				d.SetZero()
				return
			}
			out := reflect.MakeSlice(dst, s.Len(), s.Len())
			for i := range s.Len() {
				elem(out.Index(i), s.Index(i))
			}
			d.Set(out)
		}, nil
	case reflect.Map:
		if dst.Key() != src.Key() {
			return nil, fmt.Errorf("typedcache: %v cannot be copied into %v", src, dst)
		}
		elem, err := projectionCopier(dst.Elem(), src.Elem())
		if err != nil {
			return nil, err
		}
		return func(d, s reflect.Value) {
			if s.IsNil() {
				d.SetZero()
				return
			}
			out := reflect.MakeMapWithSize(dst, s.Len())
			v := reflect.New(dst.Elem()).Elem()
			for it := s.MapRange(); it.Next(); {
				v.SetZero()
				elem(v, it.Value())
				out.SetMapIndex(it.Key(), v)
			}
			d.Set(out)
		}, nil
	}
	if src.ConvertibleTo(dst) {
		return func(d, s reflect.Value) { d.Set(s.Convert(dst)) }, nil
	}
	return nil, fmt.Errorf("typedcache: %v cannot be copied into %v", src, dst)
}

// structCopier copies each exported field of src into dst's field of the
// same name, and an embedded wire.Meta into dst's ObjectMeta.
func structCopier(dst, src reflect.Type) (copyFunc, error) {
	type fieldCopy struct {
		d, s []int // field index paths
		copy copyFunc
	}
	var fields []fieldCopy
	for i := range src.NumField() {
		sf := src.Field(i)
		if !sf.IsExported() {
			continue
		}
		name := sf.Name
		if isWireMeta(sf) {
			name = "ObjectMeta"
		}
		df, ok := dst.FieldByName(name)
		if !ok {
			return nil, fmt.Errorf("typedcache: %v has no field %s of %v", dst, name, src)
		}
		c, err := projectionCopier(df.Type, sf.Type)
		if err != nil {
			return nil, fmt.Errorf("typedcache: field %s: %w", name, err)
		}
		fields = append(fields, fieldCopy{d: df.Index, s: sf.Index, copy: c})
	}
	return func(d, s reflect.Value) {
		for _, f := range fields {
			f.copy(d.FieldByIndex(f.d), s.FieldByIndex(f.s))
		}
	}, nil
}
