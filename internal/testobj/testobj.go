// Package testobj builds the objects that tests and benchmarks share.
package testobj

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Pod returns a small Pod. labels are "key=value" pairs.
func Pod(namespace, name, resourceVersion string, labels ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace:       namespace,
		Name:            name,
		ResourceVersion: resourceVersion,
	}}
	for _, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
	return p
}

// BenchPods returns n Pods of about 1.5 KB each (as JSON), spread evenly over
// namespaces namespaces named ns-0, ns-1, ..., each with the labels app (50
// values) and tier (3 values).
func BenchPods(n, namespaces int) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = BenchPod(i, namespaces)
	}
	return out
}

// BenchPod returns the i-th Pod of BenchPods.
func BenchPod(i, namespaces int) *corev1.Pod {
	name := fmt.Sprintf("pod-%06d", i)
	ns := fmt.Sprintf("ns-%d", i%namespaces)
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       ns,
			Name:            name,
			UID:             types.UID(fmt.Sprintf("5b1c0c7e-0000-4000-8000-%012d", i)),
			ResourceVersion: strconv.Itoa(1000 + i),
			Labels: map[string]string{
				"app":                         fmt.Sprintf("app-%d", i%50),
				"tier":                        []string{"web", "api", "db"}[i%3],
				"app.kubernetes.io/component": "bench",
			},
			Annotations: map[string]string{"bench.typedkube.io/index": strconv.Itoa(i)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: fmt.Sprintf("rs-%d", i%50),
				UID: types.UID(fmt.Sprintf("7d2e9b1a-0000-4000-8000-%012d", i%50)),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:           fmt.Sprintf("node-%d", i%20),
			ServiceAccountName: "default",
			Containers: []corev1.Container{{
				Name:  "main",
				Image: "registry.example.com/bench/app:v1.2.3",
				Args:  []string{"--port=8080", "--log-level=info"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{
					{Name: "POD_NAME", Value: name},
					{Name: "POD_NAMESPACE", Value: ns},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("100m"),
						corev1.ResourceMemory: resource.MustParse("128Mi"),
					},
				},
			}, {
				Name:         "sidecar",
				Image:        "registry.example.com/bench/proxy:v0.9.1",
				Args:         []string{"--upstream=127.0.0.1:8080", "--listen=:9090"},
				Ports:        []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
				VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/proxy", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{
				Name: "config",
				VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "proxy-config"},
				}},
			}},
			Tolerations: []corev1.Toleration{{
				Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
			}},
		},
		Status: corev1.PodStatus{
			Phase:  corev1.PodRunning,
			PodIP:  fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255),
			HostIP: fmt.Sprintf("192.168.0.%d", i%20),
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
			},
		},
	}
}

// SlimPod is what the transform a client-go user writes to cache a few of a Pod's fields keeps:
// name, namespace, UID, resourceVersion, labels, owners, node, phase, and the containers' names
// and images. The benchmarks compare it with projections decoded by package wire.
func SlimPod(p *corev1.Pod) *corev1.Pod {
	s := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
		Labels: p.Labels, OwnerReferences: p.OwnerReferences,
	}}
	s.Spec.NodeName = p.Spec.NodeName
	s.Spec.Containers = make([]corev1.Container, len(p.Spec.Containers))
	for i, c := range p.Spec.Containers {
		s.Spec.Containers[i] = corev1.Container{Name: c.Name, Image: c.Image}
	}
	s.Status.Phase = p.Status.Phase
	return s
}
