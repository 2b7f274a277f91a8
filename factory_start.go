package informer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/klog/v2"
)

// Start starts, each on its own goroutine, every informer of the factory,
// and makes the factory start every informer made later as soon as it is
// made, all with ctx. Later calls do nothing: a factory runs once. When ctx
// ends, the informers stop, and For, ForUnstructured and ForMetadata return
// ErrFactoryStopped; Shutdown then waits for them. Start does nothing after
// Shutdown.
func (f *Factory) Start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down || f.runCtx != nil {
		return
	}
	f.runCtx, f.stopRun = context.WithCancel(ctx)
	for _, e := range f.order {
		f.startLocked(e)
	}
}

// startLocked runs the informer of e on a new goroutine. The caller holds
// mu, and runCtx is set.
func (f *Factory) startLocked(e *factoryEntry) {
	if e.started {
		return
	}
	e.started = true
	ctx, cancel := context.WithCancel(f.runCtx)
	e.cancel = cancel
	f.running.Go(func() {
		defer cancel()
		defer close(e.done)
		if err := e.informer.run(ctx); err != nil {
			e.err = err
			klog.FromContext(ctx).Error(err, "Informer stopped", "informer", e.name)
		}
	})
}

// WaitForCacheSync waits until every informer the factory has when it is
// called has synced, or has failed to (see ErrSyncFailed), or until ctx
// ends, whichever comes first. It returns, by informer name (such as
// "v1/pods", "apps/v1/deployments" or "v1/pods (metadata)"), whether each
// has synced. If one has not, the error wraps ErrNotSynced, names those
// that have not, and wraps the causes: the *SyncError of each informer
// whose lists fail with an error that retrying is not expected to mend,
// such as Forbidden (test with apierrors.IsForbidden, or errors.Is with
// ErrSyncFailed), the error an informer stopped with, and ctx's cause.
//
// It does not wait for an informer that has stopped, or that has met such
// an error since an earlier WaitForCacheSync returned: a missing
// permission or CRD is reported as soon as the server answers, not when
// ctx ends. Those informers go on retrying, with backoff, and may still
// sync; a later call waits for them until they sync or fail again. Before
// Start, it returns at once with ErrNotStarted.
func (f *Factory) WaitForCacheSync(ctx context.Context) (map[string]bool, error) {
	f.mu.Lock()
	entries := slices.Clone(f.order)
	started := f.runCtx != nil
	f.mu.Unlock()
	synced := make(map[string]bool, len(entries))
	if !started {
		for _, e := range entries {
			synced[e.name] = false
		}
		return synced, fmt.Errorf("%w: call Start before WaitForCacheSync", ErrNotStarted)
	}
wait:
	for _, e := range entries {
		gen, next := e.informer.syncFailures()
		if gen > e.reported.Load() {
			continue // a failure not reported yet
		}
		select {
		case <-e.informer.Synced():
		case <-next:
		case <-e.done:
		case <-ctx.Done():
			break wait
		}
	}
	var pending []string
	var causes []error
	for _, e := range entries {
		ok := e.informer.HasSynced()
		synced[e.name] = ok
		if ok {
			continue
		}
		pending = append(pending, e.name)
		select {
		case <-e.done:
			if e.err != nil {
				causes = append(causes, fmt.Errorf("%s: %w", e.name, e.err))
			} else {
				causes = append(causes, fmt.Errorf("%s: %w", e.name, ErrStopped))
			}
			continue
		default:
		}
		gen, _ := e.informer.syncFailures()
		if err := e.informer.SyncFailure(); err != nil {
			causes = append(causes, err)
			e.reported.Store(gen)
		}
	}
	if len(pending) == 0 {
		return synced, nil
	}
	if ctx.Err() != nil {
		causes = append(causes, context.Cause(ctx))
	}
	slices.Sort(pending)
	return synced, fmt.Errorf("%w: %s: %w", ErrNotSynced, strings.Join(pending, ", "), errors.Join(causes...))
}

// Remove stops the factory's informer named name (its Name, such as
// "v1/pods" or "v1/pods (metadata)") and forgets it: its handlers get no
// more calls once Remove returns, it makes no more requests, and the
// factory no longer holds it or its cache, so their memory is returned
// once the program drops its own references (listers included). A later
// For of the same type makes a new informer. An informer not started yet
// is stopped without running. Remove returns once the informer's Run has
// returned, or with ctx's cause if ctx ends first (the informer still
// stops, and is forgotten), or with ErrNoInformer.
func (f *Factory) Remove(ctx context.Context, name string) error {
	f.mu.Lock()
	e := f.entries[name]
	if e == nil {
		f.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrNoInformer, name)
	}
	delete(f.entries, name)
	f.order = slices.DeleteFunc(f.order, func(x *factoryEntry) bool { return x == e })
	for typ, x := range f.types {
		if x == e {
			delete(f.types, typ)
		}
	}
	started := e.started
	e.started = true // never to be started now
	f.mu.Unlock()
	if !started {
		// Run with an ended context marks it stopped: AddEventHandler and
		// Run fail from now on, as for a removed running informer.
		stopped, stop := context.WithCancel(context.Background())
		stop()
		_ = e.informer.run(stopped)
		close(e.done)
		return nil
	}
	e.cancel()
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("informer: remove %s: %w", name, context.Cause(ctx))
	}
}

// Shutdown stops every informer of the factory and returns once all of
// them, their handlers included, have returned. Later For,
// ForUnstructured and ForMetadata calls return ErrFactoryStopped, and so do
// those waiting for discovery. It may be called more than once, and before
// Start.
func (f *Factory) Shutdown() {
	f.mu.Lock()
	f.down = true
	stop := f.stopRun
	f.mu.Unlock()
	f.cancel()
	if stop != nil {
		stop()
	}
	f.running.Wait()
	switch {
	case f.http != nil && f.opts.HTTPClient == nil:
		utilnet.CloseIdleConnectionsFor(f.http.Transport)
	case f.watches != nil:
		f.watches.CloseIdleWatchConnections() // not the given client's
	}
}
