package wire

import "reflect"

// deepCopy copies src into dst, both addressable values of one type,
// sharing no memory but strings: a type with a DeepCopyInto method (the
// API types) copies itself, projections are copied field by field.
func deepCopy(dst, src reflect.Value) {
	t := src.Type()
	if m, ok := reflect.PointerTo(t).MethodByName("DeepCopyInto"); ok && m.Type.NumIn() == 2 && m.Type.In(1) == reflect.PointerTo(t) && src.CanAddr() {
		m.Func.Call([]reflect.Value{src.Addr(), dst.Addr()})
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			dst.SetZero()
			return
		}
		n := reflect.New(t.Elem())
		deepCopy(n.Elem(), src.Elem())
		dst.Set(n)
	case reflect.Slice:
		if src.IsNil() {
			dst.SetZero()
			return
		}
		n := reflect.MakeSlice(t, src.Len(), src.Len())
		if t.Elem().Kind() == reflect.Uint8 {
			reflect.Copy(n, src)
		} else {
			for i := range src.Len() {
				deepCopy(n.Index(i), src.Index(i))
			}
		}
		dst.Set(n)
	case reflect.Map:
		if src.IsNil() {
			dst.SetZero()
			return
		}
		n := reflect.MakeMapWithSize(t, src.Len())
		v := reflect.New(t.Elem()).Elem()
		tmp := reflect.New(t.Elem()).Elem() // addressable, for DeepCopyInto
		for it := src.MapRange(); it.Next(); {
			tmp.Set(it.Value())
			deepCopy(v, tmp)
			n.SetMapIndex(it.Key(), v)
		}
		dst.Set(n)
	case reflect.Struct:
		dst.Set(src)
		for i := range t.NumField() {
			if needsCopy(t.Field(i).Type) && t.Field(i).IsExported() {
				deepCopy(dst.Field(i), src.Field(i))
			}
		}
	default:
		dst.Set(src)
	}
}

// needsCopy reports whether values of t can share memory.
func needsCopy(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return true
	case reflect.Struct:
		for i := range t.NumField() {
			if needsCopy(t.Field(i).Type) {
				return true
			}
		}
	case reflect.Array:
		return needsCopy(t.Elem())
	}
	return false
}
