package informer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedkube/informer/wire"
)

// Which errors a Reflector meets end a wait for sync (SyncFailure), and
// which it retries quietly.
func TestIsSyncFailure(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	wrap := func(err error) error { return fmt.Errorf("list: %w", err) }
	var syntax error
	if err := json.Unmarshal([]byte("{"), new(any)); err != nil {
		syntax = err
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"forbidden", apierrors.NewForbidden(pods, "", errors.New("rbac")), true},
		{"wrapped forbidden", wrap(apierrors.NewForbidden(pods, "", errors.New("rbac"))), true},
		{"unauthorized", apierrors.NewUnauthorized("token"), true},
		{"not found (resource gone)", apierrors.NewNotFound(pods, ""), true},
		{"bad request (selector)", apierrors.NewBadRequest("bad selector"), true},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", nil), true},
		{"method not supported", apierrors.NewMethodNotSupported(pods, "watch"), true},
		{"wire malformed", wrap(wire.ErrMalformed), true},
		{"wire truncated", wrap(wire.ErrTruncated), true},
		{"json syntax", wrap(syntax), true},
		{"wrong object type", wrap(ErrUnexpectedObject), true},
		{"service unavailable", apierrors.NewServiceUnavailable("later"), false},
		{"internal error", apierrors.NewInternalError(errors.New("etcd")), false},
		{"timeout", apierrors.NewTimeoutError("slow", 1), false},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), false},
		{"expired", apierrors.NewResourceExpired("too old"), false},
		{"gone", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonGone}}, false},
		{"connection refused", wrap(syscall.ECONNREFUSED), false},
		{"eof", wrap(io.EOF), false},
		{"unexpected eof", wrap(io.ErrUnexpectedEOF), false},
		{"cancelled", wrap(context.Canceled), false},
		{"watch-list fallback", wrap(ErrWatchListFallback), false},
		{"no initial-events end", wrap(ErrNoInitialEventsEnd), false},
		{"continue expired", wrap(ErrContinueExpired), false},
		{"very short watch", ErrVeryShortWatch, false},
		{"skipped event", &EventError{Type: watch.Added, Object: &corev1.ConfigMap{}, Err: ErrUnexpectedObject}, false},
		{"error event with a wrong object", &EventError{Type: watch.Error, Object: &corev1.ConfigMap{}, Err: ErrUnexpectedObject}, true},
		{"watch event not decoded (client-go's and wire's ERROR event)", apierrors.FromObject(watchDecoding.AsObject(errors.New("bad frame"))), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := isSyncFailure(tc.err); got != tc.want {
				t.Errorf("isSyncFailure(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// SyncFailure reports the last such error until the informer syncs, and
// its *SyncError wraps both ErrSyncFailed and the cause.
func TestSyncFailureRecord(t *testing.T) {
	f := newSyncFailure()
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("rbac"))
	gen0, next := f.state()
	f.note("v1/pods", false, apierrors.NewServiceUnavailable("later"))
	if err := f.get(false); err != nil {
		t.Fatalf("after a 503: %v, want nil", err)
	}
	select {
	case <-next:
		t.Fatal("next is closed after a 503")
	default:
	}
	f.note("v1/pods", false, forbidden)
	<-next
	if gen, _ := f.state(); gen != gen0+1 {
		t.Errorf("gen = %d after one failure, want %d", gen, gen0+1)
	}
	f.note("v1/pods", false, apierrors.NewUnauthorized("token")) // the last one counts
	err := f.get(false)
	var se *SyncError
	if !errors.As(err, &se) || se.Informer != "v1/pods" || !errors.Is(err, ErrSyncFailed) || !apierrors.IsUnauthorized(err) {
		t.Errorf("get = %v, want the Unauthorized *SyncError of v1/pods", err)
	}
	if err := f.get(true); err != nil {
		t.Errorf("get once synced = %v, want nil", err)
	}
	f.note("v1/pods", true, forbidden) // after sync: not recorded
	if !apierrors.IsUnauthorized(f.get(false)) {
		t.Errorf("an error after sync replaced the record")
	}
}
