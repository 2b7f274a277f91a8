package informer

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// WaitForSync returns an informer's sync failure (a Forbidden list) as soon
// as the informer meets it, though its context never ends, and nil once the
// informer syncs after the list is allowed.
func TestInformerWaitForSync(t *testing.T) {
	cs := fake.NewClientset(factoryPod("a", "p1", "n1"))
	var allowed atomic.Bool
	cs.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		if allowed.Load() {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no RBAC"))
	})
	f, err := NewFactoryForClients(FactoryClients{Kube: cs}, FactoryOptions{Informer: InformerOptions{Reflector: ReflectorOptions{
		Backoff:           Backoff{Initial: 10 * time.Millisecond, Max: 20 * time.Millisecond},
		WatchErrorHandler: func(context.Context, error) {},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Shutdown)
	inf, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	f.Start(t.Context())
	err = inf.WaitForSync(context.Background()) // only the failure can end it
	var syncErr *SyncError
	if !apierrors.IsForbidden(err) || !errors.Is(err, ErrSyncFailed) || !errors.As(err, &syncErr) || syncErr.Informer != "v1/pods" {
		t.Fatalf("WaitForSync = %v, want the Forbidden *SyncError of v1/pods", err)
	}
	allowed.Store(true)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	select {
	case <-inf.Synced():
	case <-ctx.Done():
		t.Fatal("the informer did not sync once its list was allowed")
	}
	if err := inf.WaitForSync(ctx); err != nil {
		t.Errorf("WaitForSync after sync = %v, want nil", err)
	}
}

// A context that ends before the informer syncs ends WaitForSync with an
// error wrapping its cause.
func TestInformerWaitForSyncContext(t *testing.T) {
	inf, err := NewSharedIndexInformer[*corev1.Pod](ListWatchFuncs[*corev1.Pod]{}, SharedIndexInformerOptions[*corev1.Pod]{Name: "pods"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	cause := errors.New("gave up")
	cancel(cause)
	if err := inf.WaitForSync(ctx); !errors.Is(err, cause) {
		t.Errorf("WaitForSync = %v, want it to wrap %v", err, cause)
	}
}

// countingTransport counts the requests it carries.
type countingTransport struct {
	n  atomic.Int64
	rt http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// FactoryOptions.HTTPClient carries the factory's requests: discovery,
// lists and watches all go through its transport.
func TestFactoryHTTPClient(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	create(t, srv, factoryPod("a", "p1", "n1"))
	rt := &countingTransport{rt: http.DefaultTransport}
	f := newTestFactory(t, srv, FactoryOptions{HTTPClient: &http.Client{Transport: rt}})
	pods, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	if _, err := pods.Lister().ByNamespace("a").Get("p1"); err != nil {
		t.Fatal(err)
	}
	if got, all := rt.n.Load(), int64(len(srv.Requests())); got == 0 || got < all {
		t.Errorf("the HTTPClient carried %d of the %d requests the server saw", got, all)
	}
}
