package kubetest

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Request is one HTTP request a client sent, as a RequestLog saw it.
type Request struct {
	Time   time.Time
	Method string
	Path   string // such as /api/v1/namespaces/ns/pods
	Query  url.Values
	Accept string // the Accept header: which encodings the client asked for
	// Status is the response's status code, or 0 if the round trip failed (Err is then set).
	Status int
	Err    error
	// Compressed: the server compressed the response body (gzip, which the transport inflated).
	Compressed bool
	// Proto is the protocol the response came over: "HTTP/2.0" or "HTTP/1.1".
	Proto string
}

// Watch reports whether r is a watch (a GET with watch=true or watch=1).
func (r Request) Watch() bool {
	w := r.Query.Get("watch")
	return r.Method == http.MethodGet && (w == "true" || w == "1")
}

// WatchList reports whether r asks for a watch-list stream (a watch with sendInitialEvents=true).
func (r Request) WatchList() bool { return r.Watch() && r.Query.Get("sendInitialEvents") == "true" }

// Resource is the last element of the path: the resource of a collection request (pods), the
// name of an object otherwise.
func (r Request) Resource() string { return path.Base(r.Path) }

// ListOf reports whether r is a LIST of resource (a GET of the collection, not a watch).
func (r Request) ListOf(resource string) bool {
	return r.Method == http.MethodGet && !r.Watch() && r.Resource() == resource
}

// WatchOf reports whether r is a watch of resource.
func (r Request) WatchOf(resource string) bool { return r.Watch() && r.Resource() == resource }

func (r Request) String() string {
	var b strings.Builder
	b.WriteString(r.Method + " " + r.Path)
	if len(r.Query) > 0 {
		b.WriteString("?" + r.Query.Encode())
	}
	if r.Err != nil {
		b.WriteString(" -> " + r.Err.Error())
	} else {
		b.WriteString(" -> " + http.StatusText(r.Status))
	}
	return b.String()
}

// RequestLog records the requests of the clients made from the configs it wrapped. It is safe
// for concurrent use.
type RequestLog struct {
	mu   sync.Mutex
	reqs []Request // guarded by mu
}

// Wrap returns a copy of cfg whose requests are recorded in l. A response is recorded when its
// headers arrive, so a watch is recorded when it starts.
func (l *RequestLog) Wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &logRoundTripper{rt: rt, log: l} })
	return cfg
}

// logRoundTripper records each round trip in log.
type logRoundTripper struct {
	rt  http.RoundTripper
	log *RequestLog
}

func (t *logRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	r := Request{Time: time.Now(), Method: req.Method, Path: req.URL.Path, Query: req.URL.Query(), Accept: req.Header.Get("Accept"), Err: err}
	if resp != nil {
		r.Status = resp.StatusCode
		r.Proto = resp.Proto
		r.Compressed = resp.Uncompressed || resp.Header.Get("Content-Encoding") == "gzip"
	}
	t.log.mu.Lock()
	t.log.reqs = append(t.log.reqs, r)
	t.log.mu.Unlock()
	return resp, err
}

// WrappedRoundTripper lets client-go's utilnet.CloseIdleConnectionsFor reach the transport.
func (t *logRoundTripper) WrappedRoundTripper() http.RoundTripper { return t.rt }

// Requests returns the requests recorded so far that match keep (all of them if keep is nil),
// in the order their responses came.
func (l *RequestLog) Requests(keep func(Request) bool) []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	if keep == nil {
		return slices.Clone(l.reqs)
	}
	var out []Request
	for _, r := range l.reqs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// Count returns how many recorded requests match keep.
func (l *RequestLog) Count(keep func(Request) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.reqs {
		if keep(r) {
			n++
		}
	}
	return n
}

// Reset forgets the requests recorded so far.
func (l *RequestLog) Reset() {
	l.mu.Lock()
	l.reqs = nil
	l.mu.Unlock()
}

// WatchesOverHTTP1 checks reqs against what watchconn does: each watch came over HTTP/1.1, and
// every other request over HTTP/2. It returns how many watches reqs hold, and a line for each
// request that came over another protocol.
func WatchesOverHTTP1(reqs []Request) (watches int, wrong []string) {
	for _, r := range reqs {
		want := "HTTP/2.0"
		if r.Watch() {
			want = "HTTP/1.1"
			watches++
		}
		if r.Proto != want {
			wrong = append(wrong, fmt.Sprintf("%v came over %q, want %s", r, r.Proto, want))
		}
	}
	return watches, wrong
}
