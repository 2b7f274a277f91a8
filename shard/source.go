package shard

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/typedkube/informer"
)

// ErrNotJoined reports a sharded informer listing before its Member has
// joined its group (Member.Run was not called, or cannot write its Lease).
var ErrNotJoined = errors.New("shard: the member has not joined its group")

// joinWait is how long a List waits for the member to join before it
// fails with ErrNotJoined (and the informer retries).
var joinWait = 5 * time.Second

// appliedWait is how long a move waits for the cache to apply what the
// Reflector has read before it asks for a relist instead.
var appliedWait = 10 * time.Second

// movePageSize is the page size of the list of gained buckets.
const movePageSize = 500

// Mode says who filters a sharded informer's objects.
type Mode int

const (
	// ModeUnknown: nothing listed yet.
	ModeUnknown Mode = iota
	// ModeServer: the API server applies the shard selector (its
	// ShardedListAndWatch feature gate is on) and sends this member's
	// objects only; the informer still checks each one.
	ModeServer
	// ModeClient: the server ignored the selector; the informer receives
	// every object and drops those of other members' buckets.
	ModeClient
)

func (m Mode) String() string {
	switch m {
	case ModeServer:
		return "server"
	case ModeClient:
		return "client"
	}
	return "unknown"
}

// source is the ListerWatcher of a sharded informer: it asks the server
// for the active buckets only and drops what the server sends beyond them.
// When they change, it moves the store between two watches, without a
// relist: it ends the open watch with a bookmark at the resource version
// the store has reached, and the Watch that follows deletes the cached
// objects of the buckets lost, lists the buckets gained at exactly that
// version, and watches the new buckets from there. Objects of the buckets
// kept get no event. It asks for a relist (ErrRelist) where it cannot move
// so: nothing kept (the list is the move), a version the server no longer
// has, a cache that does not apply changes in order.
type source[T informer.Object] struct {
	inner  informer.ListerWatcher[T]
	key    Key
	ready  <-chan struct{}
	why    func() string               // why the member has not joined
	onList func(gen uint64, rv string) // generation gen's buckets were listed at rv
	// outside returns the cached objects outside want, once the cache has
	// applied every change up to rv and everything queued before the call.
	outside func(ctx context.Context, rv string, want Buckets) ([]T, error)
	// settled is called when buckets given up have left the store (see
	// pending).
	settled func()
	mode    atomic.Int32
	objects atomic.Int64 // received from the server, before filtering
	dropped atomic.Int64 // of those, not in the active buckets

	mu   sync.Mutex // guards the fields below
	want Buckets
	gen  uint64 // bumped by setWant
	// have is the buckets the store holds: those of the last complete list
	// or move. haveOK is false before the first list, while a list is
	// under way, and after a move the Reflector stopped in its middle.
	have   Buckets
	haveOK bool
	// released is the buckets given up (handlers were told, or are being
	// told, that their objects left) that the store may still hold, until
	// a list or move without them completes. They must not be taken back
	// before: the store would keep their objects, and no handler would
	// hear of them again.
	released Buckets
	filled   bool // the store was ever filled: before, it holds nothing to release
	// listWant and listGen are the buckets and generation the list under
	// way started with: its later pages keep them, so that one list never
	// mixes two bucket sets (and the server is asked for the selector its
	// continue token was made with).
	listWant Buckets
	listGen  uint64
	watches  map[*shardWatch[T]]struct{}
}

func newSource[T informer.Object](key Key, n int, ready <-chan struct{}) *source[T] {
	return &source[T]{key: key, ready: ready, want: newBuckets(n), gen: 1, watches: make(map[*shardWatch[T]]struct{})}
}

// IsWatchListSemanticsUnSupported: a watch-list stream has no ShardInfo
// echo, so the source always lists.
func (s *source[T]) IsWatchListSemanticsUnSupported() bool { return true }

// setWant makes b the buckets to list and watch: open watches end (with a
// bookmark, so that the Reflector watches again at once), and the next
// Watch moves the store to b. It does not wait for the watches to end.
func (s *source[T]) setWant(b Buckets) {
	s.mu.Lock()
	if s.filled {
		s.released = s.released.Union(s.want.Minus(b))
	}
	s.want = b
	s.gen++
	ws := make([]*shardWatch[T], 0, len(s.watches))
	for w := range s.watches {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	for _, w := range ws {
		w.move()
	}
}

func (s *source[T]) List(ctx context.Context, opts metav1.ListOptions) (*informer.ListPage[T], error) {
	t := time.NewTimer(joinWait)
	defer t.Stop()
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, fmt.Errorf("%w: waited %v: %s", ErrNotJoined, joinWait, s.why())
	}
	s.mu.Lock()
	if opts.Continue == "" || s.listGen == 0 {
		s.listWant, s.listGen = s.want, s.gen
	}
	want, gen := s.listWant, s.listGen
	s.haveOK = false // the store is being replaced
	s.mu.Unlock()
	if want.Empty() {
		// Nothing to list: one object's worth, for the resource version.
		opts.Limit, opts.Continue = 1, ""
		page, err := s.inner.List(ctx, opts)
		if err != nil || page == nil {
			return page, err // the Reflector reports a missing page
		}
		s.listed(gen, want, page.ResourceVersion)
		return &informer.ListPage[T]{ListMeta: metav1.ListMeta{ResourceVersion: page.ResourceVersion}}, nil
	}
	selector := ""
	if want.Len() < want.N() {
		selector = want.Selector(s.key)
		opts.ShardSelector = selector
	}
	page, err := s.inner.List(ctx, opts)
	if err != nil || page == nil {
		return page, err
	}
	if selector != "" {
		if page.ShardInfo != nil {
			s.mode.Store(int32(ModeServer))
		} else {
			s.mode.Store(int32(ModeClient))
		}
	}
	s.keep(page, want)
	if page.Continue == "" {
		s.listed(gen, want, page.ResourceVersion)
	}
	return page, nil
}

// keep drops the items of page outside b, and counts them.
func (s *source[T]) keep(page *informer.ListPage[T], b Buckets) (dropped int) {
	s.objects.Add(int64(len(page.Items)))
	kept := page.Items[:0]
	for _, obj := range page.Items {
		if b.HasHash(Hash(field(obj, s.key))) {
			kept = append(kept, obj)
		}
	}
	clear(page.Items[len(kept):])
	dropped = len(page.Items) - len(kept)
	s.dropped.Add(int64(dropped))
	page.Items = kept
	return dropped
}

// listed records a complete list of want, generation gen, at rv.
func (s *source[T]) listed(gen uint64, want Buckets, rv string) {
	s.settle(want)
	if s.onList != nil {
		s.onList(gen, rv)
	}
}

// settle records that the store holds stored, and no other bucket.
func (s *source[T]) settle(stored Buckets) {
	s.mu.Lock()
	s.have, s.haveOK, s.filled = stored, true, true
	left := !s.released.Minus(stored).Empty()
	s.released = s.released.Intersect(stored)
	s.mu.Unlock()
	if left && s.settled != nil {
		s.settled()
	}
}

// pending returns the buckets given up that the store may still hold:
// those the member must not take back yet.
func (s *source[T]) pending() Buckets {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.released
}

// unsettle records that the store's buckets are unknown: a move stopped
// in its middle. The Reflector lists before it watches again.
func (s *source[T]) unsettle() {
	s.mu.Lock()
	s.haveOK = false
	s.mu.Unlock()
}

func (s *source[T]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	have, haveOK, want, gen := s.have, s.haveOK, s.want, s.gen
	s.mu.Unlock()
	if !haveOK {
		return nil, fmt.Errorf("shard: the buckets the cache holds are unknown: %w", informer.ErrRelist)
	}
	var moving []watch.Event
	if !have.Equal(want) {
		if have.Intersect(want).Empty() {
			return nil, fmt.Errorf("shard: owned buckets changed, none kept: %w", informer.ErrRelist)
		}
		start := time.Now()
		var err error
		moving, err = s.moveEvents(ctx, opts.ResourceVersion, have, want)
		logger := klog.FromContext(ctx)
		if err != nil {
			logger.V(2).Info("Could not move the cache to the owned buckets", "resourceVersion", opts.ResourceVersion, "err", err)
			return nil, err
		}
		logger.V(2).Info("Moving the cache to the owned buckets", "resourceVersion", opts.ResourceVersion,
			"kept", have.Intersect(want).Len(), "lost", have.Minus(want).Len(), "gained", want.Minus(have).Len(), "events", len(moving), "took", time.Since(start))
	}
	var inner watch.Interface
	if !want.Empty() {
		if want.Len() < want.N() {
			opts.ShardSelector = want.Selector(s.key)
		}
		var err error
		if inner, err = s.inner.Watch(ctx, opts); err != nil {
			return nil, err
		}
	}
	w := newShardWatch(s, inner, want, opts.ResourceVersion, moving)
	if len(moving) > 0 && !want.Minus(have).Empty() && s.onList != nil {
		s.onList(gen, opts.ResourceVersion) // before the gained objects reach the handlers
	}
	s.mu.Lock()
	s.watches[w] = struct{}{}
	movedSince := s.gen != gen
	s.mu.Unlock()
	go w.run()
	if movedSince { // moved while the watch was being opened
		w.move()
	}
	return w, nil
}

// moveEvents returns the events that move the store from have to want at
// resource version rv, the version it has reached: a deletion for each
// cached object outside want, an addition for each object of the gained
// buckets as it was at rv, and a bookmark at rv (which puts the Reflector's
// version back to rv after the older versions of those objects). It asks
// for a relist if it cannot.
func (s *source[T]) moveEvents(ctx context.Context, rv string, have, want Buckets) ([]watch.Event, error) {
	bm, ok := bookmark[T](rv)
	if !ok || rv == "0" || s.outside == nil {
		return nil, fmt.Errorf("shard: owned buckets changed at resource version %q: %w", rv, informer.ErrRelist)
	}
	var evs []watch.Event
	if !have.Minus(want).Empty() {
		stale, err := s.outside(ctx, rv, want)
		if err != nil {
			return nil, fmt.Errorf("shard: owned buckets changed, and the cache of those given up cannot be read: %w: %w", informer.ErrRelist, err)
		}
		for _, obj := range stale {
			evs = append(evs, watch.Event{Type: watch.Deleted, Object: obj})
		}
	}
	if gained := want.Minus(have); !gained.Empty() {
		items, err := s.listAt(ctx, rv, gained)
		switch {
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			return nil, fmt.Errorf("shard: owned buckets changed: list of those gained: %w: %w", informer.ErrRelist, err)
		case err != nil:
			return nil, fmt.Errorf("shard: list of the buckets gained at resource version %s: %w", rv, err)
		}
		for _, obj := range items {
			evs = append(evs, watch.Event{Type: watch.Added, Object: obj})
		}
	}
	s.learnMode(ctx, want)
	return append(evs, watch.Event{Type: watch.Bookmark, Object: bm}), nil
}

// listAt lists the objects of gained as they were at resource version rv,
// in pages, and learns who filters if the pages tell.
func (s *source[T]) listAt(ctx context.Context, rv string, gained Buckets) ([]T, error) {
	opts := metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: movePageSize}
	if gained.Len() < gained.N() {
		opts.ShardSelector = gained.Selector(s.key)
	}
	var out []T
	echoed, dropped := false, 0
	for {
		page, err := s.inner.List(ctx, opts)
		if err == nil && page == nil {
			err = errors.New("shard: List returned no page and no error")
		}
		if err != nil {
			return nil, err
		}
		echoed = echoed || page.ShardInfo != nil
		dropped += s.keep(page, gained)
		out = append(out, page.Items...)
		if page.Continue == "" {
			break
		}
		// A continuation names its version in the token.
		opts.Continue, opts.ResourceVersion, opts.ResourceVersionMatch = page.Continue, "", ""
	}
	// An exact list the server served from etcd does not echo the
	// selector even when it applies it: without an echo or an object
	// beyond gained, the mode is unknown still.
	switch {
	case echoed:
		s.mode.Store(int32(ModeServer))
	case dropped > 0:
		s.mode.Store(int32(ModeClient))
	}
	return out, nil
}

// learnMode asks a small list with want's selector, which the server
// echoes if it filters, when nothing has told who filters yet (the lists
// so far had every bucket or none, or a move listed nothing).
func (s *source[T]) learnMode(ctx context.Context, want Buckets) {
	if Mode(s.mode.Load()) != ModeUnknown || want.Empty() || want.Len() == want.N() {
		return
	}
	probe, err := s.inner.List(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 1, ShardSelector: want.Selector(s.key)})
	switch {
	case err != nil || probe == nil:
	case probe.ShardInfo != nil:
		s.mode.Store(int32(ModeServer))
	default:
		s.mode.Store(int32(ModeClient))
	}
}

func (s *source[T]) forget(w *shardWatch[T]) {
	s.mu.Lock()
	delete(s.watches, w)
	s.mu.Unlock()
}

// bookmark is a bookmark object of T at rv; ok is false if T is not a
// pointer to a struct that can carry one, or rv cannot be compared.
func bookmark[T informer.Object](rv string) (obj T, ok bool) {
	if _, err := resourceversion.CompareResourceVersion(rv, rv); err != nil {
		return obj, false
	}
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return obj, false
	}
	if obj, ok = reflect.New(t.Elem()).Interface().(T); ok {
		obj.SetResourceVersion(rv)
	}
	return obj, ok
}

// field is the value of key in obj.
func field[T informer.Object](obj T, key Key) string {
	if key == KeyNamespace {
		return obj.GetNamespace()
	}
	return string(obj.GetUID())
}
