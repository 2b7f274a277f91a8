package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/internal/seam"
)

// Releaser is implemented by a handler that wants to hear when an object
// leaves this replica's share because its bucket moved to another member (a
// rebalance), as opposed to OnDelete, which means the object was deleted.
// When buckets are given up, OnRelease is called once for each object of
// them the handler was told of (OnAdd or OnUpdate) and not of its deletion,
// after the last other call for them and before any other member gets them;
// notifications still queued for those buckets are dropped, and the objects
// leave the cache when the informer watches again, a moment later. The
// exception is a member past its fencing point (it could not renew its Lease
// in time, or its process was frozen): no other call starts then, but its
// OnRelease calls, made when its loop sees it, may run after another member,
// past the expiry, has taken the objects over (see Member). A member that
// leaves (its Run's context ended) gives every bucket up without OnRelease
// calls, as does an informer that has stopped; a handler removed gets none
// after RemoveEventHandler returns but the call in flight. While buckets
// move, the Member waits for handler calls in flight: a handler must not
// make informers on its own Member (For, NewInformer), which wait for the
// move.
type Releaser[T informer.Object] interface {
	OnRelease(obj T)
}

// Informer is a SharedIndexInformer that caches and delivers only the
// objects of the buckets its Member owns. Read its cache with Lister or
// Informer().GetIndexer(); register handlers with AddEventHandler (a
// handler registered on Informer() directly sees a rebalance as deletions
// of the objects given up and additions of those taken). Objects of
// buckets gained arrive as OnAdd(obj, true); objects of buckets lost are
// given to OnRelease, never to OnDelete; objects of buckets kept get no
// call: a move lists the buckets gained only, at the resource version the
// cache has reached, and watches on from there (it relists everything only
// when it cannot: a version the server no longer has, a QueueDeltaFIFO
// informer, which does not apply changes in order).
type Informer[T informer.Object] struct {
	m   *Member
	inf *informer.SharedIndexInformer[T]
	src *source[T]

	// calls is held shared by every handler call and exclusively while
	// buckets are given up, so that giving up waits for calls in flight.
	calls  sync.RWMutex
	active atomic.Pointer[Buckets] // buckets whose notifications are delivered

	mu       sync.Mutex
	handlers map[*informer.Registration[T]]*handler[T]
	gains    []gain // recent gains, newest last
}

// gain is a set of buckets taken, and the resource version of the first
// complete list that had them ("" until then): objects of those buckets at
// or below it are the gain's initial objects.
type gain struct {
	buckets Buckets
	gen     uint64
	rv      string
}

// maxGains bounds the gains remembered for telling initial adds.
const maxGains = 8

// NewInformer returns an informer over lw that caches the objects of m's
// buckets only; opts are as for informer.NewSharedIndexInformer. Run it
// with Run (its Member must run too).
func NewInformer[T informer.Object](m *Member, lw informer.ListerWatcher[T], opts informer.SharedIndexInformerOptions[T]) (*Informer[T], error) {
	if m == nil || lw == nil {
		return nil, fmt.Errorf("%w: nil Member or ListerWatcher", ErrInvalidOptions)
	}
	i := newInformer[T](m)
	i.src.inner = lw
	inf, err := informer.NewSharedIndexInformer[T](i.src, opts)
	if err != nil {
		return nil, err
	}
	i.inf = inf
	m.attach(i)
	return i, nil
}

func newInformer[T informer.Object](m *Member) *Informer[T] {
	i := &Informer[T]{m: m, handlers: make(map[*informer.Registration[T]]*handler[T])}
	i.src = newSource[T](m.opts.Key, m.opts.Buckets, m.ready)
	i.src.onList = i.listed
	i.src.outside = i.outside
	i.src.settled = m.poke
	i.src.why = m.notJoined
	empty := newBuckets(m.opts.Buckets)
	i.active.Store(&empty)
	return i
}

// For returns a sharded informer of T from the factory f: the factory's
// informer for T, made with opts and with its ListerWatcher narrowed to m's
// buckets. The factory runs it; m must run too. The factory then has this
// informer for T: use another factory for an unsharded informer of T.
func For[T informer.Object](f *informer.Factory, m *Member, opts ...informer.ForOptions[T]) (*Informer[T], error) {
	if m == nil {
		return nil, fmt.Errorf("%w: nil Member", ErrInvalidOptions)
	}
	var o informer.ForOptions[T]
	if len(opts) > 1 {
		return nil, fmt.Errorf("%w: more than one ForOptions", ErrInvalidOptions)
	}
	if len(opts) == 1 {
		o = opts[0]
	}
	if o.WrapListWatch != nil {
		return nil, fmt.Errorf("%w: ForOptions.WrapListWatch is the shard package's", ErrInvalidOptions)
	}
	i := newInformer[T](m)
	o.WrapListWatch = func(lw informer.ListerWatcher[T]) informer.ListerWatcher[T] {
		i.src.inner = lw
		return i.src
	}
	inf, err := informer.For(f, o)
	if err != nil {
		return nil, err
	}
	if i.src.inner == nil {
		return nil, fmt.Errorf("%w: the factory already has an unsharded informer %s", informer.ErrOptionsConflict, inf.Name())
	}
	i.inf = inf
	m.attach(i)
	return i, nil
}

// Informer is the underlying informer: its cache, lister, stats and
// resource version.
func (i *Informer[T]) Informer() *informer.SharedIndexInformer[T] { return i.inf }

// Lister reads the cache: this member's objects.
func (i *Informer[T]) Lister() informer.Lister[T] { return i.inf.Lister() }

// HasSynced reports whether the first list (after the member joined) is in
// the cache.
func (i *Informer[T]) HasSynced() bool { return i.inf.HasSynced() }

// Run runs the underlying informer until ctx ends. A second Run returns
// informer.ErrStarted and leaves the first one running as it was; on one
// from For, which the factory runs, Run returns informer.ErrRunByFactory
// (which wraps ErrStarted) at once.
func (i *Informer[T]) Run(ctx context.Context) error {
	err := i.inf.Run(ctx)
	if !errors.Is(err, informer.ErrStarted) {
		i.m.detach(i) // it ran, and has stopped
	}
	return err
}

// AddEventHandler registers h for the objects of this member's buckets;
// opts are as for SharedIndexInformer.AddEventHandler. If h implements
// Releaser, it hears of objects given up.
func (i *Informer[T]) AddEventHandler(h informer.ResourceEventHandler[T], opts ...informer.HandlerOptions) (*informer.Registration[T], error) {
	w := &handler[T]{i: i, h: h}
	if rel, ok := h.(Releaser[T]); ok {
		w.rel, w.told = rel, make(map[types.UID]T)
	}
	var o informer.HandlerOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Name == "" {
		o.Name = fmt.Sprintf("%T", h)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	reg, err := i.inf.AddEventHandler(w, append([]informer.HandlerOptions{o}, opts[min(1, len(opts)):]...)...)
	if err != nil {
		return nil, err
	}
	i.handlers[reg] = w
	return reg, nil
}

// RemoveEventHandler removes a handler AddEventHandler registered.
func (i *Informer[T]) RemoveEventHandler(reg *informer.Registration[T]) error {
	i.mu.Lock()
	if w := i.handlers[reg]; w != nil {
		w.removed.Store(true) // a giving up under way calls it no more
	}
	delete(i.handlers, reg)
	i.mu.Unlock()
	return i.inf.RemoveEventHandler(reg)
}

// Status is a sharded informer's report.
type Status struct {
	MemberStatus
	// Mode says whether the server or this client filters.
	Mode Mode
	// Objects is the number of objects cached.
	Objects int
	// Received counts objects the server sent (listed, or in watch events);
	// Dropped those of them outside the owned buckets.
	Received, Dropped int64
}

// Status reports the member's view, who filters, and the cache's size.
func (i *Informer[T]) Status() Status {
	return Status{
		MemberStatus: i.m.Status(),
		Mode:         Mode(i.src.mode.Load()),
		Objects:      i.inf.GetIndexer().Len(),
		Received:     i.src.objects.Load(),
		Dropped:      i.src.dropped.Load(),
	}
}

// setActive is the member's buckets when the informer attaches.
func (i *Informer[T]) setActive(active Buckets) {
	i.active.Store(&active)
	i.src.setWant(active)
}

// stopped reports whether the underlying informer has stopped: the Member
// no longer moves it.
func (i *Informer[T]) stopped() bool { return i.inf.IsStopped() }

// pending returns the buckets given up that the cache may still hold.
func (i *Informer[T]) pending() Buckets { return i.src.pending() }

// deactivate stops delivering lost, waits for calls in flight, tells
// Releasers (if release) that are still registered, of an informer still
// running, and moves the source to active.
func (i *Informer[T]) deactivate(lost, active Buckets, release bool) {
	i.active.Store(&active)
	i.calls.Lock()
	i.mu.Lock()
	hs := make([]*handler[T], 0, len(i.handlers))
	for _, h := range i.handlers {
		if h.told != nil {
			hs = append(hs, h)
		}
	}
	i.mu.Unlock()
	for _, h := range hs {
		for uid, obj := range h.told {
			if lost.HasHash(Hash(field(obj, i.src.key))) {
				delete(h.told, uid)
				if release && !h.removed.Load() && !i.inf.IsStopped() {
					releaseOne(h.rel, obj)
				}
			}
		}
	}
	i.calls.Unlock()
	i.src.setWant(active)
}

// releaseOne calls r.OnRelease, containing a panic as the informer does.
func releaseOne[T informer.Object](r Releaser[T], obj T) {
	defer func() { _ = recover() }()
	r.OnRelease(obj)
}

// activate moves the source to active, gained included, and marks
// gained's objects as initial adds.
func (i *Informer[T]) activate(gained, active Buckets) {
	i.mu.Lock()
	i.src.mu.Lock()
	gen := i.src.gen + 1 // the generation setWant will make
	i.src.mu.Unlock()
	i.gains = append(i.gains, gain{buckets: gained, gen: gen})
	if len(i.gains) > maxGains {
		i.gains = i.gains[len(i.gains)-maxGains:]
	}
	i.mu.Unlock()
	i.active.Store(&active)
	i.src.setWant(active)
}

// listed records the resource version of the first complete list of a
// gain's generation.
func (i *Informer[T]) listed(gen uint64, rv string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	for k := range i.gains {
		if g := &i.gains[k]; g.rv == "" && g.gen <= gen {
			g.rv = rv
		}
	}
}

// outside returns the cached objects outside want once the cache has
// applied every change up to rv (the Reflector has passed on, and so the
// source knows of, no later one) and everything the Reflector queued.
func (i *Informer[T]) outside(ctx context.Context, rv string, want Buckets) ([]T, error) {
	ctx, cancel := context.WithTimeout(ctx, appliedWait)
	defer cancel()
	if err := i.inf.WaitForResourceVersion(ctx, rv); err != nil {
		return nil, err
	}
	// The version may have been applied before what the Reflector queued
	// last: a relist that answered the same version (nothing was written
	// between the two lists) but holds other buckets, or the events of a
	// move at that version.
	if err := seam.WaitQueued(ctx, i.inf); err != nil {
		return nil, err
	}
	var out []T
	for _, obj := range i.inf.GetIndexer().All() {
		if !want.HasHash(Hash(field(obj, i.src.key))) {
			out = append(out, obj)
		}
	}
	return out, nil
}

// initial reports whether obj, added after the first list, is an initial
// object of a gain: in its buckets, and listed with it.
func (i *Informer[T]) initial(obj T, h uint64) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, g := range i.gains {
		if g.rv == "" || !g.buckets.HasHash(h) {
			continue
		}
		if c, err := resourceversion.CompareResourceVersion(obj.GetResourceVersion(), g.rv); err == nil && c <= 0 {
			return true
		}
	}
	return false
}

// handler delivers the notifications of the active buckets to h. For a
// Releaser it keeps the objects h was told of and not yet of their deletion
// (by UID), so that giving buckets up releases exactly those: a deletion
// still queued then is dropped, as is an addition h never heard of. Only
// h's calls (one at a time) and deactivate (which excludes them) touch told.
type handler[T informer.Object] struct {
	i       *Informer[T]
	h       informer.ResourceEventHandler[T]
	rel     Releaser[T]
	told    map[types.UID]T
	removed atomic.Bool // set by RemoveEventHandler
}

// delivers reports whether a notification of an object whose key hashes
// to h (any, if known is false) is delivered now: its bucket is active and
// the Member's Lease has not passed its fencing point. The caller holds
// calls (shared).
func (w *handler[T]) delivers(h uint64, known bool) bool {
	if known && !w.i.active.Load().HasHash(h) {
		return false // given up (released) or never ours
	}
	return w.i.m.handling(time.Now())
}

func (w *handler[T]) OnAdd(obj T, isInInitialList bool) {
	w.i.calls.RLock()
	defer w.i.calls.RUnlock()
	h := Hash(field(obj, w.i.src.key))
	if !w.delivers(h, true) {
		return
	}
	if !isInInitialList && w.i.initial(obj, h) {
		isInInitialList = true
	}
	if w.told != nil {
		w.told[obj.GetUID()] = obj
	}
	w.h.OnAdd(obj, isInInitialList)
}

func (w *handler[T]) OnUpdate(oldObj, newObj T) {
	w.i.calls.RLock()
	defer w.i.calls.RUnlock()
	if !w.delivers(Hash(field(newObj, w.i.src.key)), true) {
		return
	}
	if w.told != nil {
		w.told[newObj.GetUID()] = newObj
	}
	w.h.OnUpdate(oldObj, newObj)
}

func (w *handler[T]) OnDelete(d informer.DeletedObject[T]) {
	w.i.calls.RLock()
	defer w.i.calls.RUnlock()
	known := !isZero(d.Obj)
	var h uint64
	if known {
		h = Hash(field(d.Obj, w.i.src.key))
	}
	if !w.delivers(h, known) {
		return
	}
	if w.told != nil && !isZero(d.Obj) {
		delete(w.told, d.Obj.GetUID())
	}
	w.h.OnDelete(d)
}

func isZero[T informer.Object](obj T) bool {
	var zero T
	return any(obj) == any(zero)
}
