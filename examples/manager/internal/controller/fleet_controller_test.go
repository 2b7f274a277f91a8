package controller

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1 "github.com/typedkube/informer/examples/manager/api/v1alpha1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := fleetv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// newReconciler returns the reconciler over controller-runtime's fake client holding objs, with
// the field indexes SetupWithManager registers. A unit test of the reconcile logic needs no
// API server and no cache: which cache the manager runs is cmd/main.go's business (see
// main_test.go there for the manager itself).
func newReconciler(t *testing.T, objs ...client.Object) *FleetReconciler {
	t.Helper()
	s := newScheme(t)
	c := fake.NewClientBuilder().WithScheme(s).
		WithObjects(objs...).
		WithStatusSubresource(&fleetv1.Fleet{}).
		WithIndex(&fleetv1.Fleet{}, SecretField, FleetSecret).
		WithIndex(&corev1.ConfigMap{}, ControllerField, ControllingFleet).
		Build()
	return &FleetReconciler{Client: c, Scheme: s}
}

func namespace(labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: labels}}
}

func secret(config string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "config"}, Data: map[string][]byte{"config": []byte(config)}}
}

func fleet(replicas int32) *fleetv1.Fleet {
	return &fleetv1.Fleet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Generation: 1},
		Spec:       fleetv1.FleetSpec{Replicas: replicas, ConfigSecret: "config"},
	}
}

var req = reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "default", Name: "web"}}

// children returns the config of each ConfigMap a Fleet controls, by name.
func children(t *testing.T, r *FleetReconciler) map[string]string {
	t.Helper()
	var cms corev1.ConfigMapList
	if err := r.List(context.Background(), &cms, client.InNamespace("default"), client.MatchingFields{ControllerField: "web"}); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, cm := range cms.Items {
		out[cm.Name] = cm.Data["config"]
	}
	return out
}

func reconcileOnce(t *testing.T, r *FleetReconciler) {
	t.Helper()
	if res, err := r.Reconcile(context.Background(), req); err != nil || !res.IsZero() {
		t.Fatalf("Reconcile = %+v, %v", res, err)
	}
}

func want(n int, config string) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("web-%d", i)] = config
	}
	return m
}

func TestReconcile(t *testing.T) {
	ctx := context.Background()
	r := newReconciler(t, namespace(nil), fleet(3), secret("v1"))
	reconcileOnce(t, r)
	if got := children(t, r); !maps.Equal(got, want(3, "v1")) {
		t.Fatalf("children %v, want %v", got, want(3, "v1"))
	}
	var f fleetv1.Fleet
	if err := r.Get(ctx, req.NamespacedName, &f); err != nil {
		t.Fatal(err)
	}
	if st := (fleetv1.FleetStatus{Replicas: 3, ObservedGeneration: 1, Config: "v1"}); f.Status != st {
		t.Errorf("status %+v, want %+v", f.Status, st)
	}

	// The Secret changes and the Fleet scales down: the children follow.
	if err := r.Update(ctx, secret("v2")); err != nil {
		t.Fatal(err)
	}
	f.Spec.Replicas = 1
	if err := r.Update(ctx, &f); err != nil {
		t.Fatal(err)
	}
	reconcileOnce(t, r)
	if got := children(t, r); !maps.Equal(got, want(1, "v2")) {
		t.Errorf("children %v, want %v", got, want(1, "v2"))
	}
	reconcileOnce(t, r) // nothing left to do: no write
	if got := children(t, r); !maps.Equal(got, want(1, "v2")) {
		t.Errorf("children %v after a second reconcile, want %v", got, want(1, "v2"))
	}
}

func TestReconcileMissingSecret(t *testing.T) {
	r := newReconciler(t, namespace(nil), fleet(2))
	reconcileOnce(t, r) // no requeue: the Secret watch reconciles when it comes
	if got := children(t, r); !maps.Equal(got, want(2, "")) {
		t.Errorf("children %v, want %v", got, want(2, ""))
	}
}

func TestReconcilePausedNamespace(t *testing.T) {
	r := newReconciler(t, namespace(map[string]string{PausedLabel: "true"}), fleet(2), secret("v1"))
	reconcileOnce(t, r)
	if got := children(t, r); len(got) != 0 {
		t.Errorf("a paused namespace's Fleet got children %v", got)
	}
}

func TestReconcileGone(t *testing.T) {
	r := newReconciler(t, namespace(nil))
	reconcileOnce(t, r) // a Fleet that is gone: nothing to do, no error
}

func TestFleetsToReconcile(t *testing.T) {
	other := fleet(1)
	other.Name, other.Spec.ConfigSecret = "other", "other-config"
	r := newReconciler(t, namespace(nil), fleet(1), other)
	ctx := context.Background()
	if got := r.fleetsNamingSecret(ctx, secret("v1")); len(got) != 1 || got[0] != req {
		t.Errorf("the Secret maps to %v, want [%v]", got, req)
	}
	ns := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if got := r.fleetsInNamespace(ctx, ns); len(got) != 2 {
		t.Errorf("the Namespace maps to %v, want both Fleets", got)
	}
}
