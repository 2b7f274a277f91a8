package main

import (
	"context"
	"net/http"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	fleetv1 "github.com/typedkube/informer/examples/manager/api/v1alpha1"
	"github.com/typedkube/informer/examples/manager/internal/controller"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSetupWithManager builds the manager as main does, on typedcache, and registers the
// controller: its field indexes, For, Owns, Watches and the metadata-only watch. No server is
// needed until the manager starts: the RESTMapper is static, as a test's would be.
func TestSetupWithManager(t *testing.T) {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(fleetv1.AddToScheme(scheme))
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(fleetv1.GroupVersion.WithKind("Fleet"), meta.RESTScopeNamespace)
	for _, kind := range []string{"ConfigMap", "Secret"} {
		mapper.Add(corev1.SchemeGroupVersion.WithKind(kind), meta.RESTScopeNamespace)
	}
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Namespace"), meta.RESTScopeRoot)

	opts := Options(scheme, "0")
	opts.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil }
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := &controller.FleetReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}
	if err := r.SetupWithManager(context.Background(), mgr); err != nil {
		t.Fatal(err)
	}
}
