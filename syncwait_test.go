package informer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
)

// The package's WaitForCacheSync, as the Factory's, returns as soon as an
// informer's list is Forbidden, for the informer and for a handler's
// registration, with an error wrapping ErrNotSynced and the Forbidden
// cause, rather than wait for its context; a later call waits for the
// informer to sync once the list is allowed.
func TestWaitForCacheSyncReportsSyncFailure(t *testing.T) {
	src := informertest.NewSource(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"}})
	src.SetListError(apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no RBAC")))
	src.SetWatchError(apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no RBAC")))
	inf, err := informer.NewSharedIndexInformer[*corev1.Pod](src, informer.SharedIndexInformerOptions[*corev1.Pod]{
		Reflector: informer.ReflectorOptions{
			WatchErrorHandler: func(context.Context, error) {},
			Backoff:           informer.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := inf.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	defer func() { cancel(); <-done }()

	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	err = informer.WaitForCacheSync(wctx, inf, reg)
	if !apierrors.IsForbidden(err) || !errors.Is(err, informer.ErrNotSynced) || !errors.Is(err, informer.ErrSyncFailed) ||
		errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitForCacheSync = %v, want ErrNotSynced wrapping the Forbidden *SyncError, before its deadline", err)
	}

	src.SetListError(nil)
	src.SetWatchError(nil)
	for {
		// The informer may meet the Forbidden error once more before the
		// source allows it; a wait then ends with it, and the next waits on.
		err := informer.WaitForCacheSync(wctx, reg)
		if err == nil {
			break
		}
		if !apierrors.IsForbidden(err) {
			t.Fatalf("WaitForCacheSync once allowed = %v, want the informer to sync", err)
		}
	}
	if !inf.HasSynced() || inf.SyncFailure() != nil {
		t.Errorf("after the sync: HasSynced %v, SyncFailure %v", inf.HasSynced(), inf.SyncFailure())
	}
}
