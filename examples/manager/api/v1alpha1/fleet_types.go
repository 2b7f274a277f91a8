package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fleet asks for Replicas ConfigMaps named <fleet>-<i>, each carrying the data "config" of the
// Secret ConfigSecret names. The controller (internal/controller) makes them and reports in
// the status.
type Fleet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FleetSpec   `json:"spec,omitempty"`
	Status FleetStatus `json:"status,omitempty"`
}

// FleetSpec is what a Fleet asks for.
type FleetSpec struct {
	Replicas     int32  `json:"replicas"`
	ConfigSecret string `json:"configSecret,omitempty"`
}

// FleetStatus is what the controller did.
type FleetStatus struct {
	// Replicas is the number of ConfigMaps the controller keeps.
	Replicas int32 `json:"replicas,omitempty"`
	// ObservedGeneration is the generation of the spec the status is about.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Config is the data the ConfigMaps carry: the Secret's, or empty while it does not exist.
	Config string `json:"config,omitempty"`
}

// FleetList is a list of Fleets.
type FleetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Fleet `json:"items"`
}
