package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedkube/informer"
)

// ErrNotJoined reports a sharded informer listing before its Member has
// joined its group (Member.Run was not called, or cannot write its Lease).
var ErrNotJoined = errors.New("shard: the member has not joined its group")

// joinWait is how long a List waits for the member to join before it
// fails with ErrNotJoined (and the informer retries).
var joinWait = 5 * time.Second

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
// for the active buckets only, drops what the server sends beyond them,
// and ends its watch (asking for a relist) when they change.
type source[T informer.Object] struct {
	inner   informer.ListerWatcher[T]
	key     Key
	ready   <-chan struct{}
	why     func() string               // why the member has not joined
	onList  func(gen uint64, rv string) // a full list of generation gen completed at rv
	mode    atomic.Int32
	objects atomic.Int64 // received from the server, before filtering
	dropped atomic.Int64 // of those, not in the active buckets

	mu        sync.Mutex
	want      Buckets
	gen       uint64 // bumped by setWant
	listedGen uint64 // generation of the last complete list
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

// setWant makes b the buckets to list and watch, and ends open watches,
// so that the Reflector lists b. It returns the new generation.
func (s *source[T]) setWant(b Buckets) uint64 {
	s.mu.Lock()
	s.want = b
	s.gen++
	gen := s.gen
	ws := make([]*shardWatch[T], 0, len(s.watches))
	for w := range s.watches {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	for _, w := range ws {
		w.end()
	}
	return gen
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
	s.mu.Unlock()
	if want.Empty() {
		// Nothing to list: one object's worth, for the resource version.
		opts.Limit, opts.Continue = 1, ""
		page, err := s.inner.List(ctx, opts)
		if err != nil || page == nil {
			return page, err // the Reflector reports a missing page
		}
		s.listed(gen, page.ResourceVersion)
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
	s.objects.Add(int64(len(page.Items)))
	kept := page.Items[:0]
	for _, obj := range page.Items {
		if want.HasHash(Hash(field(obj, s.key))) {
			kept = append(kept, obj)
		}
	}
	clear(page.Items[len(kept):])
	s.dropped.Add(int64(len(page.Items) - len(kept)))
	page.Items = kept
	if page.Continue == "" {
		s.listed(gen, page.ResourceVersion)
	}
	return page, nil
}

// listed records a complete list of generation gen.
func (s *source[T]) listed(gen uint64, rv string) {
	s.mu.Lock()
	if s.gen == gen {
		s.listedGen = gen
	}
	s.mu.Unlock()
	if s.onList != nil {
		s.onList(gen, rv)
	}
}

func (s *source[T]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	if s.gen != s.listedGen {
		s.mu.Unlock()
		return nil, fmt.Errorf("shard: owned buckets changed: %w", informer.ErrRelist)
	}
	want, gen := s.want, s.gen
	s.mu.Unlock()
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
	w := newShardWatch(s, inner, want)
	s.mu.Lock()
	if s.gen != gen { // moved while the watch was being opened
		s.mu.Unlock()
		w.end()
		return w, nil
	}
	s.watches[w] = struct{}{}
	s.mu.Unlock()
	return w, nil
}

func (s *source[T]) forget(w *shardWatch[T]) {
	s.mu.Lock()
	delete(s.watches, w)
	s.mu.Unlock()
}

// shardWatch passes on the events of a watch of the server whose objects
// are in its buckets; with no inner watch (no bucket), it only waits to be
// ended.
type shardWatch[T informer.Object] struct {
	src      *source[T]
	inner    watch.Interface
	want     Buckets
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	moved    atomic.Bool // ended because the buckets changed
}

func newShardWatch[T informer.Object](src *source[T], inner watch.Interface, want Buckets) *shardWatch[T] {
	w := &shardWatch[T]{src: src, inner: inner, want: want, out: make(chan watch.Event), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *shardWatch[T]) run() {
	defer close(w.done)
	defer close(w.out)
	defer w.src.forget(w)
	if w.inner == nil {
		<-w.stop
		return
	}
	defer w.inner.Stop()
	in := w.inner.ResultChan()
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-w.stop:
			return
		case ev, ok = <-in:
			if !ok {
				return
			}
		}
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			if obj, isT := ev.Object.(T); isT {
				w.src.objects.Add(1)
				if !w.want.HasHash(Hash(field(obj, w.src.key))) {
					w.src.dropped.Add(1)
					continue
				}
			}
		}
		select {
		case w.out <- ev:
		case <-w.stop:
			return
		}
	}
}

// end stops the watch because the buckets changed: Err then asks for a
// relist.
func (w *shardWatch[T]) end() {
	w.moved.Store(true)
	w.Stop()
}

func (w *shardWatch[T]) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}

func (w *shardWatch[T]) ResultChan() <-chan watch.Event { return w.out }

// Err tells the Reflector why the watch ended: informer.ErrRelist when
// the buckets changed.
func (w *shardWatch[T]) Err() error {
	if w.moved.Load() {
		return fmt.Errorf("shard: owned buckets changed: %w", informer.ErrRelist)
	}
	return nil
}

// field is the value of key in obj.
func field[T informer.Object](obj T, key Key) string {
	if key == KeyNamespace {
		return obj.GetNamespace()
	}
	return string(obj.GetUID())
}
