package typedcache

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// builtinMaker returns the maker of the factory's typed informers of obj's
// Go type, for the built-in kinds controllers watch most, or nil: those
// are decoded by package wire without an entry in Options.Types. Other
// built-in kinds are cached as any Go type the cache does not know (see
// fallback.go), unless Options.Types names them.
//
// Not every kind of client-go's scheme is here: each instantiates the
// factory's whole generic pipeline, which costs the compiler about 0.9 s
// and 25 MB per kind (measured: 147 kinds took 130 s and 4 GB to compile
// this package, one kind 7 s and 400 MB), for every program that imports
// the package.
func builtinMaker(obj any) entryMaker {
	switch obj.(type) {
	case *corev1.Pod:
		return typedMaker[*corev1.Pod]
	case *corev1.ConfigMap:
		return typedMaker[*corev1.ConfigMap]
	case *corev1.Secret:
		return typedMaker[*corev1.Secret]
	case *corev1.Service:
		return typedMaker[*corev1.Service]
	case *corev1.Namespace:
		return typedMaker[*corev1.Namespace]
	case *corev1.Node:
		return typedMaker[*corev1.Node]
	case *corev1.PersistentVolumeClaim:
		return typedMaker[*corev1.PersistentVolumeClaim]
	case *corev1.PersistentVolume:
		return typedMaker[*corev1.PersistentVolume]
	case *corev1.ServiceAccount:
		return typedMaker[*corev1.ServiceAccount]
	case *corev1.Event:
		return typedMaker[*corev1.Event]
	case *appsv1.Deployment:
		return typedMaker[*appsv1.Deployment]
	case *appsv1.ReplicaSet:
		return typedMaker[*appsv1.ReplicaSet]
	case *appsv1.StatefulSet:
		return typedMaker[*appsv1.StatefulSet]
	case *appsv1.DaemonSet:
		return typedMaker[*appsv1.DaemonSet]
	case *batchv1.Job:
		return typedMaker[*batchv1.Job]
	case *batchv1.CronJob:
		return typedMaker[*batchv1.CronJob]
	case *networkingv1.Ingress:
		return typedMaker[*networkingv1.Ingress]
	case *discoveryv1.EndpointSlice:
		return typedMaker[*discoveryv1.EndpointSlice]
	case *coordinationv1.Lease:
		return typedMaker[*coordinationv1.Lease]
	case *rbacv1.Role:
		return typedMaker[*rbacv1.Role]
	case *rbacv1.RoleBinding:
		return typedMaker[*rbacv1.RoleBinding]
	}
	return nil
}
