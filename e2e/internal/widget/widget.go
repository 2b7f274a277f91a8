// Package widget is a custom resource with Go types, written by hand the way a user without
// code generation would: the Widget and WidgetList types with their DeepCopyObject methods, a
// scheme to register them in, the CustomResourceDefinition that serves them, and a typed client
// built from client-go's generic gentype client.
package widget

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
)

// Group, Version and resource of the Widget custom resource.
const (
	Group    = "e2e.typedkube.io"
	Version  = "v1"
	Resource = "widgets"
	Kind     = "Widget"
)

// SchemeGroupVersion is the group and version Widgets are served at.
var SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// GVR is the Widget resource.
var GVR = SchemeGroupVersion.WithResource(Resource)

// Widget is a namespaced custom resource.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec `json:"spec"`
}

// WidgetSpec is what a Widget asks for.
type WidgetSpec struct {
	Color string `json:"color,omitempty"`
	Size  int64  `json:"size,omitempty"`
}

// WidgetList is a list of Widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// DeepCopyInto copies w into out.
func (w *Widget) DeepCopyInto(out *Widget) {
	*out = *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
}

// DeepCopy returns a copy of w.
func (w *Widget) DeepCopy() *Widget {
	if w == nil {
		return nil
	}
	out := new(Widget)
	w.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (w *Widget) DeepCopyObject() runtime.Object { return w.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (l *WidgetList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &WidgetList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Widget, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

// AddToScheme registers Widget and WidgetList, with the list and watch options of their group
// version, in s.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &Widget{}, &WidgetList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// NewScheme returns a scheme holding the Widget types only.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		panic(err) // AddToScheme does not fail
	}
	return s
}

// Client is a typed client for Widgets in one namespace, with Get, List, Watch, Create, Update
// and Delete.
type Client = gentype.ClientWithList[*Widget, *WidgetList]

// NewClient returns a typed client for the Widgets of namespace.
func NewClient(cfg *rest.Config, namespace string) (*Client, error) {
	s := NewScheme()
	cfg = rest.CopyConfig(cfg)
	cfg.GroupVersion = &SchemeGroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(s).WithoutConversion()
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("widget: REST client: %w", err)
	}
	return gentype.NewClientWithList[*Widget, *WidgetList](Resource, rc, runtime.NewParameterCodec(s), namespace,
		func() *Widget { return &Widget{} }, func() *WidgetList { return &WidgetList{} }), nil
}

// crdGVR is the CustomResourceDefinition resource.
var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// CRD returns the CustomResourceDefinition of Widgets, as an unstructured object, so that
// installing it needs no apiextensions client.
func CRD() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": Resource + "." + Group},
		"spec": map[string]any{
			"group": Group,
			"scope": "Namespaced",
			"names": map[string]any{
				"plural": Resource, "singular": "widget", "kind": Kind, "listKind": Kind + "List",
			},
			"versions": []any{map[string]any{
				"name": Version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{
							"type": "object",
							"properties": map[string]any{
								"color": map[string]any{"type": "string"},
								"size":  map[string]any{"type": "integer"},
							},
						},
					},
				}},
			}},
		},
	}}
}

// Install creates the Widget CustomResourceDefinition, unless it exists, and waits until Widgets
// can be listed in namespace (the definition is established and served), or until timeout.
func Install(ctx context.Context, dyn dynamic.Interface, namespace string, timeout time.Duration) error {
	_, err := dyn.Resource(crdGVR).Create(ctx, CRD(), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("widget: create the CustomResourceDefinition: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := dyn.Resource(GVR).Namespace(namespace).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("widget: %s not served within %v: %w", GVR.Resource, timeout, err)
		case <-tick.C:
		}
	}
}
