package harness

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// tcpProxy forwards every TCP connection accepted on a loopback port to a target address, byte
// for byte: TLS passes through untouched, so clients verify the API server itself. It exists so
// that a test can cut every open client connection (DropConnections) while the server keeps
// running, which is what a watch sees when a load balancer or the network drops it.
type tcpProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup // the accept loop and every connection's goroutines

	mu     sync.Mutex
	conns  map[*proxyConn]struct{} // guarded by mu; the connections being forwarded
	closed bool                    // guarded by mu; set by close, after which no conn is added
}

// proxyConn is one forwarded connection: the client's side and the server's side.
type proxyConn struct {
	client, server net.Conn
	closeOnce      sync.Once
}

func (c *proxyConn) close() {
	c.closeOnce.Do(func() {
		c.client.Close()
		c.server.Close()
	})
}

// newTCPProxy listens on a free port of 127.0.0.1 and forwards to target (host:port).
func newTCPProxy(target string) (*tcpProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("harness: proxy listen: %w", err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: make(map[*proxyConn]struct{})}
	p.wg.Go(p.acceptLoop)
	return p, nil
}

// addr is the proxy's host:port.
func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) acceptLoop() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // the listener was closed
		}
		p.wg.Go(func() { p.forward(client) })
	}
}

// forward connects client to the target and copies both ways until either side ends, then closes
// both. A target that refuses (the API server is restarting) closes the client at once.
func (p *tcpProxy) forward(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		client.Close()
		return
	}
	c := &proxyConn{client: client, server: server}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.close()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()

	var copies sync.WaitGroup
	// io.Copy between two *net.TCPConn uses splice(2) on Linux: no copying through user space.
	copies.Go(func() { io.Copy(server, client); c.close() })
	copies.Go(func() { io.Copy(client, server); c.close() })
	copies.Wait()

	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// dropConnections closes every connection being forwarded and returns how many there were.
// Connections accepted afterwards are forwarded as usual.
func (p *tcpProxy) dropConnections() int {
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	return len(conns)
}

// close stops accepting, drops every connection and waits for all of the proxy's goroutines.
func (p *tcpProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.dropConnections()
	p.wg.Wait()
}
