package typedcache

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/typedkube/informer"
)

// managedBy is the managedFields entry the objects of these tests carry.
var managedBy = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}}

// Options.DropManagedFields drops managedFields from the objects client-go
// decodes (Decoding: DecodeClientGo), which package wire does not see: a
// built-in kind's, as unstructured objects, as metadata and a CRD type's
// of the scheme (the informers the cache makes for each: erasedMaker,
// unstructuredMaker, metadataMaker, the fallback).
func TestDropManagedFieldsDecodedByClientGo(t *testing.T) {
	scheme := testScheme(t)
	srv := newServer(t, scheme)
	p := pod("a", "p", "n1", nil)
	p.ManagedFields = managedBy
	w := &widget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "w", ManagedFields: managedBy}, Size: 3}
	w.SetGroupVersionKind(widgetGV.WithKind("Widget"))
	create(t, srv, p, w)
	c := newTestCache(t, srv, scheme, cache.Options{}, Options{Decoding: informer.DecodeClientGo, DropManagedFields: true})
	start(t, c)
	ctx := timeout(t)
	key := client.ObjectKey{Namespace: "a", Name: "p"}
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	for _, tc := range []struct {
		name string
		obj  client.Object
		key  client.ObjectKey
	}{
		{"a built-in kind", &corev1.Pod{}, key},
		{"unstructured", u, key},
		{"metadata", m, key},
		{"a type of the scheme", &widget{}, client.ObjectKey{Namespace: "a", Name: "w"}},
	} {
		if err := c.Get(ctx, tc.key, tc.obj); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := tc.obj.GetManagedFields(); got != nil {
			t.Errorf("%s: managedFields %v", tc.name, got)
		}
	}
}

// dropManagedFields and deleting read an object's ObjectMeta, or an
// unstructured object's map; an object of another type keeps its
// managedFields, and reads as being deleted.
func TestObjectMetaWithoutMethods(t *testing.T) {
	now := metav1.Now()
	typed := func(deleted bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: managedBy}}
		if deleted {
			p.DeletionTimestamp = &now
		}
		return p
	}
	untyped := func(deleted bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetName("u")
		u.SetManagedFields(managedBy)
		if deleted {
			u.SetDeletionTimestamp(&now)
		}
		return u
	}
	other := &metaElsewhere{managed: managedBy}
	for _, tc := range []struct {
		name                  string
		obj                   client.Object
		deleting, keepsFields bool
	}{
		{"typed", typed(false), false, false},
		{"typed, being deleted", typed(true), true, false},
		{"metadata", &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ManagedFields: managedBy}}, false, false},
		{"unstructured", untyped(false), false, false},
		{"unstructured, being deleted", untyped(true), true, false},
		{"metadata kept elsewhere", other, true, true},
	} {
		if got := deleting(tc.obj); got != tc.deleting {
			t.Errorf("%s: deleting = %v, want %v", tc.name, got, tc.deleting)
		}
		dropManagedFields(tc.obj)
		if kept := tc.obj.GetManagedFields() != nil; kept != tc.keepsFields {
			t.Errorf("%s: managedFields kept: %v, want %v", tc.name, kept, tc.keepsFields)
		}
	}
	// A type the cache was told calls its own method.
	other = &metaElsewhere{managed: managedBy}
	dropManagedFieldsOf(other)
	if other.managed != nil {
		t.Error("dropManagedFieldsOf kept the managedFields of a type with no ObjectMeta")
	}
	p := typed(false)
	dropManagedFieldsOf(p)
	if p.ManagedFields != nil {
		t.Error("dropManagedFieldsOf kept a Pod's managedFields")
	}
}

// metaElsewhere is a client.Object whose metadata is in no ObjectMeta
// field.
type metaElsewhere struct {
	metav1.Object // nil: only the methods below are called
	managed       []metav1.ManagedFieldsEntry
}

func (o *metaElsewhere) GetManagedFields() []metav1.ManagedFieldsEntry  { return o.managed }
func (o *metaElsewhere) SetManagedFields(m []metav1.ManagedFieldsEntry) { o.managed = m }
func (o *metaElsewhere) GetDeletionTimestamp() *metav1.Time             { return nil }
func (o *metaElsewhere) GetObjectKind() schema.ObjectKind               { return schema.EmptyObjectKind }
func (o *metaElsewhere) DeepCopyObject() runtime.Object                 { c := *o; return &c }
