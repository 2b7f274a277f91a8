package harness

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// clientFor returns a clientset for cfg without client-side rate limiting.
func clientFor(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cfg.QPS = -1
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// testContext is a context that ends with the test or after d.
func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// newNamespace creates a namespace of the test's own. The harness runs no namespace controller, so
// a deleted namespace would stay Terminating: the namespaces are left behind with the servers.
func newNamespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

// createConfigMap creates a ConfigMap and returns it as stored.
func createConfigMap(t *testing.T, cs kubernetes.Interface, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       map[string]string{"name": name},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create configmap %s/%s: %v", ns, name, err)
	}
	return cm
}

// nextEvent returns the next event of w, failing the test if none comes within d or the watch ends.
func nextEvent(t *testing.T, w watch.Interface, d time.Duration) watch.Event {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch ended while waiting for an event")
		}
		return ev
	case <-timer.C:
		t.Fatalf("no watch event within %v", d)
		return watch.Event{}
	}
}

// objectName names the object of a watch event, for messages.
func objectName(ev watch.Event) string {
	if m, ok := ev.Object.(metav1.Object); ok {
		return fmt.Sprintf("%s %s/%s rv=%s", ev.Type, m.GetNamespace(), m.GetName(), m.GetResourceVersion())
	}
	return fmt.Sprintf("%s %T", ev.Type, ev.Object)
}

// expectGone checks that a watch failed with 410 Gone: the server either refuses the request or,
// as the watch cache does, starts the watch with an ERROR event carrying the status.
func expectGone(t *testing.T, what string, w watch.Interface, err error) {
	t.Helper()
	if err != nil {
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Fatalf("%s: err = %v, want 410 Gone", what, err)
		}
		return
	}
	defer w.Stop()
	ev := nextEvent(t, w, 10*time.Second)
	if ev.Type != watch.Error {
		t.Fatalf("%s: event %s, want ERROR 410 Gone", what, objectName(ev))
	}
	if err := apierrors.FromObject(ev.Object); !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("%s: error event %v, want 410 Gone", what, err)
	}
}
