package informers

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestRealisticPodsMatchServer writes realistic Pods as a cluster does (kubetest.CreateRealisticPod)
// and checks that the API server returns testobj.RealisticPod: the defaults it sets are in the
// generator, and the managedFields it writes, FieldsV1 byte for byte, are the generator's. Only
// what the server picks itself differs: UID, resourceVersion and times.
// The same holds for the harsh Pods (kubetest.CreateHarshPod, testobj.HarshPod), whose
// creating manager's entry names a volume generated for each Pod, and for the own-token Pods
// (kubetest.CreateOwnTokenPod, testobj.OwnTokenPod), whose token volume a server that runs
// ServiceAccount admission adds to each, after its field manager.
func TestRealisticPodsMatchServer(t *testing.T) {
	for _, w := range []struct {
		name   string
		create func(context.Context, kubernetes.Interface, string, int) error
		want   func(string, int, int) *corev1.Pod
	}{
		{"realistic", kubetest.CreateRealisticPod, testobj.RealisticPod},
		{"harsh", kubetest.CreateHarshPod, testobj.HarshPod},
	} {
		t.Run(w.name, func(t *testing.T) {
			c := adminClients(t)
			podsMatchServer(t, c, c, newNamespace(t, c), w.create, w.want)
		})
	}
	// The own-token Pods are created through a server that runs ServiceAccount admission
	// (kubetest.CreateOwnTokenPod), which names each one's token volume at random: the fixture's
	// name for it is put in its place before the comparison.
	t.Run("owntoken", func(t *testing.T) {
		cfg, err := srv.AdmittingConfig(testContext(t, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		c, admitting := adminClients(t), clientsFor(t, cfg)
		ns := newNamespace(t, c)
		if err := kubetest.CreateRealisticServiceAccounts(t.Context(), c.Kube, ns); err != nil {
			t.Fatal(err)
		}
		podsMatchServer(t, c, admitting, ns, kubetest.CreateOwnTokenPod, testobj.OwnTokenPod)
	})
}

// podsMatchServer creates Pods through the clients of writer and reads them back through c.
func podsMatchServer(t *testing.T, c, writer *kubetest.Clients, ns string, create func(context.Context, kubernetes.Interface, string, int) error, wantPod func(string, int, int) *corev1.Pod) {
	ctx := testContext(t, time.Minute)
	ignore := cmp.Options{
		cmpopts.IgnoreFields(metav1.ObjectMeta{}, "UID", "ResourceVersion", "CreationTimestamp"),
		cmpopts.IgnoreFields(metav1.ManagedFieldsEntry{}, "Time"),
		cmpopts.IgnoreTypes(metav1.Time{}),
	}
	for _, i := range []int{0, 1, kubetest.ReplicaSets, 777} {
		if err := create(ctx, writer.Kube, ns, i); err != nil {
			t.Fatal(err)
		}
		want := wantPod(ns, i, kubetest.ReplicaSets)
		got, err := c.Kube.CoreV1().Pods(ns).Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if name := testobj.TokenVolumeName(got); name != "" {
			testobj.RenameTokenVolume(want, name)
		}
		for j := range min(len(got.ManagedFields), len(want.ManagedFields)) {
			if g, w := got.ManagedFields[j].FieldsV1.GetRawString(), want.ManagedFields[j].FieldsV1.GetRawString(); g != w {
				t.Errorf("pod %d: managedFields[%d] (%s) FieldsV1:\n got %s\nwant %s", i, j, got.ManagedFields[j].Manager, g, w)
			}
		}
		if d := cmp.Diff(want, got, ignore); d != "" {
			t.Errorf("pod %d differs from the generator's (-want +got):\n%s", i, d)
		}
	}
}
