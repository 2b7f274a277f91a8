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
// creating manager's entry names a volume generated for each Pod.
func TestRealisticPodsMatchServer(t *testing.T) {
	for _, w := range []struct {
		name   string
		create func(context.Context, kubernetes.Interface, string, int) error
		want   func(string, int, int) *corev1.Pod
	}{
		{"realistic", kubetest.CreateRealisticPod, testobj.RealisticPod},
		{"harsh", kubetest.CreateHarshPod, testobj.HarshPod},
	} {
		t.Run(w.name, func(t *testing.T) { podsMatchServer(t, w.create, w.want) })
	}
}

func podsMatchServer(t *testing.T, create func(context.Context, kubernetes.Interface, string, int) error, wantPod func(string, int, int) *corev1.Pod) {
	c := adminClients(t)
	ns := newNamespace(t, c)
	ctx := testContext(t, time.Minute)
	ignore := cmp.Options{
		cmpopts.IgnoreFields(metav1.ObjectMeta{}, "UID", "ResourceVersion", "CreationTimestamp"),
		cmpopts.IgnoreFields(metav1.ManagedFieldsEntry{}, "Time"),
		cmpopts.IgnoreTypes(metav1.Time{}),
	}
	for _, i := range []int{0, 1, kubetest.ReplicaSets, 777} {
		if err := create(ctx, c.Kube, ns, i); err != nil {
			t.Fatal(err)
		}
		want := wantPod(ns, i, kubetest.ReplicaSets)
		got, err := c.Kube.CoreV1().Pods(ns).Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for j := range min(len(got.ManagedFields), len(want.ManagedFields)) {
			if g, w := got.ManagedFields[j].FieldsV1.GetRawString(), want.ManagedFields[j].FieldsV1.GetRawString(); g != w {
				t.Errorf("pod %d: managedFields[%d] (%s) FieldsV1:\n got %s\nwant %s", i, j, got.ManagedFields[j].Manager, g, w)
			}
		}
		if d := cmp.Diff(want, got, ignore); d != "" {
			t.Errorf("pod %d differs from testobj.RealisticPod (-want +got):\n%s", i, d)
		}
	}
}
