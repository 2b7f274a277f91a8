package informer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
		var enc *encodedList[T]
		var rv string
		var complete bool
		if err == nil {
			items, enc, rv, complete, err = r.collect(ctx, w, start)
			if err != nil || !complete {
				w.Stop()
			}
			if err != nil && ctx.Err() == nil && r.streamFailed != nil {
				r.streamFailed()
			}
		}
		if r.metrics != nil && (err != nil || complete) && ctx.Err() == nil {
			r.metrics.ObserveList(len(items)+enc.len(), r.clock.Since(start), err)
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
		if err := r.replaceListed(items, enc, rv); err != nil {
			w.Stop()
			return nil, fmt.Errorf("informer: replace the store with %d streamed objects: %w", len(items)+enc.len(), err)
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
// first came (as records in enc instead, if any came as records: see
// streamedRecord), the resource version reached, and whether the bookmark
// came.
// It returns complete false, with no error, when the stream closed before
// the bookmark after at least one event or a second. A stream that is an
// eventPuller is read in this goroutine (see collector.pulled).
func (r *Reflector[T]) collect(ctx context.Context, w watch.Interface, start time.Time) (items []T, enc *encodedList[T], rv string, complete bool, err error) {
	c := collector[T]{r: r, start: start}
	defer c.got.endRecords()
	if p, ok := w.(eventPuller); ok {
		return c.pulled(ctx, w, p)
	}
	ch := w.ResultChan()
	idle := r.clock.NewTimer(r.initialEventsTimeout)
	defer idle.Stop()
	prog := progress{received: -1}
	for {
		select {
		case <-ctx.Done():
			return nil, nil, "", false, ctx.Err()
		case <-idle.C():
			if err := prog.tick(c.received.Load(), c.changed.Load(), r.typeName, r.initialEventsTimeout); err != nil {
				return nil, nil, "", false, err
			}
			idle.Reset(r.initialEventsTimeout)
		case ev, ok := <-ch:
			c.received.Add(1)
			if done, err := c.event(ctx, ev, ok); done || err != nil {
				return c.result(err)
			}
		}
	}
}

// collector is what collect keeps while it gathers a stream's initial
// events.
type collector[T Object] struct {
	r         *Reflector[T]
	start     time.Time
	got       collection[T]
	rv        string
	complete  bool
	applied   int
	pastAdded bool
	// received counts the events (the end of the stream included);
	// changed is set by a MODIFIED or DELETED event, which a source that
	// streams initial events sends only after their end. Both are read
	// at each tick of the idle timer, in another goroutine when pulled.
	received atomic.Int64
	changed  atomic.Bool
	ended    bool // the stream ended before the bookmark
}

// event takes one event, or the end of the stream (ok false), and returns
// done once nothing more is to be collected: the initial events ended, or
// the stream did; err ends the collecting.
func (c *collector[T]) event(ctx context.Context, ev watch.Event, ok bool) (done bool, err error) {
	r := c.r
	if !ok {
		if d := r.clock.Since(c.start); d < veryShortWatch && c.applied == 0 {
			return true, fmt.Errorf("%w: the watch-list stream of %s closed after %v with no event", ErrVeryShortWatch, r.typeName, d)
		}
		c.ended = true
		return true, nil
	}
	if ev.Type == watch.Error {
		return true, errorEventError(ev)
	}
	if sr, ok := ev.Object.(*streamedRecord[T]); ok && ev.Type == watch.Added {
		// An initial object, as a record: its resource version is
		// not read, since the bookmark that ends the initial events
		// sets the one reached.
		c.got.applyRecord(sr)
		c.applied++
		return false, nil
	}
	obj, ok := r.eventObject(ctx, ev)
	if !ok {
		return false, nil
	}
	objRV := obj.GetResourceVersion()
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
		if ev.Type != watch.Added {
			c.pastAdded = true
			c.changed.Store(true)
		}
		if err := c.got.apply(ev.Type, obj); err != nil {
			r.report(ctx, &EventError{Type: ev.Type, Object: ev.Object, Err: err})
		}
	case watch.Bookmark:
		if objRV == "" {
			r.report(ctx, &EventError{Type: ev.Type, Object: ev.Object, Err: ErrNoResourceVersion})
			return false, nil
		}
		c.pastAdded = true
		c.complete = obj.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
	default:
		r.report(ctx, &EventError{Type: ev.Type, Object: ev.Object, Err: ErrUnknownEventType})
		return false, nil
	}
	c.applied++
	if c.pastAdded && objRV != "" {
		c.rv = objRV
	}
	return c.complete, nil
}

// result is collect's return once event said done, or failed with err.
func (c *collector[T]) result(err error) (items []T, enc *encodedList[T], rv string, complete bool, _ error) {
	if err != nil || c.ended {
		return nil, nil, "", false, err
	}
	items, enc = c.got.list()
	return items, enc, c.rv, true, nil
}

// pulled is collect for a stream read in this goroutine, with no goroutine
// and channel between the stream and the collection. A read blocks, so
// what would end the wait stops the stream instead: ctx ending, and the
// idle timer, whose ticks a goroutine of its own checks until the
// collecting ends.
func (c *collector[T]) pulled(ctx context.Context, w watch.Interface, p eventPuller) (items []T, enc *encodedList[T], rv string, complete bool, err error) {
	r := c.r
	stopOnCancel := context.AfterFunc(ctx, w.Stop)
	defer stopOnCancel()
	var idleErr atomic.Pointer[error]
	collecting := make(chan struct{})
	var watchdog sync.WaitGroup
	defer watchdog.Wait()
	defer close(collecting)
	idle := r.clock.NewTimer(r.initialEventsTimeout)
	watchdog.Go(func() {
		defer idle.Stop()
		prog := progress{received: -1}
		for {
			select {
			case <-collecting:
				return
			case <-idle.C():
				if err := prog.tick(c.received.Load(), c.changed.Load(), r.typeName, r.initialEventsTimeout); err != nil {
					idleErr.Store(&err)
					w.Stop()
					return
				}
				idle.Reset(r.initialEventsTimeout)
			}
		}
	})
	for {
		ev, ok := p.NextEvent()
		c.received.Add(1)
		if err := ctx.Err(); err != nil {
			return nil, nil, "", false, err
		}
		if err := idleErr.Load(); err != nil {
			return nil, nil, "", false, *err
		}
		if done, err := c.event(ctx, ev, ok); done || err != nil {
			return c.result(err)
		}
	}
}

// progress is what the idle timer's last tick saw of a watch-list stream.
type progress struct {
	received int64 // events received by then, -1 before the first tick
	changed  bool  // whether a change had come by then
}

// tick checks a stream's progress since the last tick, received events
// and changed having come in all: an error if no event came for a whole
// period (a source that ignores sendInitialEvents), or if changes came for
// a whole period without the initial events ending (a busy source that
// ignores them).
func (p *progress) tick(received int64, changed bool, typeName string, period time.Duration) error {
	switch {
	case received == p.received:
		return fmt.Errorf("%w: the watch-list stream of %s sent no event for %v, after %d events",
			ErrNoInitialEventsEnd, typeName, period, received)
	case p.changed:
		return fmt.Errorf("%w: the watch-list stream of %s sent changes for %v before the end of its initial events, after %d events",
			ErrNoInitialEventsEnd, typeName, period, received)
	}
	p.received, p.changed = received, changed
	return nil
}

// collection holds the objects of a watch-list stream by key, in the order
// their keys first came. An API server sends a stream's initial objects each
// once and in the order of their keys (its watch cache lists them so): while
// they come so, each is compared with the one before it alone, and the index
// of positions by key is made at the first event out of that order (an
// object whose key is not above the last one's, or a change).
//
// Once an object comes as a record (a compact store's source streams its
// initial objects so, see streamedRecord), every object is held in recs
// instead of items: the records as they came, and the objects to encode.
type collection[T Object] struct {
	index map[string]int // key -> position in items or recs, once out of order
	items []T            // the zero T where an object was deleted
	holes int            // deleted positions in items or recs
	recs  []encoded[T]   // once codec is set; key "" where an object was deleted
	codec recordCodec[T] // the records', set by the first
}

// errNoKey wraps the error of MetaNamespaceKeyFunc for an object a
// watch-list stream sent.
var errNoKey = errors.New("informer: cannot key a streamed object")

func (c *collection[T]) apply(t watch.EventType, obj T) error {
	if err := checkMetaKey(obj); err != nil {
		return fmt.Errorf("%w: %w", errNoKey, err)
	}
	if c.codec != nil {
		key, _ := MetaNamespaceKeyFunc(obj)
		c.applyEncoded(t, encoded[T]{key: key, obj: obj, decoded: true})
		return nil
	}
	if c.index == nil {
		if n := len(c.items); t == watch.Added && (n == 0 || compareKeys(c.items[n-1], obj) < 0) {
			c.items = append(c.items, obj)
			return nil
		}
		c.index = make(map[string]int, len(c.items))
		for i, o := range c.items {
			k, _ := MetaNamespaceKeyFunc(o)
			c.index[k] = i
		}
	}
	key, _ := MetaNamespaceKeyFunc(obj)
	var zero T
	c.items = placeKeyed(c.index, c.items, &c.holes, t, key, obj, zero)
	return nil
}

// applyRecord adds the initial object r brings as a record. At the first,
// the objects held so far move to recs.
func (c *collection[T]) applyRecord(r *streamedRecord[T]) {
	if c.codec == nil {
		c.codec = r.codec
		c.recs = make([]encoded[T], len(c.items), max(2*len(c.items), 16))
		for i, obj := range c.items {
			if !isNil(obj) {
				key, _ := MetaNamespaceKeyFunc(obj)
				c.recs[i] = encoded[T]{key: key, obj: obj, decoded: true}
			}
		}
		c.items = nil
	}
	c.applyEncoded(watch.Added, r.e)
}

// applyEncoded is apply for an object held in recs.
func (c *collection[T]) applyEncoded(t watch.EventType, e encoded[T]) {
	if c.index == nil {
		if n := len(c.recs); t == watch.Added && (n == 0 || c.recs[n-1].key < e.key) {
			c.recs = append(c.recs, e)
			return
		}
		c.index = make(map[string]int, len(c.recs))
		for i, r := range c.recs {
			c.index[r.key] = i
		}
	}
	c.recs = placeKeyed(c.index, c.recs, &c.holes, t, e.key, e, encoded[T]{})
}

// placeKeyed applies an event of type t to the object e, keyed key, in
// elems, whose positions index holds by key: a deleted one's position
// becomes hole, and is counted in holes. It returns elems.
func placeKeyed[E any](index map[string]int, elems []E, holes *int, t watch.EventType, key string, e, hole E) []E {
	i, ok := index[key]
	switch {
	case t == watch.Deleted && ok:
		elems[i] = hole
		*holes++
		delete(index, key)
	case t == watch.Deleted:
	case ok:
		elems[i] = e
	default:
		index[key] = len(elems)
		elems = append(elems, e)
	}
	return elems
}

// endRecords tells the records' codec, if any came, that the stream's
// initial objects have ended (see wire.Compact.EndList).
func (c *collection[T]) endRecords() {
	if c.codec != nil {
		c.codec.EndList()
	}
}

// compareKeys compares the keys MetaNamespaceKeyFunc makes of a and b, as
// strings, without making them.
func compareKeys[T Object](a, b T) int {
	ans, bns := a.GetNamespace(), b.GetNamespace()
	if ans == bns {
		return strings.Compare(a.GetName(), b.GetName())
	}
	x := [3]string{ans, "/", a.GetName()}
	y := [3]string{bns, "/", b.GetName()}
	xs, ys := x[:], y[:]
	if ans == "" {
		xs = x[2:]
	}
	if bns == "" {
		ys = y[2:]
	}
	return compareJoined(xs, ys)
}

// compareJoined compares strings.Join(a, "") with strings.Join(b, "").
func compareJoined(a, b []string) int {
	var x, y string
	for {
		for x == "" && len(a) > 0 {
			x, a = a[0], a[1:]
		}
		for y == "" && len(b) > 0 {
			y, b = b[0], b[1:]
		}
		switch {
		case x == "" && y == "":
			return 0
		case x == "":
			return -1
		case y == "":
			return 1
		}
		n := min(len(x), len(y))
		if c := strings.Compare(x[:n], y[:n]); c != 0 {
			return c
		}
		x, y = x[n:], y[n:]
	}
}

// list returns the objects held, in order: as items, or, once a record
// came, as the records (and objects) of enc.
func (c *collection[T]) list() (items []T, enc *encodedList[T]) {
	if c.codec != nil {
		recs := c.recs
		if c.holes > 0 {
			recs = slices.DeleteFunc(recs, func(e encoded[T]) bool { return e.key == "" })
		}
		return nil, &encodedList[T]{items: recs, codec: c.codec}
	}
	if c.holes == 0 {
		return c.items, nil
	}
	out := make([]T, 0, len(c.items)-c.holes)
	for _, obj := range c.items {
		if !isNil(obj) {
			out = append(out, obj)
		}
	}
	return out, nil
}

// streamedRecord is the object of an initial event of a compact store's
// watch-list stream (see wire.SourceOptions.Initial): the object's record,
// key and labels, made of the event's bytes as a listed object's are,
// which the Reflector collects as such.
type streamedRecord[T any] struct {
	e     encoded[T]
	codec recordCodec[T]
}

// GetObjectKind and DeepCopyObject make it a runtime.Object, as a watch
// event's object is. A record is not written once made: a copy shares it.
func (*streamedRecord[T]) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (r *streamedRecord[T]) DeepCopyObject() runtime.Object {
	c := *r
	return &c
}
