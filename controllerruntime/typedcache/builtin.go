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
		return deepCopier[*corev1.Pod]
	case *corev1.ConfigMap:
		return deepCopier[*corev1.ConfigMap]
	case *corev1.Secret:
		return deepCopier[*corev1.Secret]
	case *corev1.Service:
		return deepCopier[*corev1.Service]
	case *corev1.Namespace:
		return deepCopier[*corev1.Namespace]
	case *corev1.Node:
		return deepCopier[*corev1.Node]
	case *corev1.PersistentVolumeClaim:
		return deepCopier[*corev1.PersistentVolumeClaim]
	case *corev1.PersistentVolume:
		return deepCopier[*corev1.PersistentVolume]
	case *corev1.ServiceAccount:
		return deepCopier[*corev1.ServiceAccount]
	case *corev1.Event:
		return deepCopier[*corev1.Event]
	case *appsv1.Deployment:
		return deepCopier[*appsv1.Deployment]
	case *appsv1.ReplicaSet:
		return deepCopier[*appsv1.ReplicaSet]
	case *appsv1.StatefulSet:
		return deepCopier[*appsv1.StatefulSet]
	case *appsv1.DaemonSet:
		return deepCopier[*appsv1.DaemonSet]
	case *batchv1.Job:
		return deepCopier[*batchv1.Job]
	case *batchv1.CronJob:
		return deepCopier[*batchv1.CronJob]
	case *networkingv1.Ingress:
		return deepCopier[*networkingv1.Ingress]
	case *discoveryv1.EndpointSlice:
		return deepCopier[*discoveryv1.EndpointSlice]
	case *coordinationv1.Lease:
		return deepCopier[*coordinationv1.Lease]
	case *rbacv1.Role:
		return deepCopier[*rbacv1.Role]
	case *rbacv1.RoleBinding:
		return deepCopier[*rbacv1.RoleBinding]
	}
	return nil
}

// deepCopier copies src, a T, deeply into dst, another T, with T's
// generated DeepCopyInto: the copy of an erased entry's reads.
func deepCopier[T interface {
	client.Object
	DeepCopyInto(T)
}](src, dst client.Object) {
	src.(T).DeepCopyInto(dst.(T))
}

// erasedMaker returns the maker of the entries of a kind of Go type typ,
// whose objects deep copies into another of typ: the factory's ForType
// informer, of client.Object, decoded by package wire unless
// Options.Decoding says otherwise.
func erasedMaker(typ reflect.Type, deep func(src, dst client.Object)) entryMaker {
	return func(ctx context.Context, s *scope, k kind) (entry, error) {
		var pre func(client.Object)
		if s.dropManagedFields() && !wireDecodes(s, typ) {
			pre = dropManagedFields[client.Object]
		}
		inf, err := informer.ForType(ctx, s.factory, typ, erasedOptions(s, k, pre, typ))
		if err != nil {
			return nil, fmt.Errorf("typedcache: informer of %v: %w", k.gvk, err)
		}
		return erasedEntry(s, k, inf, deep), nil
	}
}

// erasedOptions returns the options of the informer of k in s, whose
// objects are of typ, handed out as client.Object (see forOptions): the
// scope's transform must return objects of typ, any other client.Object
// being an error the informer reports, as For[T]'s informer reports an
// object that is not a T.
func erasedOptions(s *scope, k kind, pre func(client.Object), typ reflect.Type) informer.ForOptions[client.Object] {
	o := forOptions(s, k, pre)
	if f := o.Transform; f != nil {
		o.Transform = func(obj client.Object) (client.Object, error) {
			out, err := f(obj)
			if err == nil && reflect.TypeOf(out) != typ {
				return nil, fmt.Errorf("typedcache: the transform returned %T for a %v", out, typ)
			}
			return out, err
		}
	}
	return o
}

// erasedEntry returns the entry of inf, an informer of client.Object whose
// objects deep copies into another of their type.
func erasedEntry(s *scope, k kind, inf *informer.SharedIndexInformer[client.Object], deep func(src, dst client.Object)) entry {
	conv := sameConverter[client.Object]()
	conv.deep = deep
	return newTypedEntry(inf, k, conv, clientgo.SharedIndexInformer(inf), removeFrom(s.factory, inf.Name()))
}
