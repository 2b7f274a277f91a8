package watchconn

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

// A watch over HTTP/1.1 has no HTTP/2 health check: client-go pings an
// idle HTTP/2 connection and closes it when the ping goes unanswered, but
// an HTTP/1.1 connection whose peer vanished without a word (a partition,
// a hung server, a proxy that stopped forwarding) stays open as long as
// TCP keep-alive is answered, which a hung server's kernel or a live proxy
// does. What takes the ping's place is the server's own heartbeat: the
// apiserver's watch cache sends each watch that allows bookmarks a
// BOOKMARK about once a minute (the cacher's defaultBookmarkFrequency),
// whether anything changed or not. A watch that asked for bookmarks and
// whose reader has waited IdleTimeout for a byte is ended: its body is
// closed, the read returns an error wrapping ErrIdle, and the informer
// watches again from the last resource version it saw (the error is a
// timeout, which client-go's watch and this library's both take as the
// end of the stream, not as a reason to list again).
//
// Only a reader that waits counts: a watch whose reader is busy elsewhere
// (its handlers, a full queue) and does not read is not idle, however
// long no byte is read. A watch request whose response does not come
// within IdleTimeout (a server that accepts connections and answers
// nothing) is canceled the same way, with an error wrapping ErrIdle.

// DefaultIdleTimeout is the idle timeout of a watch that allows
// bookmarks when Options.IdleTimeout is zero: half as long again as the
// minute between the apiserver's bookmarks.
const DefaultIdleTimeout = 90 * time.Second

// ErrIdle is wrapped by the error a watch's read returns when the watch
// was ended for waiting its idle timeout without a byte.
var ErrIdle = errors.New("watchconn: the watch read nothing for its idle timeout")

// idleError is the error of a read that the idle timeout ended, or of a
// watch request whose response's headers did not come within it: a
// timeout, as net.Error says it, wrapping ErrIdle.
type idleError struct {
	path    string
	idle    time.Duration
	headers bool // no response came
}

func (e *idleError) Error() string {
	if e.headers {
		return fmt.Sprintf("watchconn: the watch %s waited %v for its response: canceled", e.path, e.idle)
	}
	return fmt.Sprintf("watchconn: the watch %s waited %v for a byte (no event, no bookmark): closed, to be watched again", e.path, e.idle)
}

func (e *idleError) Unwrap() error { return ErrIdle }

// Timeout reports true: the watch timed out, which watchers take as the
// end of the stream.
func (e *idleError) Timeout() bool { return true }

// Temporary reports true, as the timeout of a net.Conn does.
func (e *idleError) Temporary() bool { return true }

// ticksPerIdle is how many times per idle timeout a watch is looked at: an
// idle watch ends between IdleTimeout and IdleTimeout plus two ticks after
// its reader began to wait.
const ticksPerIdle = 8

// clock is what the idle timeout needs of time; tests give their own.
type clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) stopper
}

type stopper interface{ Stop() bool }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }

// idleBody is the body of a watch that allows bookmarks: it ends the watch
// when its reader has waited idle for a byte.
type idleBody struct {
	io.ReadCloser
	path  string
	idle  time.Duration
	clock clock
	// reads counts each Read's start and each Read's return: it is odd while
	// a Read waits.
	reads   atomic.Uint64
	expired atomic.Bool
	logger  klog.Logger // the request context's
	onClose func()      // after the body is closed

	// Read and written by check alone, which runs on one timer at a time.
	seen  uint64    // reads at the last check
	since time.Time // when reads was first seen at seen

	mu     sync.Mutex
	timer  stopper // guarded by mu; the next check
	closed bool    // guarded by mu; by the reader or the idle timeout
}

func newIdleBody(rc io.ReadCloser, path string, idle time.Duration, c clock, logger klog.Logger, onClose func()) *idleBody {
	b := &idleBody{ReadCloser: rc, path: path, idle: idle, clock: c, since: c.Now(), logger: logger, onClose: onClose}
	b.mu.Lock()
	b.timer = c.AfterFunc(idle/ticksPerIdle, b.check)
	b.mu.Unlock()
	return b
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.reads.Add(1)
	n, err := b.ReadCloser.Read(p)
	b.reads.Add(1)
	if err != nil && b.expired.Load() {
		return n, &idleError{path: b.path, idle: b.idle}
	}
	return n, err
}

// check ends the watch if one Read has waited since a check at least idle
// ago, and looks again a tick later if not.
func (b *idleBody) check() {
	now := b.clock.Now()
	switch r := b.reads.Load(); {
	case r != b.seen || r%2 == 0:
		// A read started or returned since the last check, or none waits.
		b.seen, b.since = r, now
	case now.Sub(b.since) >= b.idle:
		b.expired.Store(true)
		b.logger.V(1).Info("Ending a watch that waited its idle timeout for a byte; it is watched again", "path", b.path, "idleTimeout", b.idle)
		_ = b.Close()
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.timer = b.clock.AfterFunc(b.idle/ticksPerIdle, b.check)
	}
}

// Close stops the checks and closes the body, which ends a Read that
// waits.
func (b *idleBody) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	t := b.timer
	b.mu.Unlock()
	t.Stop()
	err := b.ReadCloser.Close()
	b.onClose()
	return err
}

// closeFunc is a body that calls a function after it is closed.
type closeFunc struct {
	io.ReadCloser
	after func()
}

func (c closeFunc) Close() error {
	err := c.ReadCloser.Close()
	c.after()
	return err
}
