// Package objmeta finds the metav1.ObjectMeta of an API object and the
// metav1.ListMeta of a list by reflection, for code that would otherwise
// call their getters and setters through an interface.
//
// A method called through an interface keeps, in a program's binary, the
// method of that name of every type the program converts to an interface:
// for the API types of client-go's scheme, about 55 KB a method. A field
// read through reflection keeps nothing.
package objmeta

import (
	"reflect"
	"strings"
	"sync"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Object returns the ObjectMeta of obj, a pointer to a struct with a
// metav1.ObjectMeta field named ObjectMeta, embedded (every built-in
// type, PartialObjectMetadata, kubebuilder's types) or not; false for
// anything else (an *unstructured.Unstructured among them).
func Object(obj any) (*metav1.ObjectMeta, bool) {
	return field[metav1.ObjectMeta](obj, "ObjectMeta", &objectMetas)
}

// List returns the ListMeta of list, a pointer to a struct with a
// metav1.ListMeta field named ListMeta, as Object does.
func List(list any) (*metav1.ListMeta, bool) {
	return field[metav1.ListMeta](list, "ListMeta", &listMetas)
}

// wirePackage and wireMetaName are the package and the start of the name
// of package wire's Meta[P], which a projection embeds in place of an
// ObjectMeta (this package cannot import wire, which may use it).
const (
	wirePackage  = "github.com/typedkube/informer/wire"
	wireMetaName = "Meta["
)

// Labels returns the labels and annotations fields of obj: those of its
// ObjectMeta (see Object), or of the wire.Meta a projection of package
// wire embeds (a field named Meta, not behind a pointer); false for
// anything else.
func Labels(obj any) (labels, annotations *map[string]string, ok bool) {
	if m, ok := Object(obj); ok {
		return &m.Labels, &m.Annotations, true
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil, nil, false
	}
	at, ok := wireMetas.Load(v.Type())
	if !ok {
		at = wireMetaMaps(v.Type().Elem())
		wireMetas.Store(v.Type(), at)
	}
	m := at.(mapsAt)
	if !m.ok {
		return nil, nil, false
	}
	p := v.UnsafePointer()
	return (*map[string]string)(unsafe.Add(p, m.labels)), (*map[string]string)(unsafe.Add(p, m.annotations)), true
}

// mapsAt is where a struct type has the labels and annotations of the
// wire.Meta it embeds.
type mapsAt struct {
	labels, annotations uintptr
	ok                  bool // false: no wire.Meta, or one behind a pointer
}

// wireMetas holds, by pointer type, where its struct has the labels and
// annotations of its wire.Meta.
var wireMetas sync.Map

// wireMetaMaps returns where t has the labels and annotations of its
// field Meta, a wire.Meta.
func wireMetaMaps(t reflect.Type) mapsAt {
	isMeta := func(f reflect.Type) bool {
		return f.Kind() == reflect.Struct && f.PkgPath() == wirePackage && strings.HasPrefix(f.Name(), wireMetaName)
	}
	meta, metaType := offsetOf(t, "Meta", isMeta)
	if !meta.ok {
		return mapsAt{}
	}
	stringMap := reflect.TypeFor[map[string]string]()
	isStringMap := func(f reflect.Type) bool { return f == stringMap }
	labels, _ := offsetOf(metaType, "Labels", isStringMap)
	annotations, _ := offsetOf(metaType, "Annotations", isStringMap)
	if !labels.ok || !annotations.ok {
		return mapsAt{}
	}
	return mapsAt{labels: meta.off + labels.off, annotations: meta.off + annotations.off, ok: true}
}

// fieldAt is where a struct type has the field a cache below is of.
type fieldAt struct {
	off uintptr
	ok  bool // false: no such field, or one behind a pointer
}

// objectMetas and listMetas hold, by pointer type, where its struct has
// its ObjectMeta and its ListMeta.
var objectMetas, listMetas sync.Map

// field returns the field named name, of type M, of the struct x points
// to; at caches where that field is, by x's type.
func field[M any](x any, name string, at *sync.Map) (*M, bool) {
	v := reflect.ValueOf(x)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil, false
	}
	f, ok := at.Load(v.Type())
	if !ok {
		want := reflect.TypeFor[M]()
		f, _ = offsetOf(v.Type().Elem(), name, func(t reflect.Type) bool { return t == want })
		at.Store(v.Type(), f)
	}
	if f := f.(fieldAt); f.ok {
		return (*M)(unsafe.Add(v.UnsafePointer(), f.off)), true
	}
	return nil, false
}

// offsetOf returns where t has its field name, of a type that is accepts, as
// Go promotes it: a field of t, or of a struct t embeds, not behind a
// pointer; and the field's type.
func offsetOf(t reflect.Type, name string, is func(reflect.Type) bool) (fieldAt, reflect.Type) {
	if t.Kind() != reflect.Struct {
		return fieldAt{}, nil
	}
	sf, ok := t.FieldByName(name)
	if !ok || !is(sf.Type) || !sf.IsExported() {
		return fieldAt{}, nil
	}
	var off uintptr
	for i, x := range sf.Index {
		f := t.Field(x)
		off += f.Offset
		if i < len(sf.Index)-1 {
			if f.Type.Kind() != reflect.Struct {
				return fieldAt{}, nil // behind a pointer
			}
			t = f.Type
		}
	}
	return fieldAt{off: off, ok: true}, sf.Type
}
