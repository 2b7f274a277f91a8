package wire

import (
	"context"
	"net/http"
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
// are not a Source's watches pass through untouched.
func RecordEncoding(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport // as an http.Client with no Transport
	}
	return &encodingRecorder{rt: rt}
}

type encodingRecorder struct{ rt http.RoundTripper }

// streamEncoding is what a watch request learns of its response.
type streamEncoding struct {
	compressed bool // the transport inflated the body, or it is still gzip
	http2      bool // the response came over HTTP/2
}

type encodingKey struct{}

func (e *encodingRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := e.rt.RoundTrip(req)
	if err != nil || resp == nil {
		return resp, err
	}
	if enc, ok := req.Context().Value(encodingKey{}).(*streamEncoding); ok {
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
