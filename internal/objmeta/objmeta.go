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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Object returns the ObjectMeta of obj, a pointer to a struct with a
// metav1.ObjectMeta field named ObjectMeta, embedded (every built-in
// type, PartialObjectMetadata, kubebuilder's types) or not; false for
// anything else (an *unstructured.Unstructured among them).
func Object(obj any) (*metav1.ObjectMeta, bool) {
	return field[metav1.ObjectMeta](obj, "ObjectMeta")
}

// List returns the ListMeta of list, a pointer to a struct with a
// metav1.ListMeta field named ListMeta, as Object does.
func List(list any) (*metav1.ListMeta, bool) {
	return field[metav1.ListMeta](list, "ListMeta")
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
// wire embeds (a field named Meta); false for anything else.
func Labels(obj any) (labels, annotations *map[string]string, ok bool) {
	if m, ok := Object(obj); ok {
		return &m.Labels, &m.Annotations, true
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, nil, false
	}
	f, ok := v.Elem().Type().FieldByName("Meta")
	if !ok || f.Type.Kind() != reflect.Struct || f.Type.PkgPath() != wirePackage || !strings.HasPrefix(f.Type.Name(), wireMetaName) {
		return nil, nil, false
	}
	meta, err := v.Elem().FieldByIndexErr(f.Index)
	if err != nil || !meta.CanInterface() {
		return nil, nil, false
	}
	labels, lok := meta.FieldByName("Labels").Addr().Interface().(*map[string]string)
	annotations, aok := meta.FieldByName("Annotations").Addr().Interface().(*map[string]string)
	return labels, annotations, lok && aok
}

// fieldKey names a field of a struct type.
type fieldKey struct {
	t    reflect.Type
	name string
}

// indexes holds, by fieldKey, the field's index sequence (see
// reflect.Value.FieldByIndex), or nil if the struct has no such field of
// the type wanted.
var indexes sync.Map

// field returns the field named name, of type M, of the struct x points
// to.
func field[M any](x any, name string) (*M, bool) {
	v := reflect.ValueOf(x)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil, false
	}
	index := indexOf(v.Type().Elem(), name, reflect.TypeFor[M]())
	if index == nil {
		return nil, false
	}
	f, err := v.Elem().FieldByIndexErr(index)
	if err != nil || !f.CanInterface() { // through a nil pointer, or unexported
		return nil, false
	}
	m, ok := f.Addr().Interface().(*M)
	return m, ok
}

// indexOf returns the index sequence of t's field name, of type want; nil
// if t is not a struct or has none.
func indexOf(t reflect.Type, name string, want reflect.Type) []int {
	k := fieldKey{t, name}
	if index, ok := indexes.Load(k); ok {
		return index.([]int)
	}
	var index []int
	if t.Kind() == reflect.Struct {
		if f, ok := t.FieldByName(name); ok && f.Type == want {
			index = f.Index
		}
	}
	indexes.Store(k, index)
	return index
}
