package harness

import (
	"context"
	"fmt"
	"net"
	"time"
)

// sleepCtx waits for d or until ctx is done, whichever comes first, and returns ctx.Err() in the
// latter case. Callers use it between polls of a condition that has its own deadline in ctx.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a moment ago. The listeners
// are held until all n are chosen so that the ports differ; a server started afterwards may still
// lose a port to another process, which its log then says, and its starter tries other ports
// (errPortTaken).
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("harness: pick a free port: %w", err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
