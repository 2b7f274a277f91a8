package informer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/typedkube/informer/wire"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// QueueMode chooses the queue between an informer's Reflector and its cache.
type QueueMode uint8

const (
	// QueueInOrder keeps every change in the order the watch delivered it,
	// across objects, and applies a relist to the cache at once: handlers
	// see the deletions a relist implies, then its adds and updates.
	// client-go's default since 1.36 (RealFIFO with atomic events). The
	// default.
	QueueInOrder QueueMode = iota
	// QueueDeltaFIFO merges the changes to each object in a DeltaFIFO,
	// client-go's default before 1.33.
	QueueDeltaFIFO
)

// Errors of the informer's life cycle.
var (
	// ErrStarted is returned by Run on an informer, or a Reflector, that
	// has already been started (ErrAlreadyRunning is the same error).
	ErrStarted = errors.New("informer: already started")
	// ErrStopped reports an informer that has stopped.
	ErrStopped = errors.New("informer: stopped")
	// ErrResyncUnsupported reports a handler asking for a resync period
	// from an informer made without one (see HandlerOptions.ResyncPeriod).
	ErrResyncUnsupported = errors.New("informer: resync not supported by this informer")
	// ErrRunByFactory is returned by Run on an informer that a Factory
	// made: Factory.Start runs it. The error wraps ErrStarted too.
	ErrRunByFactory = errors.New("informer: run by the factory that made it")
)

// minResyncPeriod is the shortest resync period a handler can have.
const minResyncPeriod = time.Second

// maxBatch is the most events the informer applies and hands to handlers
// at once.
const maxBatch = 1024

// SharedIndexInformerOptions configures a SharedIndexInformer. The zero
// value is usable: every field documents its default.
type SharedIndexInformerOptions[T Object] struct {
	// Name identifies the informer in logs. Default: the Go type of T.
	Name string
	// Resource names what T is, such as {Resource: "pods"}, for the
	// NotFound errors of the Lister. Default: T's Go type name.
	Resource schema.GroupResource
	// Indexers are the cache's indexes. NamespaceIndex is always added if
	// missing, for the Lister.
	Indexers Indexers[T]
	// NoLabelIndex leaves out the cache's label index (see
	// Indexer.AddLabelIndex), with which the Lister answers label selectors
	// from the objects that have the labels they require instead of testing
	// every object. Default false: the index is kept, at about 19 bytes
	// per object per label and 1.1x to 1.7x the time of each write to the
	// cache (docs/label-index.md). A factory's
	// informers leave it out with InformerOptions.NoLabelIndex.
	NoLabelIndex bool
	// DefaultResyncPeriod is the resync period of handlers added without
	// one. Default 0: no resync.
	DefaultResyncPeriod time.Duration
	// Transform rewrites each object before it is cached, for example to
	// drop fields the program does not need. It runs holding no lock.
	// Default: none. See also SetTransform.
	Transform TransformFunc[T]
	// Queue chooses the queue. Default QueueInOrder.
	Queue QueueMode
	// Reflector configures list and watch (paging, watch-list, backoff,
	// timeouts, clock). Leave its ResyncPeriod and ShouldResync zero: the
	// informer sets them from its handlers' resync periods. Its
	// WatchErrorHandler is also settable with SetWatchErrorHandler.
	Reflector ReflectorOptions
	// HandlerPanic is told about a handler call that panicked; the handler
	// keeps receiving later notifications. Default: log the panic and its
	// stack through klog.FromContext.
	HandlerPanic func(ctx context.Context, handler string, recovered any)
	// Metrics is told how long each list, watch and batch of processing
	// took (see Metrics). Default nil: nothing is told, and no clock is
	// read for it. Counters and gauges are in Stats.
	Metrics Metrics
	// Compact keeps each cached object in its encoded form instead of as
	// a T: protobuf for the built-in types (the bytes the API server sent,
	// when the informer's source is a Factory's), JSON for others, with
	// the runs of bytes objects have in common (labels, container specs,
	// managedFields) kept once (see wire.Record), and a cache of the last
	// wire.DecodedCacheSize objects decoded in front. The cache holds a
	// Pod in about a quarter of the heap client-go's does
	// (docs/compact-store.md). Keys, indexes, the label index, listers,
	// handlers, tombstones and read-your-writes work as without it; index
	// functions run once, when an object is written, on the object (the
	// namespace and label indexes read the object's key and bytes instead,
	// when it arrives encoded). Every read that returns an object the cache does
	// not hold decodes it, a few microseconds for a Pod: do not use it for
	// a controller that lists every object on each reconcile. Objects
	// handed out are shared, as always: never modify them. T must be a
	// pointer to a struct that package wire decodes (any API type,
	// *unstructured.Unstructured, not a projection). Default false.
	Compact bool
	// codec is the compact store's codec, set by a Factory that shares it
	// with its source; nil makes one.
	codec recordCodec[T]
	// sizer tells the bytes of the cached objects, set by a Factory whose
	// decoder knows what they share; zero makes one that knows nothing of
	// sharing (see Stats.StoreBytes).
	sizer objectSizer[T]
	// objType is the Go type of the objects, set by a Factory (ForType's
	// and the As functions' are not T), for the compact store's codec; nil:
	// T.
	objType reflect.Type
}

// SharedIndexInformer keeps a typed, indexed cache of the objects a
// ListerWatcher lists and watches, and tells registered handlers about every
// change. Handlers run on their own goroutines, never under a lock of the
// informer: a slow handler delays only itself.
type SharedIndexInformer[T Object] struct {
	lw      ListerWatcher[T]
	opts    SharedIndexInformerOptions[T]
	indexer *Indexer[T]
	clock   clock.Clock

	// byFactory is set by the Factory that made the informer, before it
	// hands it out: Run refuses it, the factory runs it with run.
	byFactory bool

	mu                sync.Mutex // guards the fields below
	started, stopped  bool
	transform         TransformFunc[T]
	watchErrorHandler func(context.Context, error)
	reflector         *Reflector[T]
	checkPeriod       time.Duration // how often the reflector asks whether a handler's resync is due
	runCtx            context.Context
	handlers          sync.WaitGroup // the goroutines of the listeners
	isSynced          bool
	// listeners is replaced, never modified, so that the processing
	// goroutine can read it without mu.
	listeners []*listener[T]
	// runningListeners are the listeners whose goroutines Run started, removed
	// ones included: Run stops them all when it ends.
	runningListeners []*listener[T]

	// procMu is held while a batch of changes is applied to the cache and
	// handed to the listeners, so that a handler added while running gets a
	// snapshot of the cache and then exactly the changes that follow it.
	procMu  sync.Mutex
	current []*listener[T] // guarded by procMu: the listeners to notify

	applied appliedVersion // what the cache has applied, for WaitForResourceVersion

	resyncMu sync.Mutex // guards the resync schedules of the listeners

	synced chan struct{} // closed once the initial list is in the cache

	failure *syncFailure // what keeps the informer from syncing

	counters counters   // for Stats
	queueLen func() int // the length of the running queue; guarded by mu, nil before Run
	// queueApplied is the running in-order queue's waitApplied; guarded by
	// mu, nil before Run and in QueueDeltaFIFO mode.
	queueApplied func(ctx context.Context) error
}

// NewSharedIndexInformer returns an informer for the objects lw lists and
// watches. It returns an error for invalid options.
func NewSharedIndexInformer[T Object](lw ListerWatcher[T], opts SharedIndexInformerOptions[T]) (*SharedIndexInformer[T], error) {
	if lw == nil {
		return nil, errors.New("informer: nil ListerWatcher")
	}
	if opts.Queue > QueueDeltaFIFO {
		return nil, fmt.Errorf("informer: unknown QueueMode %d", opts.Queue)
	}
	if opts.DefaultResyncPeriod < 0 {
		return nil, fmt.Errorf("informer: negative DefaultResyncPeriod %v", opts.DefaultResyncPeriod)
	}
	if opts.Reflector.ResyncPeriod != 0 || opts.Reflector.ShouldResync != nil {
		return nil, errors.New("informer: set resync periods on the informer and its handlers, not on Reflector")
	}
	// The Reflector's options are checked now, with the rules of
	// NewReflector, rather than when Run fails.
	if _, err := NewReflector(lw, ReflectorStore[T](discardStore[T]{}), opts.Reflector); err != nil {
		return nil, fmt.Errorf("informer: Reflector options: %w", err)
	}
	var zero T
	if opts.Name == "" {
		opts.Name = fmt.Sprintf("%T", zero)
	}
	if opts.Resource.Empty() {
		opts.Resource = schema.GroupResource{Resource: fmt.Sprintf("%T", zero)}
	}
	if opts.HandlerPanic == nil {
		opts.HandlerPanic = logHandlerPanic
	}
	indexers := Indexers[T]{NamespaceIndex: MetaNamespaceIndexFunc[T]}
	for name, f := range opts.Indexers {
		if f == nil {
			return nil, fmt.Errorf("informer: nil IndexFunc for index %q", name)
		}
		indexers[name] = f
	}
	indexer := NewIndexer(MetaNamespaceKeyFunc[T], indexers)
	if opts.sizer.size == nil {
		opts.sizer = plainSizer[T]()
	}
	indexer.setSizer(opts.sizer)
	if opts.Compact {
		codec := opts.codec
		if codec == nil {
			typ := opts.objType
			if typ == nil {
				typ = reflect.TypeFor[T]()
			}
			dec, err := wire.NewDecoderOf[T](typ, wire.Options{})
			if err != nil {
				return nil, fmt.Errorf("informer: a compact store of %v: %w", typ, err)
			}
			codec = wire.NewCompact(dec, wire.DecodedCacheSize)
			indexer.setSizer(decoderSizer(dec))
		}
		_, ownNamespaceIndex := opts.Indexers[NamespaceIndex]
		indexer.setCompact(codec, !ownNamespaceIndex)
	}
	if !opts.NoLabelIndex {
		_ = indexer.addLabelIndex(MetaLabelsFunc[T], true) // cannot fail on a new Indexer
	}
	indexer.versionOf = T.GetResourceVersion
	indexer.appendKey = appendObjectKey[T]
	s := &SharedIndexInformer[T]{
		lw:                lw,
		opts:              opts,
		indexer:           indexer,
		clock:             opts.Reflector.Clock,
		transform:         opts.Transform,
		watchErrorHandler: opts.Reflector.WatchErrorHandler,
		checkPeriod:       opts.DefaultResyncPeriod,
		synced:            make(chan struct{}),
		failure:           newSyncFailure(),
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	return s, nil
}

func logHandlerPanic(ctx context.Context, handler string, recovered any) {
	klog.FromContext(ctx).Error(fmt.Errorf("panic: %v", recovered), "Event handler panicked",
		"handler", handler, "stack", string(debug.Stack()))
}

// SetTransform sets the transform (see SharedIndexInformerOptions.Transform).
// It fails once the informer has started. On an informer of a Factory, it
// also makes its objects share nothing a transform could edit in place
// (see DecodeWire).
func (s *SharedIndexInformer[T]) SetTransform(f TransformFunc[T]) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return ErrStarted
	}
	s.transform = f
	return nil
}

// hasTransform reports whether the informer has a transform.
func (s *SharedIndexInformer[T]) hasTransform() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.transform != nil
}

// SetWatchErrorHandler sets the function told about list and watch errors
// (see ReflectorOptions.WatchErrorHandler). It fails once the informer has
// started.
func (s *SharedIndexInformer[T]) SetWatchErrorHandler(f func(ctx context.Context, err error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return ErrStarted
	}
	s.watchErrorHandler = f
	return nil
}

// AddEventHandler registers h, before or after the informer started. A
// handler added while the informer runs first gets OnAdd(obj, true) for
// every cached object, then the changes that follow, without holding up
// the other handlers. It fails once the informer has stopped.
func (s *SharedIndexInformer[T]) AddEventHandler(h ResourceEventHandler[T], opts ...HandlerOptions) (*Registration[T], error) {
	if h == nil {
		return nil, errors.New("informer: nil handler")
	}
	var o HandlerOptions
	if len(opts) > 1 {
		return nil, errors.New("informer: more than one HandlerOptions")
	} else if len(opts) == 1 {
		o = opts[0]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, ErrStopped
	}
	if s.opts.DefaultResyncPeriod == 0 && o.ResyncPeriod > 0 {
		return nil, fmt.Errorf("%w: a handler asks for a resync every %v from an informer made without DefaultResyncPeriod",
			ErrResyncUnsupported, o.ResyncPeriod)
	}
	l := newListener(h, o, s.opts.HandlerPanic)
	if s.indexer.compact != nil {
		l.decode = s.indexer.decode
	}
	s.scheduleResync(l, o.ResyncPeriod)
	if !s.started {
		s.listeners = append(slices.Clip(s.listeners), l)
		return &Registration[T]{l: l, inf: s}, nil
	}
	s.procMu.Lock()
	replay := s.indexer.snapshotRecords()
	l.replay = replay
	l.initialPending.Store(int64(len(replay)))
	l.depth.Store(int64(len(replay)))
	s.listeners = append(slices.Clip(s.listeners), l)
	s.current = s.listeners
	s.procMu.Unlock()
	if s.isSynced {
		l.informerHasSynced()
	}
	s.startListenerLocked(l)
	l.kick()
	return &Registration[T]{l: l, inf: s}, nil
}

// scheduleResync sets the resync period of l as client-go does: at least a
// second, and, once the informer runs, no shorter than its check period; a
// handler added before it runs may shorten the check period instead. An
// informer whose DefaultResyncPeriod is zero has no check period and never
// resyncs (AddEventHandler refuses a handler's period then). The caller
// holds mu.
func (s *SharedIndexInformer[T]) scheduleResync(l *listener[T], requested time.Duration) {
	switch {
	case requested == 0:
		requested = s.opts.DefaultResyncPeriod
	case requested < 0:
		requested = 0
	}
	if requested > 0 {
		requested = max(requested, minResyncPeriod)
		if requested < s.checkPeriod {
			if s.started {
				requested = s.checkPeriod
			} else {
				s.checkPeriod = requested
			}
		}
	}
	s.resyncMu.Lock()
	defer s.resyncMu.Unlock()
	l.requestedResync = requested
	l.resync = effectiveResync(requested, s.checkPeriod)
	for _, other := range s.listeners {
		other.resync = effectiveResync(other.requestedResync, s.checkPeriod)
	}
	l.nextResync = s.clock.Now().Add(l.resync)
}

func effectiveResync(requested, check time.Duration) time.Duration {
	if requested == 0 || check == 0 {
		return 0
	}
	return max(requested, check)
}

// shouldResync marks the handlers whose resync is due and reports whether
// there is one. The Reflector asks it before each periodic resync.
func (s *SharedIndexInformer[T]) shouldResync() bool {
	s.mu.Lock()
	listeners := s.listeners
	s.mu.Unlock()
	s.resyncMu.Lock()
	defer s.resyncMu.Unlock()
	now := s.clock.Now()
	any := false
	for _, l := range listeners {
		due := l.resync > 0 && !now.Before(l.nextResync)
		l.resyncDue.Store(due)
		if due {
			any = true
			l.nextResync = now.Add(l.resync)
		}
	}
	return any
}

// RemoveEventHandler stops notifying the handler of r: notifications not
// yet delivered are dropped. It returns at once; r.Done() tells when the
// handler's last call has returned.
func (s *SharedIndexInformer[T]) RemoveEventHandler(r *Registration[T]) error {
	return s.remove(r, false)
}

// RemoveEventHandlerAndWait stops sending new notifications to the handler
// of r, lets it handle those already pending, and waits until it has, or
// until ctx is done.
func (s *SharedIndexInformer[T]) RemoveEventHandlerAndWait(ctx context.Context, r *Registration[T]) error {
	if err := s.remove(r, true); err != nil {
		return err
	}
	select {
	case <-r.l.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("informer: waiting for handler %s to drain: %w", r.l.name, context.Cause(ctx))
	}
}

func (s *SharedIndexInformer[T]) remove(r *Registration[T], drain bool) error {
	if r == nil {
		return errors.New("informer: nil Registration")
	}
	if r.inf != s {
		return nil // another informer's: nothing to remove, as in client-go
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.Index(s.listeners, r.l)
	if i < 0 {
		// Removed before, or the informer stopped. A drain still under way
		// (RemoveEventHandlerAndWait gave up waiting) ends now if asked.
		if !drain {
			r.l.stop(false)
		}
		return nil
	}
	s.listeners = slices.Delete(slices.Clone(s.listeners), i, i+1)
	s.procMu.Lock()
	s.current = s.listeners
	s.procMu.Unlock()
	r.l.stop(drain)
	if !s.started {
		close(r.l.done) // its goroutine never started
	}
	return nil
}

// Run lists and watches, keeps the cache and notifies the handlers until
// ctx is done, then returns once every goroutine it started has ended. A
// handler call in progress is waited for; notifications not yet delivered
// are dropped. Run returns ErrStarted if called twice, and otherwise nil
// unless the Reflector met an error it cannot recover from. On an
// informer a Factory made, it returns ErrRunByFactory at once, before or
// after Factory.Start.
func (s *SharedIndexInformer[T]) Run(ctx context.Context) error {
	if s.byFactory {
		return fmt.Errorf("%w: %s: Factory.Start runs it: %w", ErrRunByFactory, s.opts.Name, ErrStarted)
	}
	return s.run(ctx)
}

// run is Run, for the informer's Factory too.
func (s *SharedIndexInformer[T]) run(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return ErrStarted
	}
	s.started = true
	s.runCtx = ctx
	ropts := s.opts.Reflector
	ropts.Name = s.opts.Name
	ropts.ResyncPeriod = s.checkPeriod
	ropts.ShouldResync = s.shouldResync
	onError := s.watchErrorHandler
	if onError == nil {
		onError = DefaultWatchErrorHandler
	}
	ropts.WatchErrorHandler = func(ctx context.Context, err error) {
		s.counters.countError(err)
		s.failure.note(s.opts.Name, s.HasSynced(), err)
		onError(ctx, err)
	}
	ropts.Clock = s.clock
	var store ReflectorStore[T]
	var evq *eventQueue[T]
	var process func(context.Context)
	var closeQueue func()
	switch s.opts.Queue {
	case QueueDeltaFIFO:
		q := NewDeltaFIFO(DeltaFIFOOptions[T]{
			KeyFunction:           MetaNamespaceKeyFunc[T],
			KnownObjects:          s.indexer,
			EmitDeltaTypeReplaced: true,
			Transformer:           s.transform,
		})
		store = deltaFIFOStore[T]{q, s}
		process, closeQueue = func(ctx context.Context) { s.processDeltaFIFO(ctx, q) }, q.Close
		s.queueLen = q.Len
	default:
		q := newEventQueue(MetaNamespaceKeyFunc[T], s.transform)
		q.checkKey = checkMetaKey[T] // the indexer makes the keys (see Store.keyLocked)
		store, process, closeQueue = q, func(ctx context.Context) { s.processEvents(ctx, q) }, q.Close
		s.queueLen = q.Len
		s.queueApplied = q.waitApplied
		evq = q
	}
	r, err := NewReflector(ListerWatcher[T](countingListWatch[T]{s.lw, &s.counters}), store, ropts)
	if err != nil {
		// Every registration ends: no handler will be called.
		s.stopped = true
		s.applied.stop()
		for _, l := range s.listeners {
			l.stop(false)
			close(l.done)
		}
		s.listeners = nil
		s.mu.Unlock()
		return err
	}
	r.metrics = s.opts.Metrics
	r.streamFailed = func() { s.counters.listErrors.Add(1) }
	s.reflector = r
	s.procMu.Lock()
	s.current = s.listeners
	s.procMu.Unlock()
	for _, l := range s.listeners {
		s.startListenerLocked(l)
	}
	s.mu.Unlock()

	var core sync.WaitGroup
	procCtx, stopProcessing := context.WithCancel(ctx)
	defer stopProcessing()
	if evq != nil {
		evq.setDirect(s.directApplier(procCtx))
	}
	reflectorDone := make(chan error, 1)
	core.Go(func() { reflectorDone <- r.Run(ctx) })
	core.Go(func() { process(procCtx) })
	var runErr error
	reflectorEnded := false
	select {
	case <-ctx.Done():
	case runErr = <-reflectorDone:
		reflectorEnded = true
	}
	// Stop at once, whatever is queued: the processing goroutine applies
	// nothing more, and every handler gets at most the call it is in.
	stopProcessing()
	s.mu.Lock()
	s.stopped = true
	s.applied.stop()
	started := s.runningListeners
	s.listeners, s.runningListeners = nil, nil
	s.mu.Unlock()
	for _, l := range started {
		l.stop(false)
	}
	if !reflectorEnded {
		runErr = <-reflectorDone
	}
	closeQueue() // wakes the processing goroutine if it waits for events
	core.Wait()
	s.handlers.Wait()
	return runErr
}

// startListenerLocked runs l's goroutine. Run stops every listener it
// started, removed ones still draining included. The caller holds mu.
func (s *SharedIndexInformer[T]) startListenerLocked(l *listener[T]) {
	s.runningListeners = append(s.runningListeners, l)
	s.handlers.Go(func() {
		l.run(s.runCtx)
		// Ended (removed, or stopped): Run need not stop it, and it must
		// not be kept, or handlers added and removed would pile up.
		s.mu.Lock()
		s.runningListeners = slices.DeleteFunc(s.runningListeners, func(x *listener[T]) bool { return x == l })
		s.mu.Unlock()
	})
}

// markSynced records that the initial list is in the cache and was handed
// to the handlers.
func (s *SharedIndexInformer[T]) markSynced() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isSynced {
		return
	}
	s.isSynced = true
	close(s.synced)
	for _, l := range s.listeners {
		l.informerHasSynced()
	}
}

// HasSynced reports whether the cache holds the initial list. A handler's
// Registration tells whether that handler has also processed it.
func (s *SharedIndexInformer[T]) HasSynced() bool {
	select {
	case <-s.synced:
		return true
	default:
		return false
	}
}

// Synced returns a channel closed once HasSynced is true.
func (s *SharedIndexInformer[T]) Synced() <-chan struct{} { return s.synced }

// Name returns the informer's name.
func (s *SharedIndexInformer[T]) Name() string { return s.opts.Name }

// LastSyncResourceVersion returns the resource version the informer last
// listed or watched at; "" before it has.
func (s *SharedIndexInformer[T]) LastSyncResourceVersion() string {
	s.mu.Lock()
	r := s.reflector
	s.mu.Unlock()
	if r == nil {
		return ""
	}
	return r.LastSyncResourceVersion()
}

// GetIndexer returns the cache. Read it; never write to it: the informer
// owns its contents.
func (s *SharedIndexInformer[T]) GetIndexer() *Indexer[T] { return s.indexer }

// AddIndexers adds indexes to the cache, also while the informer runs. It
// fails once the informer has stopped.
func (s *SharedIndexInformer[T]) AddIndexers(indexers Indexers[T]) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return ErrStopped
	}
	return s.indexer.AddIndexers(indexers)
}

// IsStopped reports whether Run has returned or is returning.
func (s *SharedIndexInformer[T]) IsStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// Lister returns a Lister reading the cache.
func (s *SharedIndexInformer[T]) Lister() Lister[T] {
	return Lister[T]{indexer: s.indexer, resource: s.opts.Resource, wait: s.WaitForResourceVersion}
}

// discardStore is a ReflectorStore that keeps nothing, for checking
// options.
type discardStore[T any] struct{}

func (discardStore[T]) Add(T) error               { return nil }
func (discardStore[T]) Update(T) error            { return nil }
func (discardStore[T]) Delete(T) error            { return nil }
func (discardStore[T]) Replace([]T, string) error { return nil }
