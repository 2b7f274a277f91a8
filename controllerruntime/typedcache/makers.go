package typedcache

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/clientgo"
	"github.com/typedkube/informer/internal/objmeta"
	"github.com/typedkube/informer/wire"
)

// forOptions returns the options of the informer of k in s, with what
// runs on each object before it is cached: pre (the cache's own step),
// then the scope's transform.
func forOptions[T informer.Object](s *scope, k kind, pre func(T)) informer.ForOptions[T] {
	sel := s.selectionFor(k)
	return informer.ForOptions[T]{
		Namespace:     sel.namespace,
		LabelSelector: sel.label,
		FieldSelector: sel.field,
		ResyncPeriod:  sel.resync,
		Transform:     transformFor(s.spec.cfg.transform, pre),
	}
}

// transformFor returns pre followed by f, a transform of controller-runtime's
// signature, as a typed transform: an object f returns of another type is an
// error the informer reports, not a panic.
func transformFor[T informer.Object](f toolscache.TransformFunc, pre func(T)) informer.TransformFunc[T] {
	if f == nil && pre == nil {
		return nil
	}
	return func(obj T) (T, error) {
		if pre != nil {
			pre(obj)
		}
		if f == nil {
			return obj, nil
		}
		out, err := f(obj)
		var zero T
		if err != nil {
			return zero, err
		}
		t, ok := out.(T)
		if !ok {
			return zero, fmt.Errorf("typedcache: the transform returned %T for a %T", out, obj)
		}
		return t, nil
	}
}

// dropManagedFields is what Options.DropManagedFields does to an object
// that was decoded with its managedFields: it empties the field of the
// object's ObjectMeta, or of an unstructured object's metadata. It does
// not call SetManagedFields through an interface, which would keep that
// method of every API type in a program's binary (see package objmeta):
// an object of another type (a client.Object of one's own that keeps its
// metadata in no ObjectMeta field) keeps its managedFields, unless the
// cache was told its type (Options.Types, For: dropManagedFieldsOf).
// It calls no method of T, so that T may be an interface (client.Object).
func dropManagedFields[T any](obj T) {
	if m, ok := objmeta.Object(obj); ok {
		m.ManagedFields = nil
	} else if u, ok := any(obj).(*unstructured.Unstructured); ok && u.GetManagedFields() != nil {
		u.SetManagedFields(nil)
	}
}

// dropManagedFieldsOf is dropManagedFields for the objects of T, a type
// the cache was told (For): T's own methods, which a call on a concrete T
// keeps alone.
func dropManagedFieldsOf[T client.Object](obj T) {
	if obj.GetManagedFields() != nil {
		obj.SetManagedFields(nil)
	}
}

// deleting reports whether obj is being deleted: whether its ObjectMeta,
// or an unstructured object's metadata, has a deletion timestamp. Like
// dropManagedFields, it reads no method through an interface: an object
// of another type reads as being deleted, so that a read waiting for it
// to go (Cache.waitGone) does not wait on it, as controller-runtime's
// cache never waits.
func deleting(obj any) bool {
	if m, ok := objmeta.Object(obj); ok {
		return m.DeletionTimestamp != nil
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.GetDeletionTimestamp() != nil
	}
	return true
}

// removeFrom returns the stop function of an informer of f named name.
func removeFrom(f *informer.Factory, name string) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := f.Remove(ctx, name); err != nil && !errors.Is(err, informer.ErrNoInformer) && !errors.Is(err, informer.ErrFactoryStopped) {
			return err
		}
		return nil
	}
}

// typedMaker makes the entry of a kind whose Go type T the cache knows: the
// factory's informer of T, decoded by package wire unless Options.Decoding
// says otherwise.
func typedMaker[T client.Object](ctx context.Context, s *scope, k kind) (entry, error) {
	var pre func(T)
	if s.dropManagedFields() && !wireDecodes(s, reflect.TypeFor[T]()) {
		pre = dropManagedFieldsOf[T]
	}
	inf, err := informer.ForContext(ctx, s.factory, forOptions(s, k, pre))
	if err != nil {
		return nil, fmt.Errorf("typedcache: informer of %v: %w", k.gvk, err)
	}
	return newTypedEntry(inf, k, sameConverter[T](), clientgo.SharedIndexInformer(inf), removeFrom(s.factory, inf.Name())), nil
}

// wireDecodes reports whether the factory of s decodes typ with package
// wire, which drops managedFields itself when asked to.
func wireDecodes(s *scope, typ reflect.Type) bool {
	if s.c.opts.Decoding != informer.DecodeWire {
		return false
	}
	_, err := wire.NewDecoderOf[client.Object](typ, wire.Options{})
	return err == nil
}

// unstructuredMaker makes the entry of a kind read as
// *unstructured.Unstructured: the factory's informer of its resource,
// through the dynamic client, of client.Object (informer.ForUnstructuredAs:
// the instantiation the built-in kinds' informers share).
func unstructuredMaker(_ context.Context, s *scope, k kind) (entry, error) {
	var pre func(client.Object)
	if s.dropManagedFields() {
		pre = dropManagedFields[client.Object]
	}
	o := erasedOptions(s, k, pre, reflect.TypeFor[*unstructured.Unstructured]())
	inf, err := informer.ForUnstructuredAs(s.factory, k.gvr, o)
	if err != nil {
		return nil, fmt.Errorf("typedcache: informer of %v (unstructured): %w", k.gvk, err)
	}
	return erasedEntry(s, k, inf, deepCopier[*unstructured.Unstructured]), nil
}

// metadataMaker makes the entry of a kind read as
// *metav1.PartialObjectMetadata: the factory's informer of its resource,
// through the metadata client. Each object carries the kind's
// group-version-kind, as in controller-runtime, where the server's say
// PartialObjectMetadata: handlers and unsafe reads see the kind.
func metadataMaker(_ context.Context, s *scope, k kind) (entry, error) {
	gvk := k.gvk
	drop := s.dropManagedFields()
	pre := func(obj client.Object) {
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		if drop {
			dropManagedFields(obj)
		}
	}
	o := erasedOptions(s, k, pre, reflect.TypeFor[*metav1.PartialObjectMetadata]())
	inf, err := informer.ForMetadataAs(s.factory, k.gvr, o)
	if err != nil {
		return nil, fmt.Errorf("typedcache: informer of %v (metadata): %w", k.gvk, err)
	}
	return erasedEntry(s, k, inf, deepCopier[*metav1.PartialObjectMetadata]), nil
}
