package informer

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Stats is what an informer reports of itself for metrics: counters since
// it was made and gauges read at the call. An informer keeps them without
// locks or globals; a metrics system reads them when it is scraped, such
// as the Prometheus collector of the module
// github.com/typedkube/informer/examples/prometheus.
type Stats struct {
	// Name is the informer's name.
	Name string
	// Synced is HasSynced.
	Synced bool
	// Objects is the number of cached objects.
	Objects int
	// StoreBytes is an estimate of the heap bytes the cache holds: its
	// objects, what it spends on keys, indexes and labels per object, and
	// what the objects share, once. Decoded objects are counted by a walk
	// of their fields (wire.Sizer) when Stats is read, for those stored
	// since the last read (a write walks nothing), the allocator's rounding
	// and Go's map layout included; the strings, label and annotation
	// maps and managedFields bytes that package wire's decoder shares
	// between objects are counted once, as its tables' bytes
	// (wire.Decoder.SharedBytes), not per object. Objects decoded
	// otherwise (client-go's codecs, a NewFactoryForClients factory, a
	// ListerWatcher of the user's, informertest) are walked as if they
	// shared nothing. A compact store counts its records and the runs
	// they share (Indexer.Compact), and the decoded objects its codec
	// keeps (at most wire.DecodedCacheSize). Within 15% of the heap an
	// informer's cache holds per object in the e2e checks (docs/decoding.md,
	// "Memory: what an informer tells of its cache"); the running informer
	// holds its streams' buffers besides (an inflater of about 145 KB while
	// a compressed watch-list stream lasts, for instance).
	StoreBytes int64
	// QueueDepth is the number of changes received from the API server and
	// not yet applied to the cache (a relist counts as one).
	QueueDepth int
	// Lists counts the lists: LISTs (a paged one once) and watch-list
	// streams. Relists counts those after the first, as after a 410 Gone.
	// ListErrors counts the LIST and watch-list requests that failed.
	Lists, Relists, ListErrors uint64
	// Watches counts the watches asked for (watch-list streams excluded).
	Watches uint64
	// Errors counts the errors the informer's Reflector reported (see
	// ReflectorOptions.WatchErrorHandler): failed lists and watches,
	// watches that ended with an error, skipped events.
	Errors uint64
	// DecodeErrors counts the objects the informer could not use: a watch
	// event stepped over (an object of the wrong type, or one its
	// transform refused) or a response that could not be decoded. An
	// object an index function fails on is cached all the same, without
	// that index's values, and logged, not counted.
	DecodeErrors uint64
	// SharedMapsWritten counts the maps (and pointed-at messages) cached
	// objects share that were found written to: package wire's decoder
	// gives objects with equal labels, annotations or resource lists one
	// map, and with equal probes, security contexts or volume sources one
	// value (wire.Options, NoMapSharing), and checks one each time it
	// would share it again.
	// A write through one object, which the contract forbids (objects
	// handed out are the cache's, never to be modified), reaches every
	// object holding that map; the decoder then stops sharing it, so
	// objects decoded afterwards carry what the server sent. Above zero,
	// the program writes to cached objects: DeepCopy before modifying.
	// Always zero for informers that do not share maps (client-go's
	// codecs, a transform, NoMapSharing).
	SharedMapsWritten uint64
	// ResourceVersion is the resource version the cache has applied (see
	// AppliedResourceVersion); "" before any.
	ResourceVersion string
	// Handlers are the registered handlers, in the order they were added.
	Handlers []HandlerStats
}

// HandlerStats is what Stats reports of one handler.
type HandlerStats struct {
	// Name is the handler's name (HandlerOptions.Name).
	Name string
	// Pending is the number of notifications queued for it, not yet
	// delivered (its backlog).
	Pending int
	// Lag is how long the oldest of those has waited: 0 when the handler
	// has nothing pending. A handler that is stuck has a growing Lag.
	Lag time.Duration
	// Panics counts the calls of the handler that panicked.
	Panics int64
	// Synced is the registration's HasSynced.
	Synced bool
}

// counters are the informer's Stats counters.
type counters struct {
	lists, listErrors, watches, errors, decodeErrors atomic.Uint64
}

// Stats returns what the informer reports of itself (see Stats). It is
// cheap: no allocation beyond the Handlers slice, no lock held for long.
func (s *SharedIndexInformer[T]) Stats() Stats {
	st := Stats{
		Name:         s.opts.Name,
		Synced:       s.HasSynced(),
		Objects:      s.indexer.Len(),
		StoreBytes:   s.indexer.storeBytes(),
		Lists:        s.counters.lists.Load(),
		ListErrors:   s.counters.listErrors.Load(),
		Watches:      s.counters.watches.Load(),
		Errors:       s.counters.errors.Load(),
		DecodeErrors: s.counters.decodeErrors.Load(),

		SharedMapsWritten: s.indexer.sharedMapsWritten(),
	}
	if st.Lists > 0 {
		st.Relists = st.Lists - 1
	}
	st.ResourceVersion, _ = s.AppliedResourceVersion()
	s.mu.Lock()
	listeners := s.listeners
	queueLen := s.queueLen
	s.mu.Unlock()
	if queueLen != nil {
		st.QueueDepth = queueLen()
	}
	now := time.Now()
	for _, l := range listeners {
		st.Handlers = append(st.Handlers, HandlerStats{
			Name:    l.name,
			Pending: l.pendingCount(),
			Lag:     l.lag(now),
			Panics:  l.panics.Load(),
			Synced:  isClosed(l.synced),
		})
	}
	return st
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// countError counts an error the Reflector reported, for Stats.
func (c *counters) countError(err error) {
	c.errors.Add(1)
	var skipped *EventError
	var te *TransformError
	if (errors.As(err, &skipped) && skipped.Type != watch.Error) || errors.As(err, &te) || isDecodeError(err) {
		c.decodeErrors.Add(1)
	}
}

// countingListWatch counts the lists and watches of a ListerWatcher.
type countingListWatch[T Object] struct {
	lw ListerWatcher[T]
	c  *counters
}

func (lw countingListWatch[T]) List(ctx context.Context, opts metav1.ListOptions) (*ListPage[T], error) {
	if opts.Continue == "" {
		lw.c.lists.Add(1)
	}
	page, err := lw.lw.List(ctx, opts)
	if err != nil {
		lw.c.listErrors.Add(1)
	}
	return page, err
}

func (lw countingListWatch[T]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	streaming := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	if streaming {
		lw.c.lists.Add(1)
	} else {
		lw.c.watches.Add(1)
	}
	w, err := lw.lw.Watch(ctx, opts)
	if err != nil && streaming {
		lw.c.listErrors.Add(1)
	}
	return w, err
}

// IsWatchListSemanticsUnSupported passes on the marker of the wrapped
// ListerWatcher.
func (lw countingListWatch[T]) IsWatchListSemanticsUnSupported() bool {
	return watchListUnsupported(lw.lw)
}
