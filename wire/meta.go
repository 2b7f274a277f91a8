package wire

import (
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Meta is the object metadata of a projection P: embed it, as the first
// field or anywhere at the top level of P, and *P is an object the informer
// can cache (it implements metav1.Object and runtime.Object):
//
//	type PodSlim struct {
//		wire.Meta[PodSlim]
//		Spec PodSpecSlim
//	}
//
// It mirrors metav1.ObjectMeta without SelfLink and ManagedFields, which it
// never decodes; their getters return zero values and their setters do
// nothing. Options.Annotations can keep fewer annotations.
type Meta[P any] struct {
	Name                       string
	GenerateName               string
	Namespace                  string
	UID                        types.UID
	ResourceVersion            string
	Generation                 int64
	CreationTimestamp          metav1.Time
	DeletionTimestamp          *metav1.Time
	DeletionGracePeriodSeconds *int64
	Labels                     map[string]string
	Annotations                map[string]string
	OwnerReferences            []metav1.OwnerReference
	Finalizers                 []string
}

// metaMarker is implemented by every *Meta, and by a pointer to any struct
// that embeds one: wireMeta returns the Meta's own type and its type
// parameter.
type metaMarker interface {
	wireMeta() (self, param reflect.Type)
}

func (*Meta[P]) wireMeta() (self, param reflect.Type) {
	return reflect.TypeFor[Meta[P]](), reflect.TypeFor[P]()
}

// metaParam reports whether t is a Meta (not a struct that embeds one) and
// returns its type parameter.
func metaParam(t reflect.Type) (reflect.Type, bool) {
	if t.Kind() != reflect.Struct || !reflect.PointerTo(t).Implements(metaMarkerType) {
		return nil, false
	}
	self, param := reflect.New(t).Interface().(metaMarker).wireMeta()
	return param, self == t
}

var _ metav1.Object = (*Meta[struct{}])(nil)

func (m *Meta[P]) GetNamespace() string                { return m.Namespace }
func (m *Meta[P]) SetNamespace(v string)               { m.Namespace = v }
func (m *Meta[P]) GetName() string                     { return m.Name }
func (m *Meta[P]) SetName(v string)                    { m.Name = v }
func (m *Meta[P]) GetGenerateName() string             { return m.GenerateName }
func (m *Meta[P]) SetGenerateName(v string)            { m.GenerateName = v }
func (m *Meta[P]) GetUID() types.UID                   { return m.UID }
func (m *Meta[P]) SetUID(v types.UID)                  { m.UID = v }
func (m *Meta[P]) GetResourceVersion() string          { return m.ResourceVersion }
func (m *Meta[P]) SetResourceVersion(v string)         { m.ResourceVersion = v }
func (m *Meta[P]) GetGeneration() int64                { return m.Generation }
func (m *Meta[P]) SetGeneration(v int64)               { m.Generation = v }
func (m *Meta[P]) GetSelfLink() string                 { return "" }
func (m *Meta[P]) SetSelfLink(string)                  {}
func (m *Meta[P]) GetCreationTimestamp() metav1.Time   { return m.CreationTimestamp }
func (m *Meta[P]) SetCreationTimestamp(v metav1.Time)  { m.CreationTimestamp = v }
func (m *Meta[P]) GetDeletionTimestamp() *metav1.Time  { return m.DeletionTimestamp }
func (m *Meta[P]) SetDeletionTimestamp(v *metav1.Time) { m.DeletionTimestamp = v }
func (m *Meta[P]) GetDeletionGracePeriodSeconds() *int64 {
	return m.DeletionGracePeriodSeconds
}
func (m *Meta[P]) SetDeletionGracePeriodSeconds(v *int64)        { m.DeletionGracePeriodSeconds = v }
func (m *Meta[P]) GetLabels() map[string]string                  { return m.Labels }
func (m *Meta[P]) SetLabels(v map[string]string)                 { m.Labels = v }
func (m *Meta[P]) GetAnnotations() map[string]string             { return m.Annotations }
func (m *Meta[P]) SetAnnotations(v map[string]string)            { m.Annotations = v }
func (m *Meta[P]) GetFinalizers() []string                       { return m.Finalizers }
func (m *Meta[P]) SetFinalizers(v []string)                      { m.Finalizers = v }
func (m *Meta[P]) GetOwnerReferences() []metav1.OwnerReference   { return m.OwnerReferences }
func (m *Meta[P]) SetOwnerReferences(v []metav1.OwnerReference)  { m.OwnerReferences = v }
func (m *Meta[P]) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (m *Meta[P]) SetManagedFields([]metav1.ManagedFieldsEntry)  {}
func (m *Meta[P]) GetObjectKind() schema.ObjectKind              { return schema.EmptyObjectKind }

// DeepCopyObject returns a deep copy of the P this Meta is embedded in.
// It panics if the Meta is not a field of a P, which is a programming
// error (a Meta[P] used outside P). NewDecoder refuses a projection that
// embeds a Meta[Q] in any struct but Q, so the objects a Decoder makes
// are always safe to copy.
func (m *Meta[P]) DeepCopyObject() runtime.Object {
	off := metaOffset(reflect.TypeFor[P]())
	if off < 0 {
		panic(fmt.Sprintf("wire: %T is not a top-level field of %v", m, reflect.TypeFor[P]()))
	}
	src := (*P)(unsafe.Add(unsafe.Pointer(m), -off))
	dst := new(P)
	deepCopy(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem())
	obj, ok := any(dst).(runtime.Object)
	if !ok {
		panic(fmt.Sprintf("wire: *%v is not a runtime.Object", reflect.TypeFor[P]()))
	}
	return obj
}

// DeepCopy returns a deep copy of p.
func DeepCopy[P any](p *P) *P {
	if p == nil {
		return nil
	}
	dst := new(P)
	deepCopy(reflect.ValueOf(dst).Elem(), reflect.ValueOf(p).Elem())
	return dst
}

var metaOffsets sync.Map // reflect.Type -> int (-1: none)

// metaOffset returns the offset of the Meta[p] embedded in the struct type
// p, or -1.
func metaOffset(p reflect.Type) int {
	if v, ok := metaOffsets.Load(p); ok {
		return v.(int)
	}
	off := -1
	if p.Kind() == reflect.Struct {
		for i := range p.NumField() {
			if f := p.Field(i); f.Anonymous {
				if param, ok := metaParam(f.Type); ok && param == p {
					off = int(f.Offset)
					break
				}
			}
		}
	}
	metaOffsets.Store(p, off)
	return off
}
