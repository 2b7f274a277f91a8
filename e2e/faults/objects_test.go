package faults

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// The objects the writers create. Pods stay Pending (the harness runs no scheduler) and are
// deleted at once.

func podObject(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"containers": []any{map[string]any{"name": "main", "image": "registry.k8s.io/pause:3.10"}},
		},
	}}
}

func configMapObject(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": name},
		"data":       map[string]any{"name": name},
	}}
}

func podTemplateObject(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "PodTemplate",
		"metadata":   map[string]any{"name": name},
		"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "main", "image": "registry.k8s.io/pause:3.10"}},
		}},
	}}
}
