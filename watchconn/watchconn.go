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
// per client. And HTTP/2's health checks do not cover these connections: a
// watch on a connection that died without a word (a partition, a peer gone)
// ends when TCP keep-alive notices, or at the watch's timeout, rather than
// after client-go's HTTP/2 ping timeout (about 45 seconds).
package watchconn

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// ErrUnsupported reports a *rest.Config whose watches Transport cannot
// move to HTTP/1.1: one with its own Transport (whose protocols the config
// does not choose), or whose TLS config offers protocols but not
// HTTP/1.1.
var ErrUnsupported = errors.New("watchconn: cannot send this config's watches over HTTP/1.1")

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
func Transport(cfg *rest.Config, rt http.RoundTripper) (*Splitter, error) {
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
	return &Splitter{watches: watches, rest: rt}, nil
}

// Splitter is the RoundTripper Transport returns.
type Splitter struct {
	watches, rest http.RoundTripper
}

// RoundTrip sends req over the HTTP/1.1 transport if it is a watch, and
// over the other one if not.
func (s *Splitter) RoundTrip(req *http.Request) (*http.Response, error) {
	if IsWatch(req) {
		return s.watches.RoundTrip(req)
	}
	return s.rest.RoundTrip(req)
}

// IsWatch reports whether req is a watch request: a GET whose query sets
// watch to true, as the apiserver reads it (strconv.ParseBool).
func IsWatch(req *http.Request) bool {
	if req.Method != http.MethodGet || req.URL == nil {
		return false
	}
	w, err := strconv.ParseBool(req.URL.Query().Get("watch"))
	return err == nil && w
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
