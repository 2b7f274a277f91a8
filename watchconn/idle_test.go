package watchconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// manualClock is a clock whose time moves only when a test steps it; its
// functions run on the stepping goroutine, after its lock is released.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	c       *manualClock
	at      time.Time
	f       func()
	stopped bool // guarded by c.mu
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) AfterFunc(d time.Duration, f func()) stopper {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// step moves the time on by d and runs the functions that came due, and
// those they arm that come due by then too.
func (c *manualClock) step(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var due *manualTimer
		for i, t := range c.timers {
			if !t.at.After(c.now) {
				due = t
				c.timers = append(c.timers[:i], c.timers[i+1:]...)
				break
			}
		}
		run := due != nil && !due.stopped
		if due != nil {
			due.stopped = true
		}
		c.mu.Unlock()
		if due == nil {
			return
		}
		if run {
			due.f()
		}
	}
}

// armed reports how many functions wait for their time.
func (c *manualClock) armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}

// idleServer answers a watch with a chunked body whose chunks the test
// sends through the returned channel (each flushed at once); the handler
// returns when the channel is closed or the client has gone, and reports
// which on done.
func idleServer(t *testing.T) (srv *httptest.Server, send chan<- string, done <-chan string) {
	t.Helper()
	chunks := make(chan string)
	ended := make(chan string, 1)
	end := func(why string) {
		select {
		case ended <- why:
		default: // a test that watches more than once reads none
		}
	}
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case c, ok := <-chunks:
				if !ok {
					end("the test closed the stream")
					return
				}
				fmt.Fprint(w, c)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				end("the client went away")
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, chunks, ended
}

// idleSplitter is a Splitter for srv whose idle timeout runs on the clock
// it returns.
func idleSplitter(t *testing.T, srv *httptest.Server, idle time.Duration) (*Splitter, *manualClock) {
	t.Helper()
	s, err := Transport(&rest.Config{Host: srv.URL}, nil, Options{IdleTimeout: idle})
	if err != nil {
		t.Fatal(err)
	}
	clock := &manualClock{now: time.Unix(1_000_000, 0)}
	s.clock = clock
	t.Cleanup(s.CloseIdleConnections)
	return s, clock
}

// watch starts a watch of srv through s with query q.
func watch(t *testing.T, ctx context.Context, s *Splitter, srv *httptest.Server, q string) io.ReadCloser {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/pods?"+q, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp.Body
}

type readResult struct {
	s   string
	err error
}

// reader reads body in a goroutine of its own, a Read for each value
// received on more, and sends what each returned. At the test's end it
// closes body, which ends a Read that waits, and waits for the goroutine.
func reader(t *testing.T, body io.ReadCloser) (more chan<- struct{}, got <-chan readResult) {
	m, g := make(chan struct{}), make(chan readResult)
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 64)
		for range m {
			n, err := body.Read(buf)
			g <- readResult{string(buf[:n]), err}
		}
	})
	t.Cleanup(func() {
		body.Close()
		close(m)
		go func() {
			for range g { // the result of a Read that was waiting
			}
		}()
		wg.Wait()
		close(g)
	})
	return m, g
}

// inFlight waits until a Read of b has begun and not returned.
func inFlight(t *testing.T, b *idleBody) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for b.reads.Load()%2 == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no Read of the body began in 10s")
		}
		runtime.Gosched()
	}
}

// idleBodyOf returns body as the body the idle timeout watches.
func idleBodyOf(t *testing.T, body io.ReadCloser) *idleBody {
	t.Helper()
	b, ok := body.(*idleBody)
	if !ok {
		t.Fatalf("the body of a watch that allows bookmarks is a %T, not watched for idleness", body)
	}
	return b
}

const tick = DefaultIdleTimeout / ticksPerIdle

// A watch that allows bookmarks, whose reader waits the idle timeout for
// a byte, is ended: the read returns an error wrapping ErrIdle that
// watchers take for a timeout, and the server sees the client go. Until
// then it lives.
func TestIdleWatchEnds(t *testing.T) {
	srv, send, done := idleServer(t)
	s, clock := idleSplitter(t, srv, 0)
	var mu sync.Mutex
	var logged []string
	logger := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, args)
	}, funcr.Options{Verbosity: 1})
	body := watch(t, klog.NewContext(t.Context(), logger), s, srv, "watch=true&allowWatchBookmarks=true")
	b := idleBodyOf(t, body)
	more, got := reader(t, body)

	more <- struct{}{}
	send <- "bookmark"
	if r := <-got; r.s != "bookmark" || r.err != nil {
		t.Fatalf("first read: %q, %v", r.s, r.err)
	}
	more <- struct{}{} // waits: nothing more comes
	inFlight(t, b)
	// The first check sees the read begin; the idle timeout counts from
	// there.
	for i := range ticksPerIdle {
		clock.step(tick)
		if b.expired.Load() {
			t.Fatalf("ended after %d checks, %v after the first saw the read wait", i+1, time.Duration(i)*tick)
		}
	}
	clock.step(tick)
	if !b.expired.Load() {
		t.Fatalf("not ended %v after the first check saw the read wait", DefaultIdleTimeout)
	}
	r := <-got
	if !errors.Is(r.err, ErrIdle) {
		t.Errorf("read %q, error %v, want one wrapping ErrIdle", r.s, r.err)
	}
	if !utilnet.IsTimeout(r.err) {
		t.Errorf("read error %v is not a timeout: watchers would report it, not end the stream", r.err)
	}
	if why := <-done; why != "the client went away" {
		t.Errorf("the server's handler ended with %q", why)
	}
	if n := clock.armed(); n != 0 {
		t.Errorf("%d checks still armed after the watch ended", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != 1 || !strings.Contains(logged[0], `"path"="/api/v1/pods"`) {
		t.Errorf("the request's logger got %q, want one line naming the watch's path", logged)
	}
}

// Bytes that come within the idle timeout keep a watch alive however
// long it runs, and so does a reader that does not read: only a reader
// that waits counts.
func TestIdleWatchLives(t *testing.T) {
	srv, send, done := idleServer(t)
	s, clock := idleSplitter(t, srv, 0)
	body := watch(t, t.Context(), s, srv, "watch=true&allowWatchBookmarks=true")
	b := idleBodyOf(t, body)
	more, got := reader(t, body)
	for i := range 4 {
		more <- struct{}{}
		inFlight(t, b)
		for range ticksPerIdle - 1 {
			clock.step(tick)
		}
		chunk := fmt.Sprint("event ", i)
		send <- chunk
		if r := <-got; r.s != chunk || r.err != nil {
			t.Fatalf("read %d: %q, %v; want %q", i, r.s, r.err, chunk)
		}
	}
	// No read waits for twice the idle timeout.
	for range 2 * ticksPerIdle {
		clock.step(tick)
	}
	if b.expired.Load() {
		t.Fatal("a watch whose reader did not read was ended")
	}
	send <- "after"
	more <- struct{}{}
	if r := <-got; r.s != "after" || r.err != nil {
		t.Fatalf("read after: %q, %v", r.s, r.err)
	}
	close(send)
	if why := <-done; why != "the test closed the stream" {
		t.Errorf("the server's handler ended with %q", why)
	}
}

// Only the 200 responses of watches that allow bookmarks are watched for
// idleness, and none with a negative IdleTimeout.
func TestIdleWatchWhich(t *testing.T) {
	srv, _, _ := idleServer(t)
	for _, tc := range []struct {
		idle    time.Duration
		query   string
		watched bool
	}{
		{0, "watch=true&allowWatchBookmarks=true", true},
		{0, "watch=1&allowWatchBookmarks=True&sendInitialEvents=true", true},
		{0, "watch=true", false},
		{0, "watch=true&allowWatchBookmarks=false", false},
		{0, "watch=true&allowWatchBookmarks=0", false},
		{-1, "watch=true&allowWatchBookmarks=true", false},
	} {
		s, clock := idleSplitter(t, srv, tc.idle)
		ctx, cancel := context.WithCancel(t.Context())
		body := watch(t, ctx, s, srv, tc.query)
		if _, ok := body.(*idleBody); ok != tc.watched || (clock.armed() > 0) != tc.watched {
			t.Errorf("IdleTimeout %v, ?%s: watched %t, checks armed %d; want watched %t", tc.idle, tc.query, ok, clock.armed(), tc.watched)
		}
		cancel()
		body.Close()
	}
	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusGone)
	}))
	defer refused.Close()
	s, clock := idleSplitter(t, refused, 0)
	if body := watch(t, t.Context(), s, refused, "watch=true&allowWatchBookmarks=true"); clock.armed() != 0 {
		t.Errorf("a 410's body is a %T, watched for idleness", body)
	}
}

// A body its reader closes arms no more checks.
func TestIdleWatchClosed(t *testing.T) {
	srv, send, _ := idleServer(t)
	s, clock := idleSplitter(t, srv, 0)
	body := watch(t, t.Context(), s, srv, "watch=true&allowWatchBookmarks=true")
	more, got := reader(t, body)
	more <- struct{}{}
	send <- "x"
	if r := <-got; r.err != nil {
		t.Fatal(r.err)
	}
	if err := body.Close(); err != nil {
		t.Fatal(err)
	}
	if n := clock.armed(); n != 0 {
		t.Errorf("%d checks armed after Close", n)
	}
	clock.step(time.Hour) // nothing runs
	more <- struct{}{}
	if r := <-got; r.err == nil || errors.Is(r.err, ErrIdle) {
		t.Errorf("a read after Close: %q, %v; want the body's own error", r.s, r.err)
	}
}

// The zero Options give DefaultIdleTimeout.
func TestIdleTimeoutOption(t *testing.T) {
	for _, tc := range []struct {
		set, want time.Duration
	}{{0, DefaultIdleTimeout}, {time.Second, time.Second}, {-1, -1}} {
		s, err := Transport(&rest.Config{Host: "http://127.0.0.1:1"}, nil, Options{IdleTimeout: tc.set})
		if err != nil {
			t.Fatal(err)
		}
		if s.idle != tc.want {
			t.Errorf("IdleTimeout %v: the splitter's is %v, want %v", tc.set, s.idle, tc.want)
		}
	}
}

// endless is a body that never ends: each Read fills p.
type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }

// BenchmarkIdleBodyRead is what the idle timeout adds to each Read of a watch's body (two atomic
// additions), beside the same Read of a body it does not watch: a Read of 4 KiB, the apiserver's
// chunk, from memory.
func BenchmarkIdleBodyRead(b *testing.B) {
	for _, watched := range []bool{false, true} {
		b.Run(fmt.Sprintf("watched=%t", watched), func(b *testing.B) {
			var body io.ReadCloser = io.NopCloser(endless{})
			if watched {
				body = newIdleBody(body, "/bench", time.Hour, realClock{}, klog.Background(), func() {})
				defer body.Close()
			}
			buf := make([]byte, 4096)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := body.Read(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A watch that allows bookmarks whose response does not come within the
// idle timeout (a server that accepts the connection and answers nothing)
// is canceled, with an error wrapping ErrIdle that is a timeout.
func TestIdleWatchNoResponse(t *testing.T) {
	reached := make(chan struct{}, 1)
	gone := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached <- struct{}{}
		<-r.Context().Done() // never answers
		gone <- struct{}{}
	}))
	defer srv.Close()
	s, clock := idleSplitter(t, srv, 0)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/api/v1/pods?watch=true&allowWatchBookmarks=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		resp *http.Response
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := s.RoundTrip(req)
		got <- result{resp, err}
	}()
	<-reached // the request is out, and its timer armed before it went
	clock.step(DefaultIdleTimeout - time.Nanosecond)
	select {
	case r := <-got:
		t.Fatalf("the watch returned before its idle timeout: %v, %v", r.resp, r.err)
	default:
	}
	clock.step(time.Nanosecond)
	r := <-got
	if r.err == nil {
		r.resp.Body.Close()
		t.Fatalf("a watch with no response returned status %d", r.resp.StatusCode)
	}
	if !errors.Is(r.err, ErrIdle) || !utilnet.IsTimeout(r.err) {
		t.Errorf("error %v, want a timeout wrapping ErrIdle", r.err)
	}
	<-gone // the server saw the request end
}
