package kubetest

import (
	"context"
	"fmt"

	"github.com/typedkube/informer/internal/testobj"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ReplicaSets is how many ReplicaSets the realistic Pods of a namespace belong to.
const ReplicaSets = 20

// CreateRealisticPod writes the i-th realistic Pod of ns (testobj.RealisticPod) as a cluster
// does: created by kube-controller-manager (its field manager), then its status updated by the
// kubelet, so that the API server writes their managedFields itself.
func CreateRealisticPod(ctx context.Context, kube kubernetes.Interface, ns string, i int) error {
	pods := kube.CoreV1().Pods(ns)
	p, err := pods.Create(ctx, testobj.RealisticPodCreate(ns, i, ReplicaSets), metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	if err != nil {
		return fmt.Errorf("create realistic pod %d: %w", i, err)
	}
	p.Status = testobj.RealisticPodStatus(i, ReplicaSets)
	if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: "kubelet"}); err != nil {
		return fmt.Errorf("update the status of realistic pod %d: %w", i, err)
	}
	return nil
}
