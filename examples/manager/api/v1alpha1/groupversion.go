// Package v1alpha1 holds the Go types of the Fleet custom resource (group
// example.typedkube.io), as a kubebuilder project's api/ directory does. The
// CustomResourceDefinition is config/crd/example.typedkube.io_fleets.yaml.
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of the types of this package.
var GroupVersion = schema.GroupVersion{Group: "example.typedkube.io", Version: "v1alpha1"}

// AddToScheme registers the types of this package in s.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Fleet{}, &FleetList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
