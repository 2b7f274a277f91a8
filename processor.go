package informer

import (
	"cmp"
	"context"
	"github.com/typedkube/informer/wire"
	"sync"
	"sync/atomic"
	"time"

	"github.com/typedkube/informer/internal/deque"
)

// notifyKind is the handler method a notification calls.
type notifyKind uint8

const (
	nAdd notifyKind = iota + 1
	nUpdate
	nDelete
)

// notification is one call to make on a handler.
type notification[T Object] struct {
	kind    notifyKind
	sync    bool // an update with an unchanged resource version: only for handlers due a resync
	initial bool // nAdd: part of the initial list
	unknown bool // nDelete: the final state is unknown
	key     string
	old     T // nUpdate: the previous state; nDelete: the deleted object
	new     T // nAdd, nUpdate
	// rec, for an nAdd of a compact store's initial list or of a
	// handler's replay, is the record new is decoded from when the
	// notification is delivered, new being zero: a backlog of
	// notifications then holds records the store holds anyway, not an
	// object decoded for each.
	rec *wire.Record
}

// HandlerOptions configures one event handler.
type HandlerOptions struct {
	// Name identifies the handler in logs and panic reports. Default: its
	// Go type.
	Name string
	// ResyncPeriod, if positive, makes the informer call OnUpdate(obj, obj)
	// for every cached object every ResyncPeriod (at least one second, and
	// no shorter than the informer's resync check period once it runs).
	// Zero uses the informer's DefaultResyncPeriod; negative disables
	// resync for this handler. An informer made with a DefaultResyncPeriod
	// of zero never resyncs: AddEventHandler then refuses a positive
	// ResyncPeriod with ErrResyncUnsupported, where client-go registers
	// the handler, ignores its period and logs a warning.
	ResyncPeriod time.Duration
	// Coalesce bounds the memory a slow handler can make the informer hold:
	// instead of queueing every notification, it keeps at most the pending
	// state of each object (latest state wins; OnUpdate gets the oldest
	// state the handler has not seen as its old object; an add followed by
	// a delete cancels out). Notifications for different objects may then
	// be delivered in a different order than they happened. Default false:
	// every notification is delivered, in order, and a stalled handler's
	// buffer grows without bound (see Registration.Pending).
	Coalesce bool
}

// Registration is a handler added to an informer.
type Registration[T Object] struct {
	l   *listener[T]
	inf *SharedIndexInformer[T] // the informer it was made by
}

// HasSynced reports whether the informer has synced and this handler has
// returned from OnAdd for every object of the initial list it was given.
func (r *Registration[T]) HasSynced() bool {
	select {
	case <-r.l.synced:
		return true
	default:
		return false
	}
}

// Synced returns a channel closed once HasSynced is true.
func (r *Registration[T]) Synced() <-chan struct{} { return r.l.synced }

// Pending returns the number of notifications waiting for the handler.
func (r *Registration[T]) Pending() int { return r.l.pendingCount() }

// Panics returns the number of calls of the handler that panicked.
func (r *Registration[T]) Panics() int64 { return r.l.panics.Load() }

// Done returns a channel closed once the handler will not be called again:
// it was removed, or the informer stopped, and its last call returned.
func (r *Registration[T]) Done() <-chan struct{} { return r.l.done }

// Name returns the handler's name.
func (r *Registration[T]) Name() string { return r.l.name }

// listener delivers notifications to one handler from its own goroutine.
type listener[T Object] struct {
	handler  ResourceEventHandler[T]
	name     string
	coalesce bool
	onPanic  func(ctx context.Context, handler string, recovered any)
	// decode decodes the record of a notification (see notification.rec)
	// stored under key; ok is false if it does not decode. Set for the
	// listeners of an informer with a compact store.
	decode func(key string, rec *wire.Record) (T, bool)

	// requestedResync is what the handler asked for; resync the period in
	// force; nextResync is guarded by the informer's resyncMu. resyncDue
	// tells whether updates that keep the resource version (resyncs, and
	// unchanged objects in a relist) go to this handler.
	requestedResync time.Duration
	resync          time.Duration
	nextResync      time.Time
	resyncDue       atomic.Bool

	mu       sync.Mutex // guards the fields below
	pending  deque.Deque[notification[T]]
	spare    deque.Deque[notification[T]] // the batch being delivered; only run touches it outside mu
	merged   *coalescer[T]                // non-nil in Coalesce mode, instead of pending
	replay   []entry[T]                   // cache contents for a handler added while running; records in a compact store
	stopping bool                         // no more notifications are accepted
	drain    bool                         // deliver what is pending before stopping

	wake chan struct{} // capacity 1: something is pending, or stop was asked
	done chan struct{} // closed when the goroutine has exited

	// depth counts the notifications queued for the handler, net of those
	// merged away, and handled those it has been called with: pending is
	// the difference. Each has one writer, push (or stop, under mu) and
	// run, so that the two goroutines do not both write one cache line for
	// every notification; handled is on a line of its own.
	depth  atomic.Int64
	panics atomic.Int64
	// Lag: when (in nanoseconds since base, plus one) the oldest
	// notification of pending, and of the batch being delivered, was
	// queued; 0 when there is none. Written under mu, and by run.
	base         time.Time
	pendingSince atomic.Int64
	batchSince   atomic.Int64
	// halted is set by stop without drain: run checks it before every
	// call, so that at most the call in progress completes.
	halted atomic.Bool

	// Sync tracking: initialPending counts initial-list adds queued but
	// not yet handled; synced is closed once the informer has synced and
	// initialPending is zero.
	initialPending atomic.Int64
	informerSynced atomic.Bool
	synced         chan struct{}
	syncedOnce     sync.Once
	_              [64]byte     // keeps handled off the cache line of depth
	handled        atomic.Int64 // written by run alone (and by call in tests)
}

func newListener[T Object](h ResourceEventHandler[T], opts HandlerOptions, onPanic func(context.Context, string, any)) *listener[T] {
	l := &listener[T]{
		handler:  h,
		name:     opts.Name,
		coalesce: opts.Coalesce,
		onPanic:  onPanic,
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		synced:   make(chan struct{}),
		base:     time.Now(),
	}
	if l.name == "" {
		l.name = handlerName(h)
	}
	if opts.Coalesce {
		l.merged = newCoalescer[T]()
	}
	// Like client-go, a handler counts as due until the first resync check
	// says otherwise: without resync periods, a relist tells every handler
	// about the objects it did not change.
	l.resyncDue.Store(true)
	return l
}

// push queues notifications for the handler. It never blocks on the
// handler. Notifications marked sync are kept only when a resync is due.
func (l *listener[T]) push(ns []notification[T]) {
	due := l.resyncDue.Load()
	l.mu.Lock()
	if l.stopping {
		l.mu.Unlock()
		return
	}
	added := 0
	for i := range ns {
		n := &ns[i]
		if n.sync && !due {
			continue
		}
		if n.kind == nAdd && n.initial {
			l.initialPending.Add(1)
		}
		if l.merged != nil {
			added += l.merged.add(n, l)
		} else {
			l.pending.PushBack(*n)
			added++
		}
	}
	if added != 0 && l.pendingSince.Load() == 0 {
		l.pendingSince.Store(int64(time.Since(l.base)) + 1)
	}
	if added != 0 {
		// Counted before the handler's goroutine can take them (take holds
		// mu), and never after stop has cleared the count.
		l.depth.Add(int64(added))
	}
	l.mu.Unlock()
	if added != 0 {
		l.kick()
	}
}

// pendingCount is how many notifications wait or are being handled. The count
// can dip below zero for an instant when stop clears it under a call in
// progress; it reads as 0 then.
//
// handled is read first, and only grows: the count is never below what
// is pending when depth is read (a notification handled between the two
// reads still counts), so it reads 0 only when nothing was pending.
func (l *listener[T]) pendingCount() int {
	h := l.handled.Load()
	return max(int(l.depth.Load()-h), 0)
}

// lag returns how long the oldest notification not yet delivered has
// waited, at now; 0 if none.
func (l *listener[T]) lag(now time.Time) time.Duration {
	since := l.batchSince.Load()
	if since == 0 {
		since = l.pendingSince.Load()
	}
	if since == 0 || l.pendingCount() == 0 {
		return 0
	}
	return max(now.Sub(l.base)-time.Duration(since-1), 0)
}

func (l *listener[T]) kick() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// stop makes the handler receive nothing more. With drain, notifications
// already pending are delivered first.
func (l *listener[T]) stop(drain bool) {
	l.mu.Lock()
	l.stopping, l.drain = true, drain
	if !drain {
		l.halted.Store(true)
		l.dropLocked()
	}
	l.mu.Unlock()
	l.kick()
}

// dropLocked forgets what is pending and gives its memory back. The batch
// being delivered belongs to run, which stops at its next call. The caller
// holds mu.
func (l *listener[T]) dropLocked() {
	l.pending = deque.Deque[notification[T]]{}
	l.replay = nil
	if l.merged != nil {
		l.merged = newCoalescer[T]()
	}
	l.depth.Store(l.handled.Load()) // nothing pending; the call in flight may yet count
}

// run calls the handler until stop; it replays the cache contents first if
// the handler was added while the informer ran.
func (l *listener[T]) run(ctx context.Context) {
	defer close(l.done)
	defer func() { l.handled.Store(l.depth.Load()) }()
	// Run's context ending stops the handler, even before Run, which may
	// wait for the informer's lock, gets to stop it.
	done := ctx.Done()
	for {
		select {
		case <-l.wake:
		case <-done:
			return
		}
		for {
			batch, stopping, drain := l.take()
			if stopping && !drain {
				return
			}
			if batch == nil {
				if stopping {
					return
				}
				break
			}
			for i := range batch.Len() {
				if l.halted.Load() {
					return // removed or stopped: drop the rest of the batch
				}
				select {
				case <-done:
					return
				default:
				}
				l.call(ctx, batch.At(i))
			}
			l.delivered(batch)
		}
	}
}

// delivered empties batch, the one take returned, once it has been
// delivered. Only run's goroutine touches it outside take. Its chunks are
// kept for the next batch while a burst lasts (they would be allocated
// again for every batch); take gives them back, down to the deque's
// keepCap, once nothing is pending.
func (l *listener[T]) delivered(batch *deque.Deque[notification[T]]) {
	batch.ClearKeep()
	l.batchSince.Store(0)
}

// take returns the pending notifications, swapping buffers so that push can
// go on while the handler runs; nil when nothing is pending.
func (l *listener[T]) take() (batch *deque.Deque[notification[T]], stopping, drain bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.replay != nil { // the cache contents come before what followed
		for _, e := range l.replay {
			l.spare.PushBack(notification[T]{kind: nAdd, initial: true, key: e.key, new: e.obj, rec: e.rec})
		}
		l.replay = nil
	}
	switch {
	case l.merged != nil:
		l.merged.drainTo(&l.spare)
	case l.spare.Len() == 0:
		// The goroutine cleared spare after the last batch: swap buffers.
		l.pending, l.spare = l.spare, l.pending
	default: // spare holds the replay
		for i := range l.pending.Len() {
			l.spare.PushBack(l.pending.At(i))
		}
		l.pending.Clear()
	}
	if l.spare.Len() == 0 {
		// Nothing waits (what did was merged away): the next push starts
		// the wait afresh. The handler is idle: what a burst grew the
		// buffers to is given back.
		l.spare.Shrink()
		l.pending.Shrink()
		l.pendingSince.Store(0)
		return nil, l.stopping, l.drain
	}
	if l.batchSince.Load() == 0 {
		l.batchSince.Store(cmp.Or(l.pendingSince.Load(), int64(time.Since(l.base))+1))
	}
	l.pendingSince.Store(0)
	return &l.spare, l.stopping, l.drain
}

// call runs one handler method, containing a panic. The notification
// stops counting as pending before the handler can count as synced, so
// that a reader who waited for the sync never sees its last initial add
// pending.
func (l *listener[T]) call(ctx context.Context, n notification[T]) {
	defer func() {
		l.handled.Add(1)
		if n.kind == nAdd && n.initial {
			l.initialDone()
		}
		if r := recover(); r != nil {
			l.panics.Add(1)
			l.onPanic(ctx, l.name, r)
		}
	}()
	if n.rec != nil {
		obj, ok := l.decode(n.key, n.rec)
		if !ok {
			return // as reads leave it out (see Store.materialize); logged
		}
		n.new = obj
	}
	switch n.kind {
	case nAdd:
		l.handler.OnAdd(n.new, n.initial)
	case nUpdate:
		l.handler.OnUpdate(n.old, n.new)
	case nDelete:
		l.handler.OnDelete(DeletedObject[T]{Obj: n.old, Key: n.key, FinalStateUnknown: n.unknown})
	}
}

// initialDone records that an initial-list add was handled or dropped.
func (l *listener[T]) initialDone() {
	if l.initialPending.Add(-1) == 0 && l.informerSynced.Load() {
		l.markSynced()
	}
}

// informerHasSynced records that the informer has synced.
func (l *listener[T]) informerHasSynced() {
	l.informerSynced.Store(true)
	if l.initialPending.Load() == 0 {
		l.markSynced()
	}
}

func (l *listener[T]) markSynced() { l.syncedOnce.Do(func() { close(l.synced) }) }
