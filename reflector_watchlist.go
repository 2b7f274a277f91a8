package informer

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// streamInitialState gets the initial state from a watch-list stream: a
// watch with SendInitialEvents that replays every object as an ADDED event,
// then sends a bookmark annotated k8s.io/initial-events-end. It collects the
// objects apart, replaces the store's contents with them at once when that
// bookmark comes, and returns the stream, still open, for the watch to go
// on with.
//
// A stream that closes before that bookmark is asked for again. A 429 or a
// refused connection is retried after a backoff; a resource version the
// server calls unavailable is retried at once from "". Other errors are
// returned. It returns nil, nil when ctx ends.
func (r *Reflector[T]) streamInitialState(ctx context.Context) (watch.Interface, error) {
	for {
		if ctx.Err() != nil {
			return nil, nil
		}
		start := r.clock.Now()
		w, err := r.lw.Watch(ctx, metav1.ListOptions{
			ResourceVersion:      r.restreamRV(),
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
			SendInitialEvents:    ptr.To(true),
			AllowWatchBookmarks:  true,
			TimeoutSeconds:       r.watchTimeout(),
		})
		if err == nil && w == nil {
			err = errNilWatch
		}
		var items []T
		var rv string
		var complete bool
		if err == nil {
			items, rv, complete, err = r.collect(ctx, w, start)
			if err != nil || !complete {
				w.Stop()
			}
			if err != nil && ctx.Err() == nil && r.streamFailed != nil {
				r.streamFailed()
			}
		}
		if r.metrics != nil && (err != nil || complete) && ctx.Err() == nil {
			r.metrics.ObserveList(len(items), r.clock.Since(start), err)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil
			}
			err = fmt.Errorf("informer: watch-list %s: %w", r.typeName, err)
			switch {
			case isRetriableWatchError(err):
				r.report(ctx, err)
				if !r.sleep(ctx, r.backoff.next(r.clock.Now(), r.random)) {
					return nil, nil
				}
			case isExpiredError(err) || isTooLargeResourceVersionError(err):
				r.setRVUnavailable(true)
				r.report(ctx, err)
			default:
				return nil, err
			}
			continue
		}
		if !complete {
			continue
		}
		r.setRVUnavailable(false)
		if err := r.store.Replace(items, rv); err != nil {
			w.Stop()
			return nil, fmt.Errorf("informer: replace the store with %d streamed objects: %w", len(items), err)
		}
		r.synced(rv)
		return w, nil
	}
}

// streamReplacer is a watch-list stream that can say it is better replaced,
// once its initial events have come, by a plain watch from the resource
// version they reached. Package wire's streams say so when the server
// compressed the response: the apiserver compresses a watch-list response
// one flush, so one event, at a time (a gzip member each, which costs the
// client about as much CPU to inflate as the event costs to decode), and
// never compresses a plain watch.
type streamReplacer interface {
	ReplaceAfterInitialEvents() bool
}

// replaceAfterInitialEvents reports whether the watch-list stream w, past
// its initial events, is better replaced by a plain watch.
func replaceAfterInitialEvents(w watch.Interface) bool {
	rs, ok := w.(streamReplacer)
	return ok && rs.ReplaceAfterInitialEvents()
}

// collect gathers the initial events of a watch-list stream until the
// initial-events-end bookmark, and returns the objects in the order they
// first came, the resource version reached, and whether the bookmark came.
// It returns complete false, with no error, when the stream closed before
// the bookmark after at least one event or a second.
func (r *Reflector[T]) collect(ctx context.Context, w watch.Interface, start time.Time) (items []T, rv string, complete bool, err error) {
	var got collection[T]
	ch := w.ResultChan()
	idle := r.clock.NewTimer(r.initialEventsTimeout)
	defer idle.Stop()
	received, receivedAtTick := 0, -1
	applied := 0
	pastAdded := false
	// changed is set by a MODIFIED or DELETED event, which a source that
	// streams initial events sends only after their end; changedAtTick
	// keeps it from the last tick. A busy source that ignores
	// sendInitialEvents never goes silent, but sends changes.
	changed, changedAtTick := false, false
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return nil, "", false, ctx.Err()
		case <-idle.C():
			switch {
			case received == receivedAtTick:
				// A whole period without an event, and no end of the
				// initial events: a source that ignores sendInitialEvents.
				return nil, "", false, fmt.Errorf("%w: the watch-list stream of %s sent no event for %v, after %d events",
					ErrNoInitialEventsEnd, r.typeName, r.initialEventsTimeout, received)
			case changedAtTick:
				// Changes for a whole period, and still no end of the
				// initial events: a busy source that ignores them.
				return nil, "", false, fmt.Errorf("%w: the watch-list stream of %s sent changes for %v before the end of its initial events, after %d events",
					ErrNoInitialEventsEnd, r.typeName, r.initialEventsTimeout, received)
			}
			receivedAtTick, changedAtTick = received, changed
			idle.Reset(r.initialEventsTimeout)
			continue
		case ev, ok = <-ch:
			received++
		}
		if !ok {
			if d := r.clock.Since(start); d < veryShortWatch && applied == 0 {
				return nil, "", false, fmt.Errorf("%w: the watch-list stream of %s closed after %v with no event", ErrVeryShortWatch, r.typeName, d)
			}
			return nil, "", false, nil
		}
		if ev.Type == watch.Error {
			return nil, "", false, errorEventError(ev)
		}
		obj, ok := ev.Object.(T)
		if !ok || isNil(obj) {
			r.report(ctx, &EventError{Type: ev.Type, Object: ev.Object, Err: ErrUnexpectedObject})
			continue
		}
		objRV := obj.GetResourceVersion()
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			if ev.Type != watch.Added {
				pastAdded, changed = true, true
			}
			if err := got.apply(ev.Type, obj); err != nil {
				r.report(ctx, &EventError{Type: ev.Type, Object: ev.Object, Err: err})
			}
		case watch.Bookmark:
			if objRV == "" {
				r.report(ctx, &EventError{Type: ev.Type, Object: ev.Object, Err: ErrNoResourceVersion})
				continue
			}
			pastAdded = true
			complete = obj.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
		default:
			r.report(ctx, &EventError{Type: ev.Type, Object: ev.Object, Err: ErrUnknownEventType})
			continue
		}
		applied++
		if pastAdded && objRV != "" {
			rv = objRV
		}
		if complete {
			return got.list(), rv, true, nil
		}
	}
}

// collection holds the objects of a watch-list stream by key, in the order
// their keys first came.
type collection[T Object] struct {
	index map[string]int // key -> position in items
	items []T            // the zero T where an object was deleted
	holes int            // deleted positions in items
}

// errNoKey wraps the error of MetaNamespaceKeyFunc for an object a
// watch-list stream sent.
var errNoKey = errors.New("informer: cannot key a streamed object")

func (c *collection[T]) apply(t watch.EventType, obj T) error {
	key, err := MetaNamespaceKeyFunc(obj)
	if err != nil {
		return fmt.Errorf("%w: %w", errNoKey, err)
	}
	if c.index == nil {
		c.index = make(map[string]int)
	}
	i, ok := c.index[key]
	switch {
	case t == watch.Deleted && ok:
		var zero T
		c.items[i] = zero
		c.holes++
		delete(c.index, key)
	case t == watch.Deleted:
	case ok:
		c.items[i] = obj
	default:
		c.index[key] = len(c.items)
		c.items = append(c.items, obj)
	}
	return nil
}

// list returns the objects held, in order.
func (c *collection[T]) list() []T {
	if c.holes == 0 {
		return c.items
	}
	out := make([]T, 0, len(c.items)-c.holes)
	for _, obj := range c.items {
		if !isNil(obj) {
			out = append(out, obj)
		}
	}
	return out
}
