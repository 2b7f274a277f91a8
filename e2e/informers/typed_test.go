package informers

import (
	"fmt"
	"testing"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var (
	podsGVR       = corev1.SchemeGroupVersion.WithResource("pods")
	configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")
)

const podImage = "registry.k8s.io/pause:3.10"

// podObject is a Pod with one container. The harness runs no scheduler or kubelet: it stays
// Pending, and a delete removes it at once.
func podObject(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   map[string]any{"name": name, "labels": map[string]any{"app": "e2e"}},
		"spec": map[string]any{
			"containers": []any{map[string]any{"name": "main", "image": podImage}},
		},
	}}
}

func TestTypedPods(t *testing.T) {
	runCRUD(t, crudCase[*corev1.Pod]{
		gvr: podsGVR,
		informer: direct(podsGVR, func(_ *testing.T, c *kubetest.Clients, ns string) informer.ListerWatcher[*corev1.Pod] {
			return informer.ListWatchFromClient[corev1.Pod](c.Kube.CoreV1().Pods(ns), nil)
		}),
		object: podObject,
		check: func(p *corev1.Pod) error {
			if len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Image != podImage {
				return fmt.Errorf("containers %+v, want one running %s", p.Spec.Containers, podImage)
			}
			if p.Labels["app"] != "e2e" {
				return fmt.Errorf("labels %v, want app=e2e", p.Labels)
			}
			return nil
		},
	})
}

func TestTypedConfigMaps(t *testing.T) {
	runCRUD(t, crudCase[*corev1.ConfigMap]{
		gvr: configMapsGVR,
		informer: direct(configMapsGVR, func(_ *testing.T, c *kubetest.Clients, ns string) informer.ListerWatcher[*corev1.ConfigMap] {
			return informer.ListWatchFromClient[corev1.ConfigMap](c.Kube.CoreV1().ConfigMaps(ns), nil)
		}),
		object: func(name string) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1",
				"kind":       "ConfigMap",
				"metadata":   map[string]any{"name": name},
				"data":       map[string]any{"name": name},
			}}
		},
		check: func(cm *corev1.ConfigMap) error {
			if cm.Data["name"] != cm.Name {
				return fmt.Errorf("data %v, want name=%s", cm.Data, cm.Name)
			}
			return nil
		},
	})
}
