package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/typedkube/informer/wire"
	corev1 "k8s.io/api/core/v1"
)

// The controller keeps, in every namespace labelled optInLabel=true, a ConfigMap called
// summaryName that lists the namespace's Pods and their phase.
const (
	summaryName = "pod-summary"
	optInLabel  = "pod-summary.typedkube.io/enabled"
	managedBy   = "pod-summary-demo"
	totalKey    = "total"
	podKeyStart = "pod."
)

// summaryData is the data the summary ConfigMap of a namespace holding pods should have: the
// number of pods under "total", and the phase of each pod under "pod.<name>".
func summaryData(pods []*podPhase) map[string]string {
	data := make(map[string]string, len(pods)+1)
	data[totalKey] = strconv.Itoa(len(pods))
	for _, p := range pods {
		data[podKeyStart+p.Name] = phase(p)
	}
	return data
}

// podPhase is all the controller reads of a Pod: its metadata and its phase. Its informer
// decodes these fields straight from the API server's protobuf (informer.ForProjection) and
// never builds the rest of the Pod, so the cache holds a few hundred bytes per Pod, not kilobytes.
type podPhase struct {
	wire.Meta[podPhase]
	Status struct{ Phase corev1.PodPhase }
}

// phaseOf projects a full Pod, as the server lists it, the same way.
func phaseOf(p *corev1.Pod) *podPhase {
	s := &podPhase{}
	s.Namespace, s.Name, s.DeletionTimestamp = p.Namespace, p.Name, p.DeletionTimestamp
	s.Status.Phase = p.Status.Phase
	return s
}

func phase(p *podPhase) string {
	if p.DeletionTimestamp != nil {
		return "Terminating"
	}
	return string(cmp.Or(p.Status.Phase, corev1.PodPending))
}

// describe renders summary data for people: "4 pods: 3 Pending, 1 Running".
func describe(data map[string]string) string {
	phases := map[string]int{}
	for k, v := range data {
		if strings.HasPrefix(k, podKeyStart) {
			phases[v]++
		}
	}
	var parts []string
	for _, ph := range slices.Sorted(maps.Keys(phases)) {
		parts = append(parts, fmt.Sprintf("%d %s", phases[ph], ph))
	}
	s := data[totalKey] + " pods"
	if data[totalKey] == "1" {
		s = "1 pod"
	}
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s
}
