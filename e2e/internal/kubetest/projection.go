package kubetest

import (
	"github.com/typedkube/informer/wire"
	corev1 "k8s.io/api/core/v1"
)

// PodSlim is the Pod projection the e2e tests and benchmarks cache: what a controller that places
// or audits Pods reads (metadata, node, phase, containers' names and images), decoded straight
// from the wire by informer.ForProjection.
type PodSlim struct {
	wire.Meta[PodSlim]
	Spec struct {
		NodeName   string
		Containers []ContainerSlim
	}
	Status struct{ Phase corev1.PodPhase }
}

// ContainerSlim is the part of a container PodSlim keeps.
type ContainerSlim struct{ Name, Image string }
