package kubetest

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// StallingDialer dials TCP connections that a test can make silent all at once (Stall): from then
// on nothing the server sends reaches the client and what the client writes goes nowhere, but
// each connection stays open, as over a network partition or to a server that hangs. Connections
// it dials later work.
type StallingDialer struct {
	mu             sync.Mutex
	conns          []*stallConn
	afterHandshake bool // guarded by mu; see StallAfterHandshake
}

// StallAfterHandshake sets whether the connections dialed from now on stall once their TLS
// handshake is done, as to a server that completes it and then answers nothing: each passes bytes
// until the client writes its first application-data record (TLS content type 23, in TLS 1.3 its
// encrypted Finished, after which the client takes the handshake as done), and is stalled from
// that record on.
func (d *StallingDialer) StallAfterHandshake(on bool) {
	d.mu.Lock()
	d.afterHandshake = on
	d.mu.Unlock()
}

// Dial dials as a rest.Config's Dial.
func (d *StallingDialer) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c := &stallConn{Conn: conn, closed: make(chan struct{})}
	d.mu.Lock()
	c.afterHandshake = d.afterHandshake
	d.conns = append(d.conns, c)
	d.mu.Unlock()
	return c, nil
}

// Stall makes every connection dialed so far silent, and returns how many there were.
func (d *StallingDialer) Stall() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.stalled.Store(true)
	}
	return len(d.conns)
}

// CloseAll closes every connection dialed.
func (d *StallingDialer) CloseAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.Close()
	}
}

// tlsApplicationData is the content type of a TLS application-data record: its first byte.
const tlsApplicationData = 23

// stallConn is a connection that Stall can make silent.
type stallConn struct {
	net.Conn
	stalled        atomic.Bool
	afterHandshake bool // stall at the first application-data record written
	closed         chan struct{}
	closeOnce      sync.Once
}

// Read returns what the server sent until the connection is stalled; a stalled one's reads,
// and a read that was waiting when it stalled, wait until it is closed, and what came is dropped.
func (c *stallConn) Read(p []byte) (int, error) {
	if !c.stalled.Load() {
		n, err := c.Conn.Read(p)
		if !c.stalled.Load() {
			return n, err
		}
	}
	<-c.closed
	return 0, net.ErrClosed
}

// Write sends p, or drops it once the connection is stalled.
func (c *stallConn) Write(p []byte) (int, error) {
	if c.afterHandshake && len(p) > 0 && p[0] == tlsApplicationData {
		c.stalled.Store(true)
	}
	if c.stalled.Load() {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *stallConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// PlainWatchOf reports whether r is a plain watch of resource (not a watch-list stream) that the
// server answered: the watch an informer keeps once a watch-list has synced its cache.
func PlainWatchOf(resource string) func(r Request) bool {
	return func(r Request) bool { return r.WatchOf(resource) && !r.WatchList() && r.Status == 200 }
}

// WaitPlainWatch waits until log holds a plain watch of resource (PlainWatchOf), and says what
// log holds if ctx ends first.
func WaitPlainWatch(ctx context.Context, log *RequestLog, resource string) error {
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return log.Count(PlainWatchOf(resource)) > 0, nil
	}); err != nil {
		return fmt.Errorf("no plain watch of the %s began: %w; requests: %v", resource, err, log.Requests(nil))
	}
	return nil
}
