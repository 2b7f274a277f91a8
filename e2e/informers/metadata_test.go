package informers

import (
	"fmt"
	"testing"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMetadataPods runs a metadata-only informer (*metav1.PartialObjectMetadata) of Pods: the
// server sends object metadata only.
func TestMetadataPods(t *testing.T) {
	runCRUD(t, crudCase[*metav1.PartialObjectMetadata]{
		gvr: podsGVR,
		informer: direct(podsGVR, func(_ *testing.T, c *kubetest.Clients, ns string) informer.ListerWatcher[*metav1.PartialObjectMetadata] {
			return informer.ListWatchFromMetadata(c.Metadata.Resource(podsGVR).Namespace(ns), nil)
		}),
		object: podObject,
		check: func(m *metav1.PartialObjectMetadata) error {
			if m.UID == "" || m.CreationTimestamp.IsZero() || m.Labels["app"] != "e2e" {
				return fmt.Errorf("metadata %+v, want a UID, a creation time and the label app=e2e", m.ObjectMeta)
			}
			return nil
		},
	})
}
