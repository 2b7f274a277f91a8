package informer

import (
	"context"
	"errors"
	"slices"
	"time"

	"k8s.io/klog/v2"
)

// processEvents is the goroutine that applies the events of the in-order
// queue to the cache and hands the resulting notifications to the handlers.
func (s *SharedIndexInformer[T]) processEvents(ctx context.Context, q *eventQueue[T]) {
	var batch []event[T]
	var notes []notification[T]
	for {
		var initial, ok bool
		batch, initial, ok = q.pop(batch[:0], maxBatch)
		if !ok || ctx.Err() != nil {
			return
		}
		var start time.Time
		if s.opts.Metrics != nil {
			start = s.clock.Now()
		}
		s.procMu.Lock()
		for i := range batch {
			if ctx.Err() != nil {
				// Stopping: the rest of the queue is dropped, so that
				// shutdown does not wait for a backlog.
				s.procMu.Unlock()
				return
			}
			notes = s.applyEvent(ctx, &batch[i], initial, notes)
		}
		recordApplied(&s.applied, batch)
		s.distributeLocked(notes)
		s.procMu.Unlock()
		if s.opts.Metrics != nil {
			s.opts.Metrics.ObserveProcessing(len(batch), s.clock.Since(start))
		}
		clear(batch)
		notes = reuseNotes(notes)
		if q.processed(len(batch)) {
			s.markSynced()
		}
	}
}

// keptNotes is the capacity of notifications the processing goroutine
// keeps between batches: what a full batch's grows to (append grows past
// maxBatch on the way to it), so that it is not made again for each batch;
// a relist's or a resync's, one for each object, is let go.
const keptNotes = 2 * maxBatch

// reuseNotes returns notes emptied for the next batch, or nil if it has
// grown past keptNotes: a relist's are not held for the informer's life.
func reuseNotes[T Object](notes []notification[T]) []notification[T] {
	clear(notes)
	if cap(notes) > keptNotes {
		return nil
	}
	return notes[:0]
}

// directApplier returns the function with which the event queue applies a
// change in the reflector's goroutine while the processing goroutine waits
// on an empty queue (see eventQueue.direct): the same work as a batch of
// one, and nothing once ctx (the processing's) has ended.
func (s *SharedIndexInformer[T]) directApplier(ctx context.Context) func(e event[T]) {
	var notes []notification[T]
	return func(e event[T]) {
		if ctx.Err() != nil {
			return
		}
		var start time.Time
		if s.opts.Metrics != nil {
			start = s.clock.Now()
		}
		s.procMu.Lock()
		notes = s.applyEvent(ctx, &e, false, notes[:0])
		if rv := e.obj.GetResourceVersion(); rv != "" && !e.replayed {
			s.applied.advance(rv)
		}
		s.distributeLocked(notes)
		s.procMu.Unlock()
		clear(notes)
		if s.opts.Metrics != nil {
			s.opts.Metrics.ObserveProcessing(1, s.clock.Since(start))
		}
	}
}

// recordApplied records in a the resource version up to which the cache
// holds the server's changes once batch is applied: each relist of the
// batch in turn, and the last version of the events before, between and
// after them.
func recordApplied[T Object](a *appliedVersion, batch []event[T]) {
	start := 0
	for i := range batch {
		if batch[i].kind == evReplace {
			a.advance(lastVersion(batch[start:i]))
			a.replaced(batch[i].version())
			start = i + 1
		}
	}
	a.advance(lastVersion(batch[start:]))
}

// lastVersion returns the resource version of the last event of batch, a
// batch without relists, that carries one: the server's changes are
// applied in order, so the cache then holds every change up to it. A
// watch's replay carries none that counts.
func lastVersion[T Object](batch []event[T]) string {
	for i := len(batch) - 1; i >= 0; i-- {
		e := &batch[i]
		switch e.kind {
		case evAdd, evUpdate, evDelete:
			if rv := e.obj.GetResourceVersion(); rv != "" && !e.replayed {
				return rv
			}
		case evBookmark:
			if rv := e.version(); rv != "" {
				return rv
			}
		}
	}
	return ""
}

// applyEvent applies e to the cache and appends the notifications it makes:
// none while no handler listens (s.current is empty), as an informer read
// through its Lister alone, so that a relist of many objects builds none
// and the processing goroutine keeps no buffer of them. The caller holds
// procMu.
func (s *SharedIndexInformer[T]) applyEvent(ctx context.Context, e *event[T], initial bool, notes []notification[T]) []notification[T] {
	switch e.kind {
	case evAdd, evUpdate:
		return s.upsert(ctx, e.key, e.obj, initial, notes)
	case evDelete:
		s.indexer.deleteKey(e.key)
		if len(s.current) == 0 {
			return notes
		}
		return append(notes, notification[T]{kind: nDelete, key: e.key, old: e.obj})
	case evReplace:
		return s.replace(ctx, e.more.list, e.more.keys, e.more.enc, initial, notes)
	case evResync:
		return s.resync(notes)
	}
	return notes // evBookmark: the Reflector keeps the resource version
}

// upsert stores obj and appends an add, or an update from the state it
// replaced. An update that keeps the resource version is a resync
// notification, for handlers whose resync is due only. A key of "" is
// obj's, which the indexer finds (see Store.keyLocked).
func (s *SharedIndexInformer[T]) upsert(ctx context.Context, key string, obj T, initial bool, notes []notification[T]) []notification[T] {
	rvh := versionHash(obj.GetResourceVersion())
	stored, old, existed, err := s.indexer.upsertVersion(key, obj, rvh, true)
	key = stored.key
	if err != nil {
		if errors.Is(err, errNotCached) {
			klog.FromContext(ctx).Error(err, "Left an object out of the cache", "key", key)
			return notes
		}
		reportIndexError(ctx, key, err)
	}
	if len(s.current) == 0 { // no handler listens: nothing to tell
		if existed && old.rec != nil {
			s.indexer.forget(old)
		}
		return notes
	}
	if !existed {
		return append(notes, notification[T]{kind: nAdd, key: key, new: obj, initial: initial})
	}
	prev := old.obj
	if old.rec != nil { // a compact store: decode the object replaced for the handlers only
		var ok bool
		prev, ok = s.indexer.objectBeside(old, stored, obj)
		s.indexer.forget(old)
		if !ok {
			return append(notes, notification[T]{kind: nAdd, key: key, new: obj, initial: initial})
		}
	}
	// Versions whose hashes differ differ: prev is then not read here.
	sync := (old.rvh == 0 || old.rvh == rvh) && sameVersion(prev, obj)
	return append(notes, notification[T]{kind: nUpdate, key: key, old: prev, new: obj, sync: sync})
}

func sameVersion[T Object](a, b T) bool { return a.GetResourceVersion() == b.GetResourceVersion() }

// reportIndexError logs that an index function failed: the object is
// cached, without the values of that index.
func reportIndexError(ctx context.Context, key string, err error) {
	klog.FromContext(ctx).Error(err, "Cached an object without the values of a failing index", "key", key)
}

// replace applies a relist at once: objects missing from list are deleted,
// with their final state unknown, and list becomes the cache. The
// notifications are the deletions, then an add or update per object of
// list, in list order. From a compact source, the list is enc, whose
// records a compact store keeps as they are; their objects are decoded
// for the handlers only.
func (s *SharedIndexInformer[T]) replace(ctx context.Context, list []T, keys []string, enc *encodedList[T], initial bool, notes []notification[T]) []notification[T] {
	if len(s.current) > 0 {
		notes = s.replaceNotes(list, keys, enc, initial, notes)
	}
	var err error
	if enc != nil {
		err = s.indexer.replaceEncoded(enc, true)
	} else {
		err = s.indexer.replace(list, keys, true)
	}
	if err != nil {
		reportIndexError(ctx, "", err)
	}
	return notes
}

// replaceNotes appends the notifications of replace.
func (s *SharedIndexInformer[T]) replaceNotes(list []T, keys []string, enc *encodedList[T], initial bool, notes []notification[T]) []notification[T] {
	if enc != nil {
		keys = make([]string, len(enc.items))
		for i := range enc.items {
			keys[i] = enc.items[i].key
		}
	}
	cached := s.indexer.Len() > 0
	notes = slices.Grow(notes, len(keys))
	if cached {
		listed := make(map[string]struct{}, len(keys))
		for _, key := range keys {
			listed[key] = struct{}{}
		}
		for key, obj := range s.indexer.All() {
			if _, ok := listed[key]; !ok {
				notes = append(notes, notification[T]{kind: nDelete, key: key, old: obj, unknown: true})
			}
		}
	}
	for i, key := range keys {
		var obj T
		switch {
		case enc == nil:
			obj = list[i]
		case !cached && !enc.items[i].decoded:
			// An add: its object is decoded when it is delivered, so
			// that a backlog holds the store's records, not objects.
			notes = append(notes, notification[T]{kind: nAdd, key: key, rec: enc.items[i].rec, initial: initial})
			continue
		default:
			o, err := enc.object(i)
			if err != nil {
				continue // as reads leave it out (see Store.materialize)
			}
			obj = o
		}
		n := notification[T]{kind: nAdd, key: key, new: obj, initial: initial}
		if cached {
			if old, ok := s.indexer.GetByKey(key); ok {
				n = notification[T]{kind: nUpdate, key: key, old: old, new: obj, sync: sameVersion(old, obj)}
			}
		}
		notes = append(notes, n)
	}
	return notes
}

// resync appends an OnUpdate(obj, obj) for every cached object, if a
// handler's resync is due.
func (s *SharedIndexInformer[T]) resync(notes []notification[T]) []notification[T] {
	due := false
	for _, l := range s.current {
		due = due || l.resyncDue.Load()
	}
	if !due {
		return notes
	}
	for key, obj := range s.indexer.All() {
		notes = append(notes, notification[T]{kind: nUpdate, key: key, old: obj, new: obj, sync: true})
	}
	return notes
}

// distributeLocked hands notes to every listener. The caller holds procMu.
func (s *SharedIndexInformer[T]) distributeLocked(notes []notification[T]) {
	if len(notes) == 0 {
		return
	}
	for _, l := range s.current {
		l.push(notes)
	}
}

// processDeltaFIFO is the goroutine that pops a DeltaFIFO, in QueueDeltaFIFO
// mode. Pop runs the processing with the DeltaFIFO locked, so that the cache,
// which is its KnownObjects, is updated before the next Replace or Resync
// looks at it; handlers still run on their own goroutines.
func (s *SharedIndexInformer[T]) processDeltaFIFO(ctx context.Context, q *DeltaFIFO[T]) {
	var notes []notification[T]
	// Metrics are told after Pop, which holds the DeltaFIFO's lock.
	var start time.Time
	var changes int
	for ctx.Err() == nil {
		changes = 0
		_, err := q.Pop(func(d Deltas[T], initial bool) error {
			if ctx.Err() != nil {
				return nil // stopping: dropped, like the rest of the queue
			}
			if s.opts.Metrics != nil {
				start, changes = s.clock.Now(), len(d)
			}
			// Every Delta of one Pop is about the same key.
			key, err := q.KeyOf(d)
			if err != nil {
				klog.FromContext(ctx).Error(err, "Dropped changes whose key cannot be computed")
				return nil
			}
			s.procMu.Lock()
			defer s.procMu.Unlock()
			for _, delta := range d {
				notes = s.applyDelta(ctx, key, delta, initial, notes)
			}
			s.distributeLocked(notes)
			clear(notes)
			notes = notes[:0]
			return nil
		})
		if errors.Is(err, ErrClosed) {
			return
		}
		if changes > 0 {
			s.opts.Metrics.ObserveProcessing(changes, s.clock.Since(start))
		}
		if q.HasSynced() {
			s.markSynced()
		}
	}
}

// applyDelta applies one Delta about key to the cache and appends the
// notification it makes. The caller holds procMu.
func (s *SharedIndexInformer[T]) applyDelta(ctx context.Context, key string, d Delta[T], initial bool, notes []notification[T]) []notification[T] {
	switch {
	case d.Tombstone != nil:
		s.indexer.deleteKey(key)
		return append(notes, notification[T]{kind: nDelete, key: key, old: d.Tombstone.Obj, unknown: true})
	case d.Type == Deleted:
		s.indexer.deleteKey(key)
		return append(notes, notification[T]{kind: nDelete, key: key, old: d.Object})
	}
	return s.upsert(ctx, key, d.Object, initial, notes)
}

// deltaFIFOStore is the DeltaFIFO of QueueDeltaFIFO mode as the Reflector
// writes into it. A DeltaFIFO can sync without anything to pop (an empty
// first list), which processDeltaFIFO, waiting in Pop, would not notice:
// each write checks, until the informer has synced.
type deltaFIFOStore[T Object] struct {
	*DeltaFIFO[T]
	s *SharedIndexInformer[T]
}

func (d deltaFIFOStore[T]) Add(obj T) error    { return d.synced(d.DeltaFIFO.Add(obj)) }
func (d deltaFIFOStore[T]) Update(obj T) error { return d.synced(d.DeltaFIFO.Update(obj)) }
func (d deltaFIFOStore[T]) Delete(obj T) error { return d.synced(d.DeltaFIFO.Delete(obj)) }
func (d deltaFIFOStore[T]) Replace(list []T, rv string) error {
	return d.synced(d.DeltaFIFO.Replace(list, rv))
}

func (d deltaFIFOStore[T]) synced(err error) error {
	if !d.s.HasSynced() && d.HasSynced() {
		d.s.markSynced()
	}
	return err
}
