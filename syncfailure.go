package informer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedkube/informer/wire"
)

// ErrSyncFailed reports an informer whose initial list failed with an
// error that retrying is not expected to mend: the server refused it
// (Forbidden, Unauthorized), no longer serves the resource (NotFound, as
// for a deleted CRD), refused the request (BadRequest, Invalid, such as a
// malformed selector, NotAcceptable, UnsupportedMediaType,
// MethodNotSupported), or sent what cannot be decoded. It is wrapped in a
// *SyncError.
var ErrSyncFailed = errors.New("informer: sync failed")

// SyncError is what an informer that has not synced met last: the cause,
// which errors.Is and errors.As see (so apierrors.IsForbidden(err) works),
// and ErrSyncFailed. The informer goes on retrying with backoff; it may
// still sync if the cause goes away (RBAC granted, CRD installed).
type SyncError struct {
	Informer string // the informer's name, such as "v1/pods"
	Err      error
}

// Error names the informer and the cause.
func (e *SyncError) Error() string {
	return fmt.Sprintf("informer: %s cannot sync: %v", e.Informer, e.Err)
}

// Unwrap returns ErrSyncFailed and the cause.
func (e *SyncError) Unwrap() []error { return []error{ErrSyncFailed, e.Err} }

// syncFailure records the errors that keep an informer from syncing.
type syncFailure struct {
	mu       sync.Mutex // guards the fields below
	err      *SyncError
	gen      uint64        // how many errors were recorded
	next     chan struct{} // closed when the next one is
	reported uint64        // gen when the package's WaitForCacheSync last returned err
}

func newSyncFailure() *syncFailure { return &syncFailure{next: make(chan struct{})} }

// note records err if it is a cause ErrSyncFailed describes and the
// informer has not synced.
func (f *syncFailure) note(name string, synced bool, err error) {
	if synced || !isSyncFailure(err) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = &SyncError{Informer: name, Err: err}
	f.gen++
	close(f.next)
	f.next = make(chan struct{})
}

// get returns the last recorded error, if the informer has not synced.
func (f *syncFailure) get(synced bool) error {
	if synced {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		return nil
	}
	return f.err
}

// state returns how many errors were recorded, and a channel closed when
// the next one is.
func (f *syncFailure) state() (uint64, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen, f.next
}

// unreported reports whether an error was recorded that the package's
// WaitForCacheSync has not returned yet, and returns a channel closed when
// the next one is.
func (f *syncFailure) unreported() (bool, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen > f.reported, f.next
}

// report returns the last recorded error, if the informer has not synced,
// as get does, and notes that WaitForCacheSync returned it.
func (f *syncFailure) report(synced bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if synced || f.err == nil {
		return nil
	}
	f.reported = f.gen
	return f.err
}

// failingSyncer is a Syncer that knows what keeps it from syncing: an
// informer, or a handler's Registration of one.
type failingSyncer interface {
	Synced() <-chan struct{}
	// failureState returns the informer's record of failures, and whether
	// the informer has synced.
	failureState() (*syncFailure, bool)
}

func (s *SharedIndexInformer[T]) failureState() (*syncFailure, bool) { return s.failure, s.HasSynced() }

func (r *Registration[T]) failureState() (*syncFailure, bool) {
	return r.inf.failure, r.inf.HasSynced()
}

// isSyncFailure reports whether err, met by a Reflector, is one that
// retrying is not expected to mend (see ErrSyncFailed). Network errors,
// timeouts, throttling, server errors, 410s and the ends of a watch are
// not: the Reflector retries those, and they usually pass.
func isSyncFailure(err error) bool {
	var skipped *EventError
	switch {
	case err == nil,
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		isExpiredError(err), isRetriableWatchError(err),
		errors.Is(err, ErrWatchListFallback), errors.Is(err, ErrContinueExpired),
		errors.Is(err, ErrVeryShortWatch), errors.Is(err, ErrNoInitialEventsEnd):
		return false
	case errors.As(err, &skipped) && skipped.Type != watch.Error:
		// One event stepped over; the Reflector goes on.
		return false
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err), apierrors.IsNotFound(err),
		apierrors.IsBadRequest(err), apierrors.IsInvalid(err), apierrors.IsNotAcceptable(err),
		apierrors.IsUnsupportedMediaType(err), apierrors.IsMethodNotSupported(err):
		return true
	}
	return isDecodeError(err)
}

// errUndecodable wraps the error of a successful response whose body
// client-go's codecs could not decode (malformed, or of a content type
// they do not know), whatever text the codec's error has.
var errUndecodable = errors.New("informer: the response cannot be decoded")

// watchDecodingCause is the cause type of the Status of the ERROR event
// that ends a watch whose stream client-go could not decode, also sent by
// package wire and for objects that do not convert (undecodableEvent).
const watchDecodingCause = "ClientWatchDecoding"

// isDecodeError reports an error of decoding a response: package wire's,
// the scheme's, JSON's, client-go's codecs', a watch's that could not
// decode an event, or an object of the wrong type.
func isDecodeError(err error) bool {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	var status apierrors.APIStatus
	return errors.Is(err, errUndecodable) || errors.Is(err, wire.ErrMalformed) || errors.Is(err, wire.ErrTruncated) ||
		errors.Is(err, ErrUnexpectedObject) ||
		runtime.IsNotRegisteredError(err) || runtime.IsMissingKind(err) || runtime.IsMissingVersion(err) ||
		errors.As(err, &syntax) || errors.As(err, &typeErr) ||
		errors.As(err, &status) && hasCause(status.Status(), watchDecodingCause)
}

// hasCause reports whether st has a cause of type typ.
func hasCause(st metav1.Status, typ metav1.CauseType) bool {
	if st.Details == nil {
		return false
	}
	for _, c := range st.Details.Causes {
		if c.Type == typ {
			return true
		}
	}
	return false
}

// SyncFailure returns, until the informer has synced, a *SyncError with
// the last error of its lists and watches that retrying is not expected to
// mend (see ErrSyncFailed), or nil if it met none. Once synced, nil.
func (s *SharedIndexInformer[T]) SyncFailure() error { return s.failure.get(s.HasSynced()) }

// syncFailures returns how many SyncFailures the informer has recorded,
// and a channel closed when it records the next.
func (s *SharedIndexInformer[T]) syncFailures() (uint64, <-chan struct{}) { return s.failure.state() }

// WaitForSync waits until the informer has synced and returns nil, or
// returns its SyncFailure as soon as it has one, or an error wrapping ctx's
// cause if ctx ends first. Unlike WaitForCacheSync, a missing permission or
// CRD is reported when the server answers, not when ctx ends; the informer
// goes on retrying, and a later call waits again. It starts no goroutine.
func (s *SharedIndexInformer[T]) WaitForSync(ctx context.Context) error {
	for {
		// The channel is read before the checks, so that a failure noted
		// between them wakes the wait.
		_, next := s.failure.state()
		if s.HasSynced() {
			return nil
		}
		if err := s.failure.get(false); err != nil && !s.HasSynced() {
			return err
		}
		select {
		case <-s.synced:
			return nil
		case <-next:
		case <-ctx.Done():
			return fmt.Errorf("informer %s: not synced: %w", s.opts.Name, context.Cause(ctx))
		}
	}
}
