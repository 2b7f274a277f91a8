package kubetest

import (
	"context"
	"fmt"

	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ReplicaSets is how many ReplicaSets the realistic Pods of a namespace belong to.
const ReplicaSets = 20

// CreateRealisticPod writes the i-th realistic Pod of ns (testobj.RealisticPod) as a cluster
// does: created by kube-controller-manager (its field manager), then its status updated by the
// kubelet, so that the API server writes their managedFields itself.
func CreateRealisticPod(ctx context.Context, kube kubernetes.Interface, ns string, i int) error {
	return createPod(ctx, kube, ns, i, testobj.RealisticPodCreate(ns, i, ReplicaSets))
}

// CreateHarshPod is CreateRealisticPod for the i-th harsh Pod (testobj.HarshPod): its create
// names a volume with a name generated for it, so that the API server writes each Pod a
// creating manager's managedFields entry that differs from its siblings' in those characters.
func CreateHarshPod(ctx context.Context, kube kubernetes.Interface, ns string, i int) error {
	return createPod(ctx, kube, ns, i, testobj.HarshPodCreate(ns, i, ReplicaSets))
}

// CreateOwnTokenPod is CreateRealisticPod for the i-th own-token Pod (testobj.OwnTokenPod), through
// kube, a client of a server that runs ServiceAccount admission (the harness's AdmittingConfig):
// the create carries no token volume, and the server gives the Pod one named for it, in no
// managedFields entry. The Pods' ServiceAccounts must exist (CreateRealisticServiceAccounts).
func CreateOwnTokenPod(ctx context.Context, kube kubernetes.Interface, ns string, i int) error {
	return createPod(ctx, kube, ns, i, testobj.OwnTokenPodCreate(ns, i, ReplicaSets))
}

// CreateRealisticServiceAccounts creates in ns the ServiceAccounts the realistic Pods run as
// (testobj.RealisticServiceAccounts), which ServiceAccount admission looks up at their creates.
func CreateRealisticServiceAccounts(ctx context.Context, kube kubernetes.Interface, ns string) error {
	for _, name := range testobj.RealisticServiceAccounts(ReplicaSets) {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create service account %s/%s: %w", ns, name, err)
		}
	}
	return nil
}

// createPod creates create, the i-th realistic Pod's, as kube-controller-manager, then updates
// its status as the kubelet.
func createPod(ctx context.Context, kube kubernetes.Interface, ns string, i int, create *corev1.Pod) error {
	pods := kube.CoreV1().Pods(ns)
	p, err := pods.Create(ctx, create, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	if err != nil {
		return fmt.Errorf("create realistic pod %d: %w", i, err)
	}
	p.Status = testobj.RealisticPodStatus(i, ReplicaSets)
	if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: "kubelet"}); err != nil {
		return fmt.Errorf("update the status of realistic pod %d: %w", i, err)
	}
	return nil
}
