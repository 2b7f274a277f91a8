package wire

import (
	"context"
	"net/http"

	"github.com/typedkube/informer/internal/gunzip"
)

// RecordEncoding returns rt (http.DefaultTransport if nil) wrapped so that the watches of a Source whose
// REST client sends its requests through it learn whether the server
// compressed their response (as the apiserver does with a watch-list
// response when the client accepts gzip: one gzip member per event), and
// over which protocol. Such a watch says through ReplaceAfterInitialEvents
// whether it is better replaced, once its initial events have come, by a
// plain watch, which the apiserver does not compress (see
// ReplaceAfterInitialEvents for when), and the informer's Reflector does
// so. The Factory's clients send their requests through it. Requests that
// are not a Source's pass through untouched.
func RecordEncoding(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport // as an http.Client with no Transport
	}
	return &encodingRecorder{rt: rt}
}

// RecordEncodingInflating is RecordEncoding that also inflates a Source's
// watches and lists itself: it asks for gzip on their requests, so that the
// transport leaves a compressed response as it came, and inflates it with
// an inflater of this module's, which takes about half the CPU
// compress/gzip's does on the apiserver's watch-list streams (a gzip member
// per event). Use it over a transport that would ask for gzip itself (a
// rest.Config without DisableCompression): it asks whatever that transport
// would do. The Factory's clients use it unless their rest.Config sets
// DisableCompression. (The apiserver compresses a list of more than 128
// KiB whole, as one member.) Requests that are not a Source's, and
// requests that name an Accept-Encoding of their own, pass through
// untouched.
func RecordEncodingInflating(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &encodingRecorder{rt: rt, inflate: true}
}

type encodingRecorder struct {
	rt      http.RoundTripper
	inflate bool // ask for gzip on a Source's watches and lists, and inflate them here
}

// streamEncoding is what a watch request learns of its response.
type streamEncoding struct {
	compressed bool // the transport inflated the body, or it is still gzip
	http2      bool // the response came over HTTP/2
}

type encodingKey struct{}

func (e *encodingRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	enc, ok := req.Context().Value(encodingKey{}).(*streamEncoding)
	asked := false
	if ok && e.inflate && req.Header.Get("Accept-Encoding") == "" && req.Header.Get("Range") == "" && req.Method != http.MethodHead {
		req = req.Clone(req.Context()) // a RoundTripper does not change its request
		req.Header.Set("Accept-Encoding", "gzip")
		asked = true
	}
	resp, err := e.rt.RoundTrip(req)
	if err != nil || resp == nil {
		return resp, err
	}
	if ok {
		if asked {
			gunzip.InflateResponse(resp)
		}
		enc.compressed = resp.Uncompressed || resp.Header.Get("Content-Encoding") == "gzip"
		enc.http2 = resp.ProtoMajor == 2
	}
	return resp, nil
}

// WrappedRoundTripper returns the wrapped RoundTripper, for apimachinery's
// utilnet.CloseIdleConnectionsFor and other unwrappers.
func (e *encodingRecorder) WrappedRoundTripper() http.RoundTripper { return e.rt }

// withEncoding returns ctx carrying enc, for an encodingRecorder to fill.
func withEncoding(ctx context.Context, enc *streamEncoding) context.Context {
	return context.WithValue(ctx, encodingKey{}, enc)
}
