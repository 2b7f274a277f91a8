package kubetest

import (
	"context"
	"fmt"
	"time"
)

// Runner is anything with a blocking Run(ctx): an informer, a controller.
type Runner interface {
	Run(ctx context.Context) error
}

// Start runs r on a new goroutine with a child of ctx. The returned stop cancels that context and
// waits up to timeout for Run to return, returning Run's error, or an error if Run did not
// return in time. Call stop exactly once.
func Start(ctx context.Context, r Runner) (stop func(timeout time.Duration) error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return func(timeout time.Duration) error {
		cancel()
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("kubetest: Run returned: %w", err)
			}
			return nil
		case <-t.C:
			return fmt.Errorf("kubetest: Run of %T did not return within %v of its context's end", r, timeout)
		}
	}
}
