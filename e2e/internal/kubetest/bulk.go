package kubetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Parallel calls do(ctx, i) for every i in [0, n) from workers goroutines, and returns the first
// error (the others stop taking work once one failed).
func Parallel(ctx context.Context, n, workers int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := do(ctx, i); err != nil {
					cancel(fmt.Errorf("item %d: %w", i, err))
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx) // nil unless a call failed or the parent ended
}
