package kubetest

import (
	"context"
	"sync"
)

// WatchErrors collects the errors an informer's watch error handler is told. It is safe for
// concurrent use.
type WatchErrors struct {
	mu   sync.Mutex
	errs []error // guarded by mu
}

// Handle is a watch error handler (informer.ReflectorOptions.WatchErrorHandler) that records
// err.
func (w *WatchErrors) Handle(_ context.Context, err error) {
	w.mu.Lock()
	w.errs = append(w.errs, err)
	w.mu.Unlock()
}

// Len returns how many errors were recorded; pass it to Since later.
func (w *WatchErrors) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.errs)
}

// Since returns the errors recorded after the first n.
func (w *WatchErrors) Since(n int) []error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]error(nil), w.errs[min(n, len(w.errs)):]...)
}

// Count returns how many recorded errors match keep.
func (w *WatchErrors) Count(keep func(error) bool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, err := range w.errs {
		if keep(err) {
			n++
		}
	}
	return n
}
