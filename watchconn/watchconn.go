// Package watchconn sends watch requests over HTTP/1.1 connections of
// their own, and every other request the way it went before.
//
// Over HTTP/2, every watch of a client shares one connection, and the
// stream's bytes pay for that: a goroutine of the transport reads the
// connection and hands each frame to the reader of its stream, and as the
// reader consumes the body the transport gives the server flow-control
// credit, a WINDOW_UPDATE frame (a TLS record and a write system call) each
// time 4 KiB or more have been read. A watch event of a realistic Pod (11
// KiB of protobuf, which the apiserver writes in 4 KiB chunks) costs the
// client two such writes and three reads. Over HTTP/1.1 the reader reads the
// connection itself, and TCP alone controls the flow: no writes, fewer
// wake-ups. docs/transport.md has the measurements.
//
// What it costs: one TCP connection (and one TLS handshake) per watch, not
// per client. HTTP/2's health checks do not cover these connections; in
// their place a watch that allows bookmarks, which the apiserver sends
// about once a minute, is ended when its reader has waited
// Options.IdleTimeout for a byte (90 seconds by default, against about 45
// for client-go's HTTP/2 pings), and is watched again. A watch without
// bookmarks on a connection that died without a word ends when TCP
// keep-alive notices, or at the watch's timeout.
package watchconn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// ErrUnsupported reports a *rest.Config whose watches Transport cannot
// move to HTTP/1.1: one with its own Transport (whose protocols the config
// does not choose), or whose TLS config offers protocols but not
// HTTP/1.1.
var ErrUnsupported = errors.New("watchconn: cannot send this config's watches over HTTP/1.1")

// Options are the options of Transport. The zero value gives the
// defaults.
type Options struct {
	// IdleTimeout ends a watch that allows bookmarks
	// (allowWatchBookmarks=true, as informers ask) when its reader has
	// waited this long for a byte: no event and no bookmark came, so the
	// connection or the server is taken for dead (see idle.go). Its read
	// returns an error wrapping ErrIdle, a timeout, after which an informer
	// watches again from the last resource version it saw. A watch request
	// that allows bookmarks and gets no response for this long is canceled
	// with such an error. Zero:
	// DefaultIdleTimeout. Negative: never; such a watch then ends as one
	// without bookmarks does. A timeout under the minute between the
	// apiserver's bookmarks ends every watch of an object that does not
	// change for that long, to be watched again.
	IdleTimeout time.Duration
}

// Transport returns a RoundTripper that sends watch requests (IsWatch: as
// client-go's Watch and a watch-list request send them) over an HTTP/1.1 transport made from cfg, and every
// other request over rt (http.DefaultTransport if nil). The HTTP/1.1
// transport is client-go's for cfg with HTTP/1.1 as its only protocol: the
// same credentials, TLS, proxy, dialer and wrappers; client-go caches it, so
// the configs that differ in nothing else share its connections.
//
// Its CloseIdleConnections closes the idle connections of both transports;
// CloseIdleWatchConnections those of the HTTP/1.1 one alone, for a caller
// that does not own rt.
func Transport(cfg *rest.Config, rt http.RoundTripper, o Options) (*Splitter, error) {
	if cfg == nil {
		return nil, fmt.Errorf("%w: nil *rest.Config", ErrUnsupported)
	}
	if cfg.Transport != nil {
		return nil, fmt.Errorf("%w: it sets its own Transport", ErrUnsupported)
	}
	if p := cfg.TLSClientConfig.NextProtos; len(p) > 0 && !slices.Contains(p, "http/1.1") {
		return nil, fmt.Errorf("%w: its TLS config offers %q only", ErrUnsupported, p)
	}
	h1 := rest.CopyConfig(cfg)
	h1.TLSClientConfig.NextProtos = []string{"http/1.1"}
	watches, err := rest.TransportFor(h1)
	if err != nil {
		return nil, fmt.Errorf("watchconn: HTTP/1.1 transport: %w", err)
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	idle := o.IdleTimeout
	if idle == 0 {
		idle = DefaultIdleTimeout
	}
	return &Splitter{watches: watches, rest: rt, idle: idle, clock: realClock{}}, nil
}

// Splitter is the RoundTripper Transport returns.
type Splitter struct {
	watches, rest http.RoundTripper
	idle          time.Duration // a watch's idle timeout; not positive: none
	clock         clock
}

// RoundTrip sends req over the HTTP/1.1 transport if it is a watch, and
// over the other one if not. A watch that allows bookmarks is canceled if
// its response does not come within the idle timeout, and its body ends
// when its reader has waited that long for a byte.
func (s *Splitter) RoundTrip(req *http.Request) (*http.Response, error) {
	watch, bookmarks := kind(req)
	if !watch {
		return s.rest.RoundTrip(req)
	}
	if !bookmarks || s.idle <= 0 {
		return s.watches.RoundTrip(req)
	}
	// The request is canceled if its response does not come within the
	// idle timeout; its context lives until its body is closed.
	ctx, cancel := context.WithCancel(req.Context())
	timer := s.clock.AfterFunc(s.idle, cancel)
	resp, err := s.watches.RoundTrip(req.WithContext(ctx))
	if !timer.Stop() {
		if err == nil {
			resp.Body.Close()
		}
		cancel()
		return nil, &idleError{path: req.URL.Path, idle: s.idle, headers: true}
	}
	switch {
	case err != nil:
		cancel()
	case resp.StatusCode == http.StatusOK:
		// It logs through the request's logger: the informer's, given to
		// its Run (klog.FromContext).
		resp.Body = newIdleBody(resp.Body, req.URL.Path, s.idle, s.clock, klog.FromContext(req.Context()), cancel)
	default:
		resp.Body = closeFunc{resp.Body, cancel}
	}
	return resp, err
}

// IsWatch reports whether req is a watch request: a GET whose query sets
// watch to true, as the apiserver reads it (any value but "0" or "false",
// in any case, even an empty one).
func IsWatch(req *http.Request) bool {
	watch, _ := kind(req)
	return watch
}

// kind reports whether req is a watch request, and whether it allows
// bookmarks.
func kind(req *http.Request) (watch, bookmarks bool) {
	if req.Method != http.MethodGet || req.URL == nil {
		return false, false
	}
	q := req.URL.Query()
	if !queryBool(q, "watch") {
		return false, false
	}
	return true, queryBool(q, "allowWatchBookmarks")
}

// queryBool reads the boolean parameter key of q as the apiserver reads
// its list options' (runtime.Convert_Slice_string_To_bool): absent, "0"
// and "false" in any case are false, and any other first value true.
func queryBool(q url.Values, key string) bool {
	v, ok := q[key]
	return ok && len(v) > 0 && v[0] != "0" && !strings.EqualFold(v[0], "false")
}

// CloseIdleConnections closes the idle connections of both transports.
func (s *Splitter) CloseIdleConnections() {
	s.CloseIdleWatchConnections()
	utilnet.CloseIdleConnectionsFor(s.rest)
}

// CloseIdleWatchConnections closes the idle connections of the HTTP/1.1
// transport alone.
func (s *Splitter) CloseIdleWatchConnections() {
	utilnet.CloseIdleConnectionsFor(s.watches)
}
