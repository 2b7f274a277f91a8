package controllerruntime

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Fleet is the parent kind of the test controller, as kubebuilder writes one: a Deployment-like
// custom resource asking for Replicas child ConfigMaps, each carrying the data of the Secret
// SecretName, with a status subresource the controller reports to. Its Go types are known to
// the manager's scheme only, as a kubebuilder project's are.
type Fleet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              FleetSpec   `json:"spec"`
	Status            FleetStatus `json:"status,omitempty"`
}

// FleetSpec is what a Fleet asks for.
type FleetSpec struct {
	Replicas   int64  `json:"replicas"`
	SecretName string `json:"secretName,omitempty"`
}

// FleetStatus is what the controller reports.
type FleetStatus struct {
	Replicas           int64  `json:"replicas,omitempty"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
	Config             string `json:"config,omitempty"` // the Secret's data the children carry
}

// FleetList is a list of Fleets.
type FleetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Fleet `json:"items"`
}

func (f *Fleet) DeepCopyInto(out *Fleet) {
	*out = *f
	f.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
}

func (f *Fleet) DeepCopy() *Fleet {
	if f == nil {
		return nil
	}
	out := new(Fleet)
	f.DeepCopyInto(out)
	return out
}

func (f *Fleet) DeepCopyObject() runtime.Object { return f.DeepCopy() }

func (l *FleetList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &FleetList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Fleet, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

// fleetGV is the group and version of Fleets.
var fleetGV = schema.GroupVersion{Group: "crt.e2e.typedkube.io", Version: "v1"}

// newScheme returns client-go's scheme with the Fleet types, as a kubebuilder main.go makes it.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	s.AddKnownTypes(fleetGV, &Fleet{}, &FleetList{})
	metav1.AddToGroupVersion(s, fleetGV)
	return s
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// fleetCRD is the CustomResourceDefinition of Fleets, with the status subresource.
func fleetCRD() *unstructured.Unstructured {
	obj := func(props map[string]any) map[string]any {
		return map[string]any{"type": "object", "properties": props}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "fleets." + fleetGV.Group},
		"spec": map[string]any{
			"group": fleetGV.Group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": "fleets", "singular": "fleet", "kind": "Fleet", "listKind": "FleetList"},
			"versions": []any{map[string]any{
				"name": fleetGV.Version, "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": obj(map[string]any{
					"spec": obj(map[string]any{
						"replicas":   map[string]any{"type": "integer"},
						"secretName": map[string]any{"type": "string"},
					}),
					"status": obj(map[string]any{
						"replicas":           map[string]any{"type": "integer"},
						"observedGeneration": map[string]any{"type": "integer"},
						"config":             map[string]any{"type": "string"},
					}),
				})},
			}},
		},
	}}
}

// installFleets creates the Fleet CustomResourceDefinition, unless it exists, and waits until
// Fleets can be listed in namespace.
func installFleets(ctx context.Context, dyn dynamic.Interface, namespace string) error {
	if _, err := dyn.Resource(crdGVR).Create(ctx, fleetCRD(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the Fleet CRD: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := dyn.Resource(fleetGV.WithResource("fleets")).Namespace(namespace).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fleets not served: %w", err)
		case <-tick.C:
		}
	}
}
