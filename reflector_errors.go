package informer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// Errors a Reflector reports to its WatchErrorHandler or returns. Each is
// wrapped, so test for them with errors.Is.
var (
	// ErrInvalidOptions reports options that a constructor refuses.
	ErrInvalidOptions = errors.New("informer: invalid options")
	// ErrAlreadyRunning is returned by Run while the Reflector is running.
	// It is ErrStarted, the informer's error for the same mistake, under
	// the name client-go's users look for: errors.Is matches either.
	ErrAlreadyRunning = ErrStarted
	// ErrUnexpectedObject reports a watch event whose object is not of the
	// Reflector's type (nil included), or an ERROR event whose object is
	// not a Status. It is wrapped in an *EventError.
	ErrUnexpectedObject = errors.New("informer: unexpected object in watch event")
	// ErrUnknownEventType reports a watch event of a type other than
	// ADDED, MODIFIED, DELETED, BOOKMARK and ERROR. It is wrapped in an
	// *EventError.
	ErrUnknownEventType = errors.New("informer: unknown watch event type")
	// ErrNoResourceVersion reports a bookmark without a resource version.
	// It is wrapped in an *EventError.
	ErrNoResourceVersion = errors.New("informer: bookmark without a resource version")
	// ErrVeryShortWatch reports a watch that the server closed within a
	// second, with no event: the Reflector lists again rather than loop.
	ErrVeryShortWatch = errors.New("informer: very short watch")
	// ErrContinueExpired reports that the continue token of a paged list
	// expired; the Reflector lists again, unpaged. The error also wraps
	// the server's 410 Expired error.
	ErrContinueExpired = errors.New("informer: continue token expired")
	// ErrWatchListFallback reports that a watch-list stream failed, and
	// that in WatchListAuto mode the Reflector lists instead, this time.
	// The error also wraps the cause.
	ErrWatchListFallback = errors.New("informer: watch-list failed, listing instead")
	// ErrNoInitialEventsEnd reports a watch-list stream that went silent
	// without the bookmark ending its initial events, as from a source that
	// ignores sendInitialEvents (see ReflectorOptions.InitialEventsTimeout).
	ErrNoInitialEventsEnd = errors.New("informer: no initial-events-end bookmark")
	// ErrRelist is how a ListerWatcher asks its Reflector to list again
	// now: when Watch returns an error wrapping it, or a watch's result
	// channel closes and the watch has a method Err() error returning one,
	// the Reflector lists at once, with no backoff, and reports nothing to
	// the WatchErrorHandler. A ListerWatcher whose scope changes while it
	// runs (a sharded one whose ranges moved) ends its open watch so. Each
	// ErrRelist costs a LIST: a source should not ask twice without a List
	// between.
	ErrRelist = errors.New("informer: the source asks for a relist")
)

// EventError reports a watch event that the Reflector could not apply: its
// object is not a T (ErrUnexpectedObject), its type is unknown
// (ErrUnknownEventType), a bookmark has no resource version
// (ErrNoResourceVersion), or the store refused it (the store's error). The
// Reflector steps over such an event and goes on watching, except for an
// ERROR event, which ends the watch.
type EventError struct {
	Type   watch.EventType
	Object runtime.Object // the event's object, possibly nil
	Err    error
}

// Error names the event type and the object, and the cause.
func (e *EventError) Error() string {
	return fmt.Sprintf("informer: %s event with %s: %v", e.Type, describe(e.Object), e.Err)
}

// Unwrap returns the cause.
func (e *EventError) Unwrap() error { return e.Err }

// describe names obj by type, and by namespace and name when it has them,
// without printing it whole.
func describe(obj runtime.Object) string {
	switch {
	case obj == nil:
		return "no object"
	case isNil(obj):
		return fmt.Sprintf("a nil %T", obj)
	}
	m, ok := obj.(metav1.Object)
	if !ok || m.GetName() == "" {
		return fmt.Sprintf("a %T", obj)
	}
	if ns := m.GetNamespace(); ns != "" {
		return fmt.Sprintf("%T %s/%s", obj, ns, m.GetName())
	}
	return fmt.Sprintf("%T %s", obj, m.GetName())
}

// errorEventError returns the error an ERROR event carries: the API error
// of its Status, or an *EventError if it carries no Status.
func errorEventError(ev watch.Event) error {
	if ev.Object == nil || isNil(ev.Object) {
		return &EventError{Type: ev.Type, Object: ev.Object, Err: ErrUnexpectedObject}
	}
	switch ev.Object.(type) {
	case *metav1.Status, runtime.Unstructured:
		var status *apierrors.StatusError
		if err := apierrors.FromObject(ev.Object); errors.As(err, &status) {
			return status
		}
	}
	return &EventError{Type: ev.Type, Object: ev.Object, Err: ErrUnexpectedObject}
}

// DefaultWatchErrorHandler logs err through klog.FromContext(ctx) at a
// level that fits it: nothing for io.EOF, V(4) for the expected ends of a
// watch (410 Expired or Gone, the fallback from watch-list, an expired
// continue token), V(2) for a retried 429 or refused connection, V(1) for an
// unexpected EOF, and as an error otherwise.
func DefaultWatchErrorHandler(ctx context.Context, err error) {
	logger := klog.FromContext(ctx)
	var skipped *EventError
	switch {
	case errors.Is(err, io.EOF):
	case isExpiredError(err), errors.Is(err, ErrWatchListFallback), errors.Is(err, ErrContinueExpired):
		logger.V(4).Info("Watch closed", "err", err)
	case isRetriableWatchError(err):
		logger.V(2).Info("Watch refused, backing off", "err", err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		logger.V(1).Info("Watch closed with unexpected EOF", "err", err)
	case errors.As(err, &skipped) && skipped.Type != watch.Error:
		logger.Error(err, "Skipped a watch event")
	default:
		logger.Error(err, "Failed to watch")
	}
}

// isExpiredError reports a 410: the resource version asked for is older
// than the server keeps. Servers before 1.18 say Gone, later ones Expired.
func isExpiredError(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// isTooLargeResourceVersionError reports that the resource version asked
// for is newer than the server has seen. Servers since 1.19 say so with a
// status cause; 1.17 and 1.18 only in a timeout's cause message, and older
// ones in the message.
func isTooLargeResourceVersionError(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	if !apierrors.IsTimeout(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Message == "Too large resource version" {
				return true
			}
		}
	}
	return strings.Contains(s.Message, "Too large resource version")
}

// isRetriableWatchError reports an error after which the watch is started
// again, after a backoff, without a relist: the server refused the
// connection or asked the client to slow down (429).
func isRetriableWatchError(err error) bool {
	return utilnet.IsConnectionRefused(err) || apierrors.IsTooManyRequests(err)
}
