package informer

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// errNilWatch reports a Watch that returned neither a watcher nor an error.
var errNilWatch = errors.New("informer: Watch returned no watcher and no error")

// watch applies watch events to the store, starting with w if it is not
// nil (a watch-list stream past its initial events) and then with watches
// from the last synced resource version. A watch that ends normally (the
// server's timeout) is followed by the next at once; one refused with 429
// or a refused connection, after a backoff; one ended by an internal error,
// at once while InternalErrorRetry allows. Any other failure ends the round
// and is returned, so that Run lists again. It returns nil when ctx ends.
func (r *Reflector[T]) watch(ctx context.Context, w watch.Interface, resyncErr <-chan error) error {
	retry := retryWindow{window: r.internalErr}
	for {
		if ctx.Err() != nil {
			if w != nil {
				w.Stop()
			}
			return nil
		}
		// Time the watch from before the request: some proxies send no
		// headers before the first event.
		start := r.clock.Now()
		// A watch from a resource version replays nothing, so every event
		// moves the resource version on. One from "" or "0" starts with
		// synthetic ADDED events in no particular order: the resource
		// version moves only once another kind of event has come.
		fromRV := true
		if w == nil {
			rv := r.LastSyncResourceVersion()
			fromRV = !replaysFrom(rv)
			var err error
			w, err = r.lw.Watch(ctx, metav1.ListOptions{
				ResourceVersion:     rv,
				TimeoutSeconds:      r.watchTimeout(),
				AllowWatchBookmarks: true,
			})
			if err == nil && w == nil {
				err = errNilWatch
			}
			if err != nil {
				err = fmt.Errorf("informer: watch %s: %w", r.typeName, err)
				if ctx.Err() != nil {
					return nil
				}
				if errors.Is(err, ErrRelist) {
					return err
				}
				if r.metrics != nil {
					r.metrics.ObserveWatch(0, r.clock.Since(start), err)
				}
				if !isRetriableWatchError(err) {
					return err
				}
				r.report(ctx, err)
				if !r.sleep(ctx, r.backoff.next(r.clock.Now(), r.random)) {
					return nil
				}
				continue
			}
		}
		events, err := r.handleWatch(ctx, w, start, fromRV, resyncErr)
		w = nil
		now := r.clock.Now()
		if r.metrics != nil {
			observed := err
			if ctx.Err() != nil {
				observed = nil
			}
			r.metrics.ObserveWatch(events, now.Sub(start), observed)
		}
		retry.record(err, now)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrClosed):
			return err
		case apierrors.IsTooManyRequests(err):
			r.report(ctx, err)
			if !r.sleep(ctx, r.backoff.next(now, r.random)) {
				return nil
			}
		case apierrors.IsInternalError(err) && retry.allow(now):
			r.report(ctx, err)
		default:
			return err
		}
	}
}

// eventPuller is a watch whose events the Reflector can read in its own
// goroutine, with no goroutine and channel between the stream and the
// store (package wire's watches are). NextEvent returns the next event, or
// false once the stream has ended or Stop was called; ResultChan is then
// never used.
type eventPuller interface {
	NextEvent() (watch.Event, bool)
}

// bufferedWatch is an eventPuller that can tell whether the next event's
// bytes have already been received, so that the next NextEvent will not
// wait for the network (package wire's watches can): a burst of events.
type bufferedWatch interface {
	MoreBuffered() bool
}

// watchState is what handleWatch tracks while it applies a watch's events.
type watchState struct {
	rv         string // resource version reached, not yet published
	unsaved    bool   // rv is ahead of lastSyncRV
	pastAdded  bool
	applied    int   // events applied: refused objects not, bookmarks included
	seen       int   // events of an object or a bookmark, refused or not
	stopReason error // the ERROR event that ended the watch
}

// handleWatch applies the events of w to the store until w closes, an
// ERROR event comes, the resync goroutine fails or ctx ends, and stops w.
// It returns the number of events applied, and nil when w closed normally.
//
// This is the hot path of a running Reflector: per event it does a
// non-blocking receive, a type assertion, the store write and two
// non-blocking checks; it publishes the resource version when it is about
// to wait for the next event rather than after each one. A watch that is an
// eventPuller is read directly instead (see pullWatch).
func (r *Reflector[T]) handleWatch(ctx context.Context, w watch.Interface, start time.Time, fromRV bool, resyncErr <-chan error) (int, error) {
	defer w.Stop()
	st := watchState{pastAdded: fromRV}
	defer func() {
		if st.unsaved {
			r.setLastSyncRV(st.rv)
		}
	}()
	if p, ok := w.(eventPuller); ok {
		if err := r.pullWatch(ctx, w, p, &st, resyncErr); err != nil {
			return st.applied, err
		}
		return r.watchEnded(ctx, w, start, &st)
	}
	ch := w.ResultChan()
	done := ctx.Done()
	for {
		var ev watch.Event
		var ok bool
		select {
		case ev, ok = <-ch:
		default:
			if st.unsaved {
				r.setLastSyncRV(st.rv)
				st.unsaved = false
			}
			select {
			case ev, ok = <-ch:
			case <-done:
				return st.applied, ctx.Err()
			case err := <-resyncErr:
				return st.applied, err
			}
		}
		if !ok {
			break
		}
		select {
		case <-done:
			return st.applied, ctx.Err()
		default:
		}
		select {
		case err := <-resyncErr:
			return st.applied, err
		default:
		}
		if r.burst != nil {
			r.burst.noteBurst(len(ch) > 0)
		}
		if end, err := r.applyEvent(ctx, ev, &st); err != nil {
			return st.applied, err
		} else if end {
			break
		}
	}
	return r.watchEnded(ctx, w, start, &st)
}

// pullWatch is handleWatch's loop for an eventPuller: it reads each event
// in this goroutine, and stops the watch to wake a blocked read when ctx
// ends or the resync goroutine fails. It publishes the resource version
// after each event, as it cannot tell whether the next read will wait.
func (r *Reflector[T]) pullWatch(ctx context.Context, w watch.Interface, p eventPuller, st *watchState, resyncErr <-chan error) error {
	stopOnCancel := context.AfterFunc(ctx, w.Stop)
	defer stopOnCancel()
	var resyncFailed chan error
	if resyncErr != nil {
		// The resync goroutine's failure must wake a blocked read too.
		resyncFailed = make(chan error, 1)
		watching := make(chan struct{})
		defer close(watching)
		go func() {
			select {
			case err := <-resyncErr:
				resyncFailed <- err
				w.Stop()
			case <-watching:
			}
		}()
	}
	more, _ := w.(bufferedWatch)
	for {
		ev, ok := p.NextEvent()
		if err := ctx.Err(); err != nil {
			return err
		}
		select {
		case err := <-resyncFailed:
			return err
		default:
		}
		if !ok {
			return nil
		}
		if r.burst != nil {
			r.burst.noteBurst(more != nil && more.MoreBuffered())
		}
		end, err := r.applyEvent(ctx, ev, st)
		if err != nil {
			return err
		}
		if st.unsaved {
			r.setLastSyncRV(st.rv)
			st.unsaved = false
		}
		if end {
			return nil
		}
	}
}

// applyEvent applies one event to the store. It returns end when the event
// ends the watch (an ERROR event, whose error is then st.stopReason), and
// an error when nothing more can be applied (the store is closed).
func (r *Reflector[T]) applyEvent(ctx context.Context, ev watch.Event, st *watchState) (end bool, err error) {
	if ev.Type == watch.Error {
		st.stopReason = errorEventError(ev)
		return true, nil
	}
	// The check eventObject makes, written out: this is the watch's hot
	// path, and a generic method is not inlined.
	obj, ok := ev.Object.(T)
	if !ok || isNil(obj) {
		r.report(ctx, &EventError{Type: ev.Type, Object: ev.Object, Err: ErrUnexpectedObject})
		return false, nil
	}
	objRV := obj.GetResourceVersion()
	switch ev.Type {
	case watch.Added:
		if !st.pastAdded && r.replayer != nil {
			err = r.replayer.addReplayed(obj)
		} else {
			err = r.store.Add(obj)
		}
	case watch.Modified:
		st.pastAdded = true
		err = r.store.Update(obj)
	case watch.Deleted:
		st.pastAdded = true
		err = r.store.Delete(obj)
	case watch.Bookmark:
		if objRV == "" {
			r.report(ctx, &EventError{Type: ev.Type, Object: ev.Object, Err: ErrNoResourceVersion})
			return false, nil
		}
		st.pastAdded = true
		if r.bookmarker != nil {
			r.bookmarker.Bookmark(objRV)
		}
	default:
		r.report(ctx, &EventError{Type: ev.Type, Object: ev.Object, Err: ErrUnknownEventType})
		return false, nil
	}
	if err != nil {
		err = &EventError{Type: ev.Type, Object: ev.Object, Err: err}
		if errors.Is(err, ErrClosed) {
			return false, err
		}
		r.report(ctx, err)
	} else {
		st.applied++
	}
	st.seen++
	// An object without a resource version (only fakes send one) leaves
	// the last one in place rather than forget it.
	if st.pastAdded && objRV != "" {
		st.rv, st.unsaved = objRV, true
	}
	return false, nil
}

// eventObject returns the object of ev, an event of an object, as a T; an
// object that is not one, or is nil, is reported and skipped.
func (r *Reflector[T]) eventObject(ctx context.Context, ev watch.Event) (T, bool) {
	obj, ok := ev.Object.(T)
	if !ok || isNil(obj) {
		r.report(ctx, &EventError{Type: ev.Type, Object: ev.Object, Err: ErrUnexpectedObject})
		return obj, false
	}
	return obj, true
}

// watchEnded returns how a watch that closed, or sent an ERROR event,
// ended: the ERROR event's error, a relist asked for through Err, a very
// short watch, or nil.
func (r *Reflector[T]) watchEnded(ctx context.Context, w watch.Interface, start time.Time, st *watchState) (int, error) {
	if st.stopReason != nil {
		return st.applied, fmt.Errorf("informer: watch %s: %w", r.typeName, st.stopReason)
	}
	if why, ok := w.(interface{ Err() error }); ok {
		if err := why.Err(); errors.Is(err, ErrRelist) {
			return st.applied, err
		}
	}
	// An event refused by the store still shows the watch was live.
	if d := r.clock.Since(start); d < veryShortWatch && st.seen == 0 {
		return st.applied, fmt.Errorf("%w: the watch of %s closed after %v with no event", ErrVeryShortWatch, r.typeName, d)
	}
	klog.FromContext(ctx).V(4).Info("Watch closed", "events", st.applied)
	return st.applied, nil
}

// retryWindow decides whether an internal error that ended a watch is
// retried without a relist: while such errors keep coming at most
// internalErrorResetAfter apart, for at most window after the first.
type retryWindow struct {
	window      time.Duration // 0: never retry
	first, last time.Time     // of the current run of internal errors
}

// record notes how a watch ended.
func (w *retryWindow) record(err error, now time.Time) {
	if !apierrors.IsInternalError(err) {
		return
	}
	if now.Sub(w.last) >= internalErrorResetAfter {
		w.first = time.Time{}
	}
	if w.first.IsZero() {
		w.first = now
	}
	w.last = now
}

// allow reports whether the internal error just recorded is retried.
func (w *retryWindow) allow(now time.Time) bool {
	if w.window <= 0 {
		return false
	}
	if now.Sub(w.first) <= w.window {
		return true
	}
	w.first, w.last = time.Time{}, time.Time{}
	return false
}
