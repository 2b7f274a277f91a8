package objmeta

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/typedkube/informer/wire"
)

type named struct{ ObjectMeta metav1.ObjectMeta }

type inner struct{ metav1.ObjectMeta }

type promoted struct{ inner }

type byPointer struct{ *metav1.ObjectMeta }

type throughPointer struct{ *inner }

type wrongType struct{ ObjectMeta string }

// hidden's ObjectMeta is unexported: Object cannot hand it out.
type hidden struct{ objectMeta metav1.ObjectMeta }

var _ = hidden{}.objectMeta

// Object finds the ObjectMeta wherever Go would name it x.ObjectMeta with
// that type, and the pointer it returns is the object's own field.
func TestObject(t *testing.T) {
	pod := &corev1.Pod{}
	meta := &metav1.PartialObjectMetadata{}
	n := &named{}
	p := &promoted{}
	for _, tc := range []struct {
		name string
		obj  any
		want *metav1.ObjectMeta // nil: none
	}{
		{"a built-in type", pod, &pod.ObjectMeta},
		{"metadata", meta, &meta.ObjectMeta},
		{"a named field", n, &n.ObjectMeta},
		{"promoted from an unexported type", p, &p.ObjectMeta},
		{"unstructured", &unstructured.Unstructured{}, nil},
		{"a nil pointer", (*corev1.Pod)(nil), nil},
		{"not a pointer", corev1.Pod{}, nil},
		{"nil", nil, nil},
		{"a pointer field", &byPointer{&metav1.ObjectMeta{}}, nil},
		{"promoted through a nil pointer", &throughPointer{}, nil},
		{"a field of another type", &wrongType{}, nil},
		{"an unexported field", &hidden{}, nil},
		{"not a struct", new(int), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 2 { // found, then found in indexes
				got, ok := Object(tc.obj)
				if ok != (tc.want != nil) || got != tc.want {
					t.Fatalf("Object = %p, %v; want %p", got, ok, tc.want)
				}
			}
		})
	}
	om, _ := Object(pod)
	om.Labels = map[string]string{"a": "b"}
	if pod.Labels["a"] != "b" {
		t.Error("a write through Object's pointer did not reach the object")
	}
}

func TestList(t *testing.T) {
	pods := &corev1.PodList{}
	if got, ok := List(pods); !ok || got != &pods.ListMeta {
		t.Errorf("List(PodList) = %p, %v; want %p", got, ok, &pods.ListMeta)
	}
	if _, ok := List(&unstructured.UnstructuredList{}); ok {
		t.Error("List found a ListMeta in an UnstructuredList")
	}
	if _, ok := List(&corev1.Pod{}); ok {
		t.Error("List found a ListMeta in a Pod")
	}
}

// projection embeds package wire's Meta, as a projection does.
type projection struct {
	wire.Meta[projection]
}

// innerProjection and promotedProjection have a wire.Meta promoted from an
// unexported struct; pointerProjection has one behind a pointer.
type (
	innerProjection    struct{ wire.Meta[innerProjection] }
	promotedProjection struct{ innerProjection }
	pointerProjection  struct {
		*wire.Meta[pointerProjection]
	}
)

// notWireMeta has a field named Meta that is not package wire's.
type notWireMeta struct {
	Meta struct{ Labels, Annotations map[string]string }
}

// Labels finds the labels and annotations of an ObjectMeta and of a
// projection's wire.Meta, and of nothing else.
func TestLabels(t *testing.T) {
	pod := &corev1.Pod{}
	proj := &projection{}
	promoted := &promotedProjection{}
	for _, tc := range []struct {
		name       string
		obj        any
		labels     *map[string]string
		annotation *map[string]string
	}{
		{"a built-in type", pod, &pod.Labels, &pod.Annotations},
		{"a projection", proj, &proj.Labels, &proj.Annotations},
		{"promoted from an unexported type", promoted, &promoted.Labels, &promoted.Annotations},
		{"behind a pointer", &pointerProjection{&wire.Meta[pointerProjection]{}}, nil, nil},
		{"a nil pointer", (*projection)(nil), nil, nil},
		{"not a struct", new(int), nil, nil},
		{"a field named Meta of another type", &notWireMeta{}, nil, nil},
		{"unstructured", &unstructured.Unstructured{}, nil, nil},
		{"nil", nil, nil, nil},
	} {
		for range 2 { // found, then found in the cache
			l, a, ok := Labels(tc.obj)
			if ok != (tc.labels != nil) || l != tc.labels || a != tc.annotation {
				t.Errorf("%s: Labels = %p, %p, %v; want %p, %p", tc.name, l, a, ok, tc.labels, tc.annotation)
			}
		}
	}
}

// BenchmarkObject is what Object costs a caller that drops an object's
// managedFields through it, against the method call it replaces.
func BenchmarkObject(b *testing.B) {
	var obj metav1.Object = &corev1.Pod{}
	b.Run("via=objmeta", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if m, ok := Object(obj); ok {
				m.ManagedFields = nil
			}
		}
	})
	b.Run("via=method", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			obj.SetManagedFields(nil)
		}
	})
}
