package informer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// Errors of WaitForResourceVersion.
var (
	// ErrInvalidResourceVersion reports a resource version that is not a
	// positive decimal integer without leading zeros, the only form the
	// API server's versions can be compared in.
	ErrInvalidResourceVersion = errors.New("informer: resource version cannot be compared")
	// ErrNotInOrder reports a wait on an informer whose queue does not
	// apply changes in the order the server made them (QueueDeltaFIFO),
	// or whose source lists without a resource version
	// (ErrUnversionedList), so that no resource version says what its
	// cache holds.
	ErrNotInOrder = errors.New("informer: the cache does not apply changes in order")
	// ErrUnversionedList reports a wait on an informer whose last list
	// answered resourceVersion "0" or "" (a LIST, or the initial-events-end
	// bookmark of a watch-list stream), which kube-apiserver never does;
	// only a fake ListerWatcher can. The Reflector then watches from that
	// version, and such a watch starts with ADDED events for every object
	// that exists, in no order, which the watch's later events cannot be
	// told apart from: no version applied after such a list says what the
	// cache holds, until a list answers a version. It wraps ErrNotInOrder.
	ErrUnversionedList = fmt.Errorf("informer: the list answered resource version \"0\" or none, which kube-apiserver never does: %w", ErrNotInOrder)
)

// appliedVersion is the resource version up to which an informer's cache
// has applied the server's changes, and the readers waiting for it. Waiters
// share one channel, closed when the version advances: no goroutine per
// waiter, no polling.
type appliedVersion struct {
	mu   sync.Mutex    // guards the fields below
	rv   string        // "" until the first change, relist or bookmark is applied
	wake chan struct{} // closed and cleared when rv advances, an unversioned list is applied or the informer stops; nil when no one waits
	// unversioned is set while the last relist applied answered "0" or ""
	// (listed holds which): rv then stays where it was, and waits for
	// later versions fail at once (ErrUnversionedList), until a relist
	// answers a version.
	unversioned bool
	listed      string
	stopped     bool
}

// replaysFrom reports whether a watch from resource version rv starts with
// a replay of the objects that exist, as ADDED events in no order: one from
// "" or "0" does, one from any other version does not.
func replaysFrom(rv string) bool { return rv == "" || rv == "0" }

// replaced records that the cache has applied a relist that answered rv.
// A relist that answered "0" or "" makes the versions applied after it
// unreliable (see ErrUnversionedList) until one answers a version.
func (a *appliedVersion) replaced(rv string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if replaysFrom(rv) {
		a.unversioned, a.listed = true, rv
		a.wakeLocked() // waiters fail now rather than when their context ends
		return
	}
	a.unversioned = false
	a.advanceLocked(rv)
}

// advance records that the cache has applied every change up to rv. A
// version older than the recorded one, or empty, changes nothing; nor does
// one that cannot be compared with it (only fakes send such), which would
// hide what was applied: waits for versions up to the recorded one return.
// After an unversioned relist, nothing moves the version until the next
// relist.
func (a *appliedVersion) advance(rv string) {
	if rv == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.unversioned {
		a.advanceLocked(rv)
	}
}

func (a *appliedVersion) advanceLocked(rv string) {
	if a.rv != "" {
		c, err := resourceversion.CompareResourceVersion(rv, a.rv)
		switch {
		case err == nil && c <= 0:
			return // not newer
		case err != nil && checkVersion(a.rv) == nil:
			return // rv cannot be compared: keep the version that can
		}
	}
	a.rv = rv
	a.wakeLocked()
}

// checkVersion returns an error if rv is not a resource version in the
// form the API server's can be compared in.
func checkVersion(rv string) error {
	_, err := resourceversion.CompareResourceVersion(rv, rv)
	return err
}

func (a *appliedVersion) stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopped = true
	a.wakeLocked()
}

func (a *appliedVersion) wakeLocked() {
	if a.wake != nil {
		close(a.wake)
		a.wake = nil
	}
}

// AppliedResourceVersion returns the resource version up to which the
// informer's cache has applied the server's changes, in order: the version
// of the last change, relist or bookmark applied. ok is false until the
// cache has applied any, such as before the first list. In QueueDeltaFIFO
// mode, which applies changes per object rather than in order, it is
// always false.
func (s *SharedIndexInformer[T]) AppliedResourceVersion() (rv string, ok bool) {
	if s.opts.Queue == QueueDeltaFIFO {
		return "", false
	}
	s.applied.mu.Lock()
	defer s.applied.mu.Unlock()
	return s.applied.rv, s.applied.rv != ""
}

// WaitForResourceVersion returns once the informer's cache has applied
// every change up to resourceVersion, so that a read that follows sees at
// least that state: read-your-writes for a controller that waits for the
// resourceVersion a create, update or delete returned, whose own watch
// event moves the cache past it. Versions are compared as the API server's
// (apimachinery's resourceversion.CompareResourceVersion).
//
// It returns an error wrapping ErrInvalidResourceVersion for a version that
// cannot be compared, ErrNotInOrder in QueueDeltaFIFO mode, ErrStopped when
// the informer stops first, ErrUnversionedList (at once) while the last
// list answered resourceVersion "0" or "" and the cache has not applied
// the version from before that list, or the context's error, each saying
// which version was awaited and which one the cache has applied. Waiting
// starts no goroutine and does not poll.
func (s *SharedIndexInformer[T]) WaitForResourceVersion(ctx context.Context, resourceVersion string) error {
	if s.opts.Queue == QueueDeltaFIFO {
		return fmt.Errorf("informer %s: wait for resourceVersion %s: %w (QueueDeltaFIFO)", s.opts.Name, resourceVersion, ErrNotInOrder)
	}
	if resourceVersion == "" {
		// client-go's fake clientset returns objects without one.
		return fmt.Errorf("informer %s: wait for resourceVersion \"\" (the object has none, as those client-go's fake clientset writes): %w", s.opts.Name, ErrInvalidResourceVersion)
	}
	if err := checkVersion(resourceVersion); err != nil {
		return fmt.Errorf("informer %s: wait for resourceVersion %q: %w: %w", s.opts.Name, resourceVersion, ErrInvalidResourceVersion, err)
	}
	a := &s.applied
	for {
		a.mu.Lock()
		cur := a.rv
		if cur != "" {
			if c, err := resourceversion.CompareResourceVersion(cur, resourceVersion); err == nil && c >= 0 {
				a.mu.Unlock()
				return nil
			}
		}
		if a.stopped {
			a.mu.Unlock()
			return fmt.Errorf("informer %s: wait for resourceVersion %s (the cache has applied %s): %w", s.opts.Name, resourceVersion, appliedText(cur), ErrStopped)
		}
		if a.unversioned {
			listed := a.listed
			a.mu.Unlock()
			return fmt.Errorf("informer %s: wait for resourceVersion %s (the cache has applied %s; its last list answered resourceVersion %q): %w", s.opts.Name, resourceVersion, appliedText(cur), listed, ErrUnversionedList)
		}
		if a.wake == nil {
			a.wake = make(chan struct{})
		}
		wake := a.wake
		a.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return fmt.Errorf("informer %s: wait for resourceVersion %s (the cache has applied %s): %w", s.opts.Name, resourceVersion, appliedText(cur), context.Cause(ctx))
		}
	}
}

func appliedText(rv string) string {
	if rv == "" {
		return "none yet"
	}
	return rv
}

// AtLeast waits until the informer's cache has applied every change up to
// resourceVersion (see SharedIndexInformer.WaitForResourceVersion), then
// returns the lister, so that
//
//	l, err := inf.Lister().AtLeast(ctx, created.ResourceVersion)
//
// reads a cache that holds the write that returned that version. A Lister
// made from an Indexer rather than an informer returns ErrNotInOrder.
func (l Lister[T]) AtLeast(ctx context.Context, resourceVersion string) (Lister[T], error) {
	if l.wait == nil {
		return l, fmt.Errorf("informer: lister of %v: %w: it reads no informer", l.resource, ErrNotInOrder)
	}
	return l, l.wait(ctx, resourceVersion)
}
