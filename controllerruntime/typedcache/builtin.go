package typedcache

import (
	"context"
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/clientgo"
	"github.com/typedkube/informer/wire"
)

// builtinMaker returns the maker of the factory's informers of obj's Go
// type, for the built-in kinds controllers watch most, or nil: those are
// decoded by package wire without an entry in Options.Types. Other
// built-in kinds are cached as any Go type the cache does not know (see
// fallback.go), unless Options.Types names them.
//
// Their informers are informer.ForType's, of client.Object: one
// instantiation of the factory's generic pipeline serves them all, where
// For[T] of each would compile it again for T (about 210 KB of binary a
// kind, and 0.9 s and 25 MB of compilation). Only the copy into a
// reader's object is the kind's own code: its generated DeepCopyInto.
func builtinMaker(obj any) entryMaker {
	if deep := builtinCopier(obj); deep != nil {
		return erasedMaker(reflect.TypeOf(obj), deep)
	}
	return nil
}

// builtinCopier returns the deep copy of objects of obj's Go type into
// another of that type, for the built-in kinds of builtinMaker; nil for
// others.
func builtinCopier(obj any) func(src, dst client.Object) {
	switch obj.(type) {
	case *corev1.Pod:
		return func(src, dst client.Object) { src.(*corev1.Pod).DeepCopyInto(dst.(*corev1.Pod)) }
	case *corev1.ConfigMap:
		return func(src, dst client.Object) { src.(*corev1.ConfigMap).DeepCopyInto(dst.(*corev1.ConfigMap)) }
	case *corev1.Secret:
		return func(src, dst client.Object) { src.(*corev1.Secret).DeepCopyInto(dst.(*corev1.Secret)) }
	case *corev1.Service:
		return func(src, dst client.Object) { src.(*corev1.Service).DeepCopyInto(dst.(*corev1.Service)) }
	case *corev1.Namespace:
		return func(src, dst client.Object) { src.(*corev1.Namespace).DeepCopyInto(dst.(*corev1.Namespace)) }
	case *corev1.Node:
		return func(src, dst client.Object) { src.(*corev1.Node).DeepCopyInto(dst.(*corev1.Node)) }
	case *corev1.PersistentVolumeClaim:
		return func(src, dst client.Object) {
			src.(*corev1.PersistentVolumeClaim).DeepCopyInto(dst.(*corev1.PersistentVolumeClaim))
		}
	case *corev1.PersistentVolume:
		return func(src, dst client.Object) {
			src.(*corev1.PersistentVolume).DeepCopyInto(dst.(*corev1.PersistentVolume))
		}
	case *corev1.ServiceAccount:
		return func(src, dst client.Object) { src.(*corev1.ServiceAccount).DeepCopyInto(dst.(*corev1.ServiceAccount)) }
	case *corev1.Event:
		return func(src, dst client.Object) { src.(*corev1.Event).DeepCopyInto(dst.(*corev1.Event)) }
	case *appsv1.Deployment:
		return func(src, dst client.Object) { src.(*appsv1.Deployment).DeepCopyInto(dst.(*appsv1.Deployment)) }
	case *appsv1.ReplicaSet:
		return func(src, dst client.Object) { src.(*appsv1.ReplicaSet).DeepCopyInto(dst.(*appsv1.ReplicaSet)) }
	case *appsv1.StatefulSet:
		return func(src, dst client.Object) { src.(*appsv1.StatefulSet).DeepCopyInto(dst.(*appsv1.StatefulSet)) }
	case *appsv1.DaemonSet:
		return func(src, dst client.Object) { src.(*appsv1.DaemonSet).DeepCopyInto(dst.(*appsv1.DaemonSet)) }
	case *batchv1.Job:
		return func(src, dst client.Object) { src.(*batchv1.Job).DeepCopyInto(dst.(*batchv1.Job)) }
	case *batchv1.CronJob:
		return func(src, dst client.Object) { src.(*batchv1.CronJob).DeepCopyInto(dst.(*batchv1.CronJob)) }
	case *networkingv1.Ingress:
		return func(src, dst client.Object) { src.(*networkingv1.Ingress).DeepCopyInto(dst.(*networkingv1.Ingress)) }
	case *discoveryv1.EndpointSlice:
		return func(src, dst client.Object) {
			src.(*discoveryv1.EndpointSlice).DeepCopyInto(dst.(*discoveryv1.EndpointSlice))
		}
	case *coordinationv1.Lease:
		return func(src, dst client.Object) { src.(*coordinationv1.Lease).DeepCopyInto(dst.(*coordinationv1.Lease)) }
	case *rbacv1.Role:
		return func(src, dst client.Object) { src.(*rbacv1.Role).DeepCopyInto(dst.(*rbacv1.Role)) }
	case *rbacv1.RoleBinding:
		return func(src, dst client.Object) { src.(*rbacv1.RoleBinding).DeepCopyInto(dst.(*rbacv1.RoleBinding)) }
	}
	return nil
}

// erasedMaker returns the maker of the entries of a kind of Go type typ,
// whose objects deep copies into another of typ: the factory's ForType
// informer, of client.Object, decoded by package wire unless
// Options.Decoding says otherwise.
func erasedMaker(typ reflect.Type, deep func(src, dst client.Object)) entryMaker {
	return func(ctx context.Context, s *scope, k kind) (entry, error) {
		var pre func(client.Object)
		if s.dropManagedFields() && !wireDecodesType(s, typ) {
			pre = dropManagedFields[client.Object]
		}
		o := forOptions(s, k, pre)
		o.Transform = checkedTransform(o.Transform, typ)
		inf, err := informer.ForType(ctx, s.factory, typ, o)
		if err != nil {
			return nil, fmt.Errorf("typedcache: informer of %v: %w", k.gvk, err)
		}
		conv := sameConverter[client.Object]()
		conv.deep = deep
		return newTypedEntry(inf, k, conv, clientgo.SharedIndexInformer(inf), removeFrom(s.factory, inf.Name())), nil
	}
}

// wireDecodesType is wireDecodes for the Go type typ.
func wireDecodesType(s *scope, typ reflect.Type) bool {
	if s.c.opts.Decoding != informer.DecodeWire {
		return false
	}
	_, err := wire.NewDecoderOf[client.Object](typ, wire.Options{})
	return err == nil
}

// checkedTransform returns f, which must return objects of typ: any other
// client.Object it returns is an error the informer reports, as For[T]'s
// informer reports an object that is not a T.
func checkedTransform(f informer.TransformFunc[client.Object], typ reflect.Type) informer.TransformFunc[client.Object] {
	if f == nil {
		return nil
	}
	return func(obj client.Object) (client.Object, error) {
		out, err := f(obj)
		if err == nil && reflect.TypeOf(out) != typ {
			return nil, fmt.Errorf("typedcache: the transform returned %T for a %v", out, typ)
		}
		return out, err
	}
}
