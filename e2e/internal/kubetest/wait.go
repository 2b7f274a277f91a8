package kubetest

import (
	"context"
	"fmt"
	"time"
)

// WaitFor polls cond every 20 ms until it holds, and returns an error naming what it waited
// for if ctx ends or timeout passes first.
func WaitFor(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		case <-t.C:
		}
	}
	return nil
}
