package testobj

import (
	"fmt"
	"reflect"
	"time"
)

var locationType = reflect.TypeFor[*time.Location]()

// SharedRefs returns the paths at which a and b hold the same map, the same
// pointer or slices over the same memory: what a write through one would
// change in the other. Strings, which no one can write to, are not looked
// at, nor a time's *time.Location, which a deep copy shares too.
func SharedRefs(a, b any) []string {
	var out []string
	var walk func(path string, x, y reflect.Value)
	walk = func(path string, x, y reflect.Value) {
		if !x.IsValid() || !y.IsValid() || x.Type() != y.Type() {
			return
		}
		switch x.Kind() {
		case reflect.Pointer:
			if x.IsNil() || y.IsNil() || x.Type() == locationType {
				return
			}
			if x.Pointer() == y.Pointer() && x.Type().Elem().Size() > 0 {
				out = append(out, path)
				return
			}
			walk(path, x.Elem(), y.Elem())
		case reflect.Map:
			if x.IsNil() || y.IsNil() {
				return
			}
			if x.Pointer() == y.Pointer() {
				out = append(out, path)
				return
			}
			for _, k := range x.MapKeys() {
				walk(fmt.Sprintf("%s[%v]", path, k), x.MapIndex(k), y.MapIndex(k))
			}
		case reflect.Slice:
			if x.Cap() > 0 && y.Cap() > 0 && x.Pointer() == y.Pointer() && x.Type().Elem().Size() > 0 {
				out = append(out, path)
				return
			}
			for i := range min(x.Len(), y.Len()) {
				walk(fmt.Sprintf("%s[%d]", path, i), x.Index(i), y.Index(i))
			}
		case reflect.Interface:
			if !x.IsNil() && !y.IsNil() {
				walk(path, x.Elem(), y.Elem())
			}
		case reflect.Struct:
			for i := range x.NumField() {
				walk(path+"."+x.Type().Field(i).Name, x.Field(i), y.Field(i))
			}
		}
	}
	walk("", reflect.ValueOf(a), reflect.ValueOf(b))
	return out
}
