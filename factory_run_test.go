package informer

import (
	"context"
	"errors"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFactoryStart: Start is idempotent, a later Start's context does not
// govern, and informers made after Start are started with its context.
func TestFactoryStart(t *testing.T) {
	srv := newFakeAPI(t, podsResource, configMapsResource)
	create(t, srv, factoryPod("a", "web", ""))
	f := newTestFactory(t, srv, FactoryOptions{})
	pods, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	plog := addLog(t, pods)
	f.Start(t.Context())
	other, cancel := context.WithCancel(t.Context())
	f.Start(other)
	cancel()
	syncFactory(t, t.Context(), f) // calls Start a third time

	cms, err := For[*corev1.ConfigMap](f) // started at once
	if err != nil {
		t.Fatal(err)
	}
	clog := addLog(t, cms)
	synced, err := f.WaitForCacheSync(t.Context())
	if err != nil || !synced["v1/configmaps"] || !synced["v1/pods"] {
		t.Fatalf("WaitForCacheSync = %v, %v; want both synced", synced, err)
	}
	create(t, srv, factoryPod("a", "api", ""), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cfg"}})
	plog.waitFor(t, "add a/web", "add a/api")
	clog.waitFor(t, "add a/cfg")
	if pods.IsStopped() || cms.IsStopped() {
		t.Error("an informer stopped with the context of a later Start")
	}
}

// TestFactoryWaitForCacheSync: an informer whose resource the server
// refuses keeps WaitForCacheSync from succeeding: it returns as soon as the
// server says Forbidden, with an error that names that informer and wraps
// the Forbidden error; the informer syncs once the server serves the
// resource, without stopping the others meanwhile.
func TestFactoryWaitForCacheSync(t *testing.T) {
	srv := newFakeAPI(t, podsResource, configMapsResource)
	srv.Fail(configMapsGVR, http.StatusForbidden)
	refused := make(chan struct{}, 1)
	f := newTestFactory(t, srv, FactoryOptions{Informer: InformerOptions{Reflector: ReflectorOptions{
		Backoff: Backoff{Initial: 10 * time.Millisecond, Max: 10 * time.Millisecond},
		WatchErrorHandler: func(_ context.Context, err error) {
			if strings.Contains(err.Error(), "configmaps") {
				select {
				case refused <- struct{}{}:
				default:
				}
			}
		},
	}}})
	if _, err := f.WaitForCacheSync(t.Context()); !errors.Is(err, ErrNotStarted) {
		t.Errorf("WaitForCacheSync before Start: %v, want ErrNotStarted", err)
	}
	if _, err := For[*corev1.Pod](f); err != nil {
		t.Fatal(err)
	}
	if _, err := For[*corev1.ConfigMap](f); err != nil {
		t.Fatal(err)
	}
	f.Start(t.Context())
	select {
	case <-refused:
	case <-time.After(30 * time.Second):
		t.Fatal("the configmaps informer met no error")
	}

	// Forbidden ends the wait at once, whatever the context.
	synced, err := f.WaitForCacheSync(context.Background())
	if !synced["v1/pods"] || synced["v1/configmaps"] || len(synced) != 2 {
		t.Errorf("WaitForCacheSync = %v, want pods only synced", synced)
	}
	if !errors.Is(err, ErrNotSynced) || !errors.Is(err, ErrSyncFailed) || !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), "v1/configmaps") || strings.Contains(err.Error(), "v1/pods") {
		t.Errorf("WaitForCacheSync error %v, want ErrNotSynced naming v1/configmaps only, wrapping Forbidden", err)
	}

	srv.Fail(configMapsGVR, 0)
	if synced := syncFactory(t, t.Context(), f); !synced["v1/configmaps"] {
		t.Errorf("WaitForCacheSync = %v once the server serves configmaps", synced)
	}
}

// TestFactoryWaitForCacheSyncAfterShutdown: informers that stopped unsynced
// are not waited for.
func TestFactoryWaitForCacheSyncAfterShutdown(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	srv.Fail(podsGVR, http.StatusForbidden)
	f := newTestFactory(t, srv, FactoryOptions{})
	if _, err := For[*corev1.Pod](f); err != nil {
		t.Fatal(err)
	}
	f.Start(t.Context())
	f.Shutdown()
	synced, err := f.WaitForCacheSync(context.Background())
	if synced["v1/pods"] || !errors.Is(err, ErrNotSynced) || !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "v1/pods") {
		t.Errorf("WaitForCacheSync after Shutdown = %v, %v; want v1/pods unsynced, stopped", synced, err)
	}
}

// TestFactoryShutdown: Shutdown stops every informer and returns after
// them (goleak checks that no goroutine is left), may be called twice, and
// makes For fail; so does the end of Start's context.
func TestFactoryShutdown(t *testing.T) {
	t.Run("after start", func(t *testing.T) {
		before := goleak.IgnoreCurrent()
		srv := newFakeAPI(t, podsResource)
		f := newTestFactory(t, srv, FactoryOptions{})
		pods, err := For[*corev1.Pod](f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ForMetadata(f, podsGVR); err != nil {
			t.Fatal(err)
		}
		syncFactory(t, t.Context(), f)
		f.Shutdown()
		if !pods.IsStopped() {
			t.Error("informer not stopped after Shutdown")
		}
		srv.Close()
		goleak.VerifyNone(t, before)
		f.Shutdown()
		f.Start(t.Context())
		if _, err := For[*corev1.Pod](f); !errors.Is(err, ErrFactoryStopped) {
			t.Errorf("For after Shutdown: %v, want ErrFactoryStopped", err)
		}
		if _, err := ForMetadata(f, podsGVR); !errors.Is(err, ErrFactoryStopped) {
			t.Errorf("ForMetadata after Shutdown: %v, want ErrFactoryStopped", err)
		}
	})
	t.Run("before start", func(t *testing.T) {
		srv := newFakeAPI(t, podsResource)
		f := newTestFactory(t, srv, FactoryOptions{})
		pods, err := For[*corev1.Pod](f)
		if err != nil {
			t.Fatal(err)
		}
		f.Shutdown()
		f.Start(t.Context())
		if _, err := f.WaitForCacheSync(t.Context()); !errors.Is(err, ErrNotStarted) {
			t.Errorf("WaitForCacheSync: %v, want ErrNotStarted", err)
		}
		if _, err := For[*corev1.Pod](f); !errors.Is(err, ErrFactoryStopped) {
			t.Errorf("For after Shutdown: %v, want ErrFactoryStopped", err)
		}
		if pods.IsStopped() {
			t.Error("an informer that never ran reports stopped")
		}
	})
	t.Run("start context ends", func(t *testing.T) {
		srv := newFakeAPI(t, podsResource)
		f := newTestFactory(t, srv, FactoryOptions{})
		ctx, cancel := context.WithCancel(t.Context())
		pods, err := For[*corev1.Pod](f)
		if err != nil {
			t.Fatal(err)
		}
		syncFactory(t, ctx, f)
		cancel()
		if _, err := For[*corev1.Pod](f); !errors.Is(err, ErrFactoryStopped) || !errors.Is(err, context.Canceled) {
			t.Errorf("For after Start's context ended: %v, want ErrFactoryStopped", err)
		}
		f.Shutdown()
		if !pods.IsStopped() {
			t.Error("informer not stopped")
		}
	})
}

// TestFactoryInformerRunRefused: Run called on an informer the factory
// made fails at once, before Start and after, with ErrRunByFactory (which
// wraps ErrStarted), and leaves the informer to the factory: a caller's Run
// with an ended context does not stop it, and the factory's Start runs it.
func TestFactoryInformerRunRefused(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	create(t, srv, factoryPod("a", "web", ""))
	f := newTestFactory(t, srv, FactoryOptions{})
	pods, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	if err := pods.Run(ended); !errors.Is(err, ErrRunByFactory) || !errors.Is(err, ErrStarted) {
		t.Errorf("Run before Start = %v, want ErrRunByFactory and ErrStarted", err)
	}
	log := addLog(t, pods)
	syncFactory(t, t.Context(), f)
	if err := pods.Run(ended); !errors.Is(err, ErrRunByFactory) {
		t.Errorf("Run after Start = %v, want ErrRunByFactory", err)
	}
	create(t, srv, factoryPod("a", "api", ""))
	log.waitFor(t, "add a/web", "add a/api")
	if pods.IsStopped() {
		t.Error("the informer stopped with the context of a caller's Run")
	}
}
