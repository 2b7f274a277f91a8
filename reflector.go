package informer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ReflectorStore is what a Reflector writes to. *Store[T], *Indexer[T],
// *FIFO[T] and *DeltaFIFO[T] satisfy it.
//
// A store may also have the methods
//
//	Resync() error                      // called by the resync timer
//	Bookmark(resourceVersion string)    // told every resource version the reflector reaches
//
// which the Reflector detects when it is made. Bookmark is called for every
// bookmark event and after every Replace, from the goroutine that runs the
// Reflector.
//
// Replace takes ownership of its list: the store may keep it.
type ReflectorStore[T any] interface {
	Add(obj T) error
	Update(obj T) error
	Delete(obj T) error
	Replace(list []T, resourceVersion string) error
}

// resyncer, bookmarker and replayAdder are the optional methods of a
// ReflectorStore.
type (
	resyncer   interface{ Resync() error }
	bookmarker interface{ Bookmark(resourceVersion string) }
	// replayAdder is a store that wants to know which adds are a watch's
	// replay (the informer's event queue): their resource versions, in no
	// particular order, must not count as the version its cache has
	// reached.
	replayAdder[T any] interface{ addReplayed(obj T) error }
	// burstNoter is a store that wants to know, before each watch event,
	// whether the next one has already arrived (the informer's event
	// queue: it applies an event at once only when none is waiting).
	burstNoter interface{ noteBurst(more bool) }
)

// WatchListMode chooses how a Reflector gets the state it starts watching
// from: a LIST, or a watch-list stream (a watch with SendInitialEvents that
// replays the current objects, ends them with a bookmark annotated
// k8s.io/initial-events-end, and then goes on as a normal watch).
type WatchListMode uint8

const (
	// WatchListAuto asks for a watch-list stream and falls back to a LIST
	// for that round when the stream fails for any reason, or never asks
	// when the ListerWatcher says it cannot serve one. The default.
	WatchListAuto WatchListMode = iota
	// WatchListOn always asks for a watch-list stream and retries it after
	// a backoff when it fails, never falling back to a LIST.
	WatchListOn
	// WatchListOff always lists.
	WatchListOff
)

// String returns the name of the mode: "Auto", "On" or "Off".
func (m WatchListMode) String() string {
	switch m {
	case WatchListAuto:
		return "Auto"
	case WatchListOn:
		return "On"
	case WatchListOff:
		return "Off"
	}
	return fmt.Sprintf("WatchListMode(%d)", uint8(m))
}

// Backoff is the delay before a Reflector lists again after a failure, and
// before it retries a watch refused with 429 Too Many Requests or a refused
// connection. Zero fields take their defaults, which are client-go's.
//
// The n-th delay in a row is min(Initial×Factorⁿ⁻¹, Max), plus a random
// extra of up to Jitter times that. The sequence starts again from Initial
// once ResetAfter has passed since the previous delay ended.
type Backoff struct {
	// Initial is the first delay. Default 800ms.
	Initial time.Duration
	// Max caps the delay before jitter. Default 30s.
	Max time.Duration
	// Factor multiplies the delay after each one. Default 2; at least 1.
	Factor float64
	// Jitter is the largest random extra, as a fraction of the delay.
	// Default 1, so the delay is in [d, 2d); negative for no jitter.
	Jitter float64
	// ResetAfter is the quiet time after which the delay starts again from
	// Initial. Default 2m.
	ResetAfter time.Duration
}

// ReflectorOptions configures a Reflector. The zero value is usable: every
// field documents its default.
type ReflectorOptions struct {
	// Name identifies the Reflector in logs. Default: the Go type of T,
	// such as "*v1.Pod".
	Name string

	// ResyncPeriod, if positive, makes the Reflector call the store's
	// Resync method every ResyncPeriod while it watches, when ShouldResync
	// allows it; the store must then have a Resync method. Default 0: never.
	ResyncPeriod time.Duration

	// ShouldResync is asked before each periodic resync. Default nil:
	// always resync. It runs on a goroutine of the Reflector, holding no
	// lock of it.
	ShouldResync func() bool

	// MinWatchTimeout is the shortest timeout asked of the server for a
	// watch; each watch asks for a random timeout in [MinWatchTimeout,
	// 2×MinWatchTimeout], to spread reconnections. Default 5m; at least
	// 1s. (client-go raises anything below 5m to 5m.)
	MinWatchTimeout time.Duration

	// Backoff spaces out relists and watch retries. See Backoff for the
	// defaults.
	Backoff Backoff

	// PageSize sets how a LIST is paged. Default 0: like client-go, pages
	// of 500 for the first list (resource version "0") and for consistent
	// lists (resource version ""), and one unpaged request for a list at a
	// specific resource version, which the server's watch cache can serve,
	// unless the first list came back in pages (no watch cache). A positive
	// value pages every list with that size; a negative one never pages.
	PageSize int64

	// WatchList chooses between LIST and watch-list streams. Default
	// WatchListAuto.
	WatchList WatchListMode

	// InitialEventsTimeout is how long a watch-list stream may go without
	// an event before its k8s.io/initial-events-end bookmark. A stream that
	// stays silent that long (checked every InitialEventsTimeout, so it is
	// given up on within twice that) comes from a source that ignores
	// sendInitialEvents: the Reflector reports ErrNoInitialEventsEnd and,
	// with WatchListAuto, lists and watches from then on; with WatchListOn
	// it retries after a backoff. Default 5s.
	InitialEventsTimeout time.Duration

	// InternalErrorRetry, if positive, makes a watch that ends with a 500
	// Internal Error start again from the last resource version, without
	// a relist, as long as such errors keep coming (at most a minute apart)
	// for no longer than InternalErrorRetry. Default 0: an internal error
	// relists like any other.
	InternalErrorRetry time.Duration

	// WatchErrorHandler is told every error the Reflector meets: each one
	// that ends a list or a watch (the Reflector then backs off and lists
	// or watches again), and each one it steps over, such as an event
	// whose object is not a T (*EventError). It is called from the
	// goroutine that runs the Reflector, holding no lock of it, one call
	// at a time; it should return quickly. Default
	// DefaultWatchErrorHandler.
	WatchErrorHandler func(ctx context.Context, err error)

	// Clock measures time for timeouts, backoff and resync. Default the
	// real clock. (Tests using testing/synctest need no fake clock.)
	Clock clock.Clock
}

// The defaults of ReflectorOptions and Backoff, which are client-go's.
const (
	defaultMinWatchTimeout   = 5 * time.Minute
	defaultPageSize          = 500
	defaultBackoffInitial    = 800 * time.Millisecond
	defaultBackoffMax        = 30 * time.Second
	defaultBackoffFactor     = 2.0
	defaultBackoffJitter     = 1.0
	defaultBackoffResetAfter = 2 * time.Minute
	// internalErrorResetAfter is how long after an internal error the next
	// one starts a new retry window.
	internalErrorResetAfter = time.Minute
	// veryShortWatch is how long a watch must last, when it brings no
	// event, not to be reported with ErrVeryShortWatch.
	veryShortWatch              = time.Second
	defaultInitialEventsTimeout = 5 * time.Second
)

// Reflector keeps a ReflectorStore in step with a ListerWatcher: it lists
// (or streams the initial state), replaces the store's contents, watches
// from the resource version it listed at, applies each event, and lists or
// watches again after failures, with the behaviour of client-go's
// cache.Reflector. See ReflectorOptions.
//
// A Reflector is made by NewReflector and runs while Run runs.
type Reflector[T Object] struct {
	lw         ListerWatcher[T]
	store      ReflectorStore[T]
	resyncer   resyncer       // store's Resync, or nil
	bookmarker bookmarker     // store's Bookmark, or nil
	replayer   replayAdder[T] // store's addReplayed, or nil
	burst      burstNoter     // store's noteBurst, or nil

	name                 string
	typeName             string
	resyncPeriod         time.Duration
	shouldResync         func() bool
	minWatch             time.Duration
	pageSize             int64
	watchList            WatchListMode // Auto already resolved to Off for a client that cannot
	initialEventsTimeout time.Duration
	internalErr          time.Duration
	onError              func(context.Context, error)
	clock                clock.Clock
	random               func() float64 // in [0, 1); tests replace it
	metrics              Metrics        // the informer's, or nil; set before Run
	// streamFailed, if set (by the informer, before Run), is told of a
	// watch-list stream that failed after its request was accepted: a
	// failed list its ListerWatcher did not see fail.
	streamFailed func()

	running atomic.Bool // Run is running

	// Used only by the goroutine that runs Run.
	backoff         backoff
	paginatedResult bool // the first list, at resource version "0", came in pages

	mu sync.Mutex // guards the fields below
	// lastSyncRV is the resource version of the last list, or of the last
	// event applied.
	lastSyncRV string
	// rvUnavailable is set when the server said lastSyncRV is too old or
	// too new to list or stream from: the next list uses "".
	rvUnavailable bool
}

// NewReflector returns a Reflector that keeps store in step with lw. It
// returns an error wrapping ErrInvalidOptions if lw or store is nil or an
// option is out of range, including a ResyncPeriod for a store without a
// Resync method and WatchListOn for a ListerWatcher that says it cannot
// serve watch-list streams.
func NewReflector[T Object](lw ListerWatcher[T], store ReflectorStore[T], opts ReflectorOptions) (*Reflector[T], error) {
	invalid := func(format string, args ...any) (*Reflector[T], error) {
		return nil, fmt.Errorf("%w: NewReflector: %s", ErrInvalidOptions, fmt.Sprintf(format, args...))
	}
	if lw == nil || isNil(lw) {
		return invalid("nil ListerWatcher")
	}
	if store == nil || isNil(store) {
		return invalid("nil store")
	}
	r := &Reflector[T]{
		lw:                   lw,
		store:                store,
		name:                 opts.Name,
		typeName:             fmt.Sprintf("%T", *new(T)),
		resyncPeriod:         opts.ResyncPeriod,
		shouldResync:         opts.ShouldResync,
		minWatch:             opts.MinWatchTimeout,
		pageSize:             opts.PageSize,
		watchList:            opts.WatchList,
		internalErr:          opts.InternalErrorRetry,
		initialEventsTimeout: opts.InitialEventsTimeout,
		onError:              opts.WatchErrorHandler,
		clock:                opts.Clock,
		random:               rand.Float64,
	}
	r.resyncer, _ = store.(resyncer)
	r.bookmarker, _ = store.(bookmarker)
	r.replayer, _ = store.(replayAdder[T])
	r.burst, _ = store.(burstNoter)
	if r.name == "" {
		r.name = r.typeName
	}
	if r.onError == nil {
		r.onError = DefaultWatchErrorHandler
	}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	switch {
	case r.resyncPeriod < 0:
		return invalid("negative ResyncPeriod %v", r.resyncPeriod)
	case r.resyncPeriod > 0 && r.resyncer == nil:
		return invalid("ResyncPeriod %v for a store (%T) without a Resync method", r.resyncPeriod, store)
	case r.minWatch != 0 && r.minWatch < time.Second:
		return invalid("MinWatchTimeout %v is under a second", r.minWatch)
	case r.internalErr < 0:
		return invalid("negative InternalErrorRetry %v", r.internalErr)
	case r.initialEventsTimeout < 0:
		return invalid("negative InitialEventsTimeout %v", r.initialEventsTimeout)
	case r.watchList > WatchListOff:
		return invalid("unknown WatchList mode %v", r.watchList)
	}
	if r.minWatch == 0 {
		r.minWatch = defaultMinWatchTimeout
	}
	if r.initialEventsTimeout == 0 {
		r.initialEventsTimeout = defaultInitialEventsTimeout
	}
	if watchListUnsupported(lw) {
		switch r.watchList {
		case WatchListOn:
			return invalid("WatchListOn for a ListerWatcher (%T) that cannot serve watch-list streams", lw)
		case WatchListAuto:
			r.watchList = WatchListOff
		}
	}
	b, err := opts.Backoff.withDefaults()
	if err != nil {
		return invalid("%v", err)
	}
	r.backoff = backoff{Backoff: b}
	return r, nil
}

// LastSyncResourceVersion returns the resource version the Reflector last
// synced to: that of its last list, or of the last event it applied. While
// events stream in it is updated each time the Reflector waits for the
// next one, not after every event. It may run ahead of a store that queues
// what it is given, and it is "" before the first list.
func (r *Reflector[T]) LastSyncResourceVersion() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastSyncRV
}

// Run lists, watches and applies what it sees to the store until ctx is
// cancelled. Failures are reported to the WatchErrorHandler and retried
// after a backoff, so Run returns nil once ctx is cancelled, and only after
// every goroutine it started has exited. It returns an error only when it
// cannot go on:
//   - ErrAlreadyRunning, if the Reflector is already running;
//   - an error wrapping ErrClosed, if a write to the store returned one:
//     the store's consumer has gone, so nothing more can reach it.
//
// The Reflector keeps its resource version across calls: Run may be called
// again after it returns, and lists from where the last run ended.
//
// Run logs through klog.FromContext(ctx), with the Reflector's name and type
// added, and passes that logger in the context of WatchErrorHandler calls.
func (r *Reflector[T]) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	defer r.running.Store(false)
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "reflector", r.name, "type", r.typeName)
	ctx = klog.NewContext(ctx, logger)
	logger.V(3).Info("Starting reflector", "resyncPeriod", r.resyncPeriod, "watchList", r.watchList)
	defer logger.V(3).Info("Stopping reflector")
	for {
		err := r.listAndWatch(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrClosed) {
			return err
		}
		if errors.Is(err, ErrRelist) {
			klog.FromContext(ctx).V(4).Info("Listing again, as the source asked", "err", err)
			continue
		}
		if err != nil {
			r.report(ctx, err)
		}
		if !r.sleep(ctx, r.backoff.next(r.clock.Now(), r.random)) {
			return nil
		}
	}
}

// listAndWatch is one round: get the initial state by watch-list or list,
// then watch until the watch fails. It returns the error that ended the
// round, nil if ctx ended it.
func (r *Reflector[T]) listAndWatch(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	var w watch.Interface
	streamed := false // the initial state came from a watch-list stream
	if r.watchList != WatchListOff {
		var err error
		w, err = r.streamInitialState(ctx)
		streamed = w != nil
		switch {
		case ctx.Err() != nil:
			if w != nil { // the stream completed as ctx ended: it must not outlive Run
				w.Stop()
			}
			return nil
		case err != nil && (r.watchList == WatchListOn || errors.Is(err, ErrClosed)):
			return err
		case err != nil:
			r.report(ctx, fmt.Errorf("%w: %w", ErrWatchListFallback, err))
			if errors.Is(err, ErrNoInitialEventsEnd) {
				r.watchList = WatchListOff // the source does not serve watch-list streams
			}
		}
	}
	if streamed && replaceAfterInitialEvents(w) {
		w.Stop()
		w = nil // watch from the version the stream reached
	}
	if !streamed {
		if err := r.list(ctx); err != nil || ctx.Err() != nil {
			return err
		}
	}
	logger.V(2).Info("Caches populated")
	return r.watchWithResync(ctx, w)
}

// watchWithResync watches, starting with w if it is not nil, while a
// goroutine resyncs the store every resyncPeriod.
func (r *Reflector[T]) watchWithResync(ctx context.Context, w watch.Interface) error {
	var resyncErr chan error
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer wg.Wait()
	defer cancel()
	if r.resyncPeriod > 0 {
		resyncErr = make(chan error, 1)
		wg.Go(func() { r.resyncEvery(ctx, resyncErr) })
	}
	return r.watch(ctx, w, resyncErr)
}

// resyncEvery calls the store's Resync every resyncPeriod, if
// ShouldResync allows, until ctx ends or Resync fails; it sends the failure
// on errc.
func (r *Reflector[T]) resyncEvery(ctx context.Context, errc chan<- error) {
	t := r.clock.NewTimer(r.resyncPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if r.shouldResync == nil || r.shouldResync() {
			klog.FromContext(ctx).V(4).Info("Forcing resync")
			if err := r.resyncer.Resync(); err != nil {
				errc <- fmt.Errorf("informer: resync: %w", err)
				return
			}
		}
		t.Reset(r.resyncPeriod)
	}
}

// report hands err to the WatchErrorHandler.
func (r *Reflector[T]) report(ctx context.Context, err error) {
	r.onError(ctx, err)
}

// sleep waits for d and reports whether ctx is still live.
func (r *Reflector[T]) sleep(ctx context.Context, d time.Duration) bool {
	t := r.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// watchTimeout returns a random watch timeout in [minWatch, 2×minWatch],
// in whole seconds, as the server takes it.
func (r *Reflector[T]) watchTimeout() *int64 {
	s := int64(r.minWatch.Seconds() * (1 + r.random()))
	return &s
}

// synced records that the store now reflects resourceVersion and tells the
// store, if it listens for bookmarks and there is a resource version.
func (r *Reflector[T]) synced(resourceVersion string) {
	r.setLastSyncRV(resourceVersion)
	if r.bookmarker != nil && resourceVersion != "" {
		r.bookmarker.Bookmark(resourceVersion)
	}
}

func (r *Reflector[T]) setLastSyncRV(rv string) {
	r.mu.Lock()
	r.lastSyncRV = rv
	r.mu.Unlock()
}

func (r *Reflector[T]) setRVUnavailable(unavailable bool) {
	r.mu.Lock()
	r.rvUnavailable = unavailable
	r.mu.Unlock()
}

// relistRV is the resource version to list at: "0" for the first list,
// so that the watch cache serves it, then the last synced one, or "" for
// the latest after the server said the last one is unavailable.
func (r *Reflector[T]) relistRV() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.rvUnavailable:
		return ""
	case r.lastSyncRV == "":
		return "0"
	}
	return r.lastSyncRV
}

// restreamRV is the resource version to ask a watch-list stream from: the
// last synced one, or "" (the latest, read consistently) at first and after
// the server said the last one is unavailable.
func (r *Reflector[T]) restreamRV() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rvUnavailable {
		return ""
	}
	return r.lastSyncRV
}

// backoff computes the delays of Backoff. Only the goroutine running Run
// uses it.
type backoff struct {
	Backoff
	base    time.Duration // the delay before jitter of the next call; 0 before the first
	lastEnd time.Time     // when the last delay returned ends
}

func (b Backoff) withDefaults() (Backoff, error) {
	if b.Initial < 0 || b.Max < 0 || b.ResetAfter < 0 || b.Factor < 0 {
		return b, fmt.Errorf("negative field in Backoff %+v", b)
	}
	if b.Initial == 0 {
		b.Initial = defaultBackoffInitial
	}
	if b.Max == 0 {
		b.Max = max(defaultBackoffMax, b.Initial)
	}
	if b.Factor == 0 {
		b.Factor = defaultBackoffFactor
	}
	if b.Jitter == 0 {
		b.Jitter = defaultBackoffJitter
	}
	if b.ResetAfter == 0 {
		b.ResetAfter = defaultBackoffResetAfter
	}
	switch {
	case b.Max < b.Initial:
		return b, fmt.Errorf("Backoff.Max %v is less than Backoff.Initial %v", b.Max, b.Initial)
	case b.Factor < 1:
		return b, fmt.Errorf("Backoff.Factor %v is less than 1", b.Factor)
	}
	return b, nil
}

// next returns the delay to wait from now. random returns a number in
// [0, 1).
func (b *backoff) next(now time.Time, random func() float64) time.Duration {
	if b.base == 0 || now.Sub(b.lastEnd) > b.ResetAfter {
		b.base = b.Initial
	}
	d := b.base
	b.base = min(time.Duration(float64(b.base)*b.Factor), b.Max)
	if b.Jitter > 0 {
		d += time.Duration(random() * b.Jitter * float64(d))
	}
	b.lastEnd = now.Add(d)
	return d
}
