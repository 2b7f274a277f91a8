package wire

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// gzipWatchServer serves a JSON watch of one ConfigMap event, compressed
// as the apiserver compresses: a watch-list request (sendInitialEvents)
// from a client that accepts gzip, and nothing else.
func gzipWatchServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev := `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"5"}}}` + "\n"
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("sendInitialEvents") == "true" && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			fmt.Fprint(gz, ev)
			gz.Close()
			return
		}
		fmt.Fprint(w, ev)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// configMapSource returns a Source of the ConfigMaps of namespace ns at
// the server at url, its requests sent through rt.
func configMapSource(t *testing.T, url string, rt http.RoundTripper, dec *Decoder[*corev1.ConfigMap], protobuf bool) *Source[*corev1.ConfigMap] {
	t.Helper()
	cfg := &rest.Config{Host: url, ContentConfig: rest.ContentConfig{
		GroupVersion:         &schema.GroupVersion{Version: "v1"},
		NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
	}, APIPath: "/api"}
	client, err := rest.RESTClientForConfigAndClient(cfg, &http.Client{Transport: rt})
	if err != nil {
		t.Fatal(err)
	}
	return NewSource(client, "configmaps", "ns", dec, SourceOptions[*corev1.ConfigMap]{Protobuf: protobuf})
}

// TestRecordEncoding: a watch whose request went through RecordEncoding
// says it is better replaced after its initial events exactly when the
// server compressed it, and decodes the same events either way; without
// RecordEncoding it never says so. A client that does not accept gzip gets
// nothing compressed.
func TestRecordEncoding(t *testing.T) {
	srv := gzipWatchServer(t)
	dec, err := NewDecoder[*corev1.ConfigMap, *corev1.ConfigMap](Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		record      bool
		inflate     bool // RecordEncodingInflating
		noGzip      bool
		watchList   bool
		wantReplace bool
	}{
		{name: "watch-list, recorded", record: true, watchList: true, wantReplace: true},
		{name: "watch-list, inflated by the recorder", record: true, inflate: true, watchList: true, wantReplace: true},
		{name: "plain watch, inflating recorder", record: true, inflate: true},
		{name: "plain watch, recorded", record: true},
		{name: "watch-list, not recorded", watchList: true},
		{name: "watch-list, compression disabled", record: true, noGzip: true, watchList: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.DisableCompression = tc.noGzip
			t.Cleanup(tr.CloseIdleConnections)
			var rt http.RoundTripper = tr
			switch {
			case tc.inflate:
				rt = RecordEncodingInflating(rt)
			case tc.record:
				rt = RecordEncoding(rt)
			}
			src := configMapSource(t, srv.URL, rt, dec, false)
			opts := metav1.ListOptions{}
			if tc.watchList {
				opts.SendInitialEvents = new(bool)
				*opts.SendInitialEvents = true
			}
			w, err := src.Watch(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			got := w.(interface{ ReplaceAfterInitialEvents() bool }).ReplaceAfterInitialEvents()
			if got != tc.wantReplace {
				t.Errorf("ReplaceAfterInitialEvents() = %v, want %v", got, tc.wantReplace)
			}
			ev, ok := w.(interface{ NextEvent() (watch.Event, bool) }).NextEvent()
			if !ok || ev.Type != watch.Added {
				t.Fatalf("first event %v, %v; want ADDED", ev.Type, ok)
			}
			if cm := ev.Object.(*corev1.ConfigMap); cm.Name != "a" || cm.ResourceVersion != "5" {
				t.Errorf("decoded %s/%s at %s, want ns/a at 5", cm.Namespace, cm.Name, cm.ResourceVersion)
			}
		})
	}
}

// protobufWatchListServer serves a protobuf watch-list stream of n
// ConfigMaps of size bytes of data each and the bookmark ending the initial
// events, then holds the stream open until the request ends. It compresses
// as the apiserver does (a watch-list request from a client that accepts
// gzip: a gzip member per event, flushed before it is closed, so that a
// reader has all of an event before the next member begins); over HTTP/2
// when http2.
func protobufWatchListServer(t *testing.T, n, size int, http2 bool) *httptest.Server {
	t.Helper()
	var frames [][]byte
	for i := range n {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: "ns", ResourceVersion: "5"},
			Data:       map[string]string{"d": strings.Repeat("x", size)},
		}
		raw, err := cm.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, frameOf(t, string(watch.Added), "ConfigMap", raw))
	}
	end := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "5", Annotations: map[string]string{initialEventsEnd: "true"}}}
	raw, err := end.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	frames = append(frames, frameOf(t, string(watch.Bookmark), "ConfigMap", raw))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
		if r.URL.Query().Get("sendInitialEvents") == "true" && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			for _, f := range frames {
				gz := gzip.NewWriter(w)
				gz.Write(f)
				gz.Flush()
				gz.Close()
			}
		} else {
			for _, f := range frames {
				w.Write(f)
			}
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	srv.EnableHTTP2 = http2
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// TestReplaceAfterInitialEventsBySize: a compressed watch-list stream is
// kept past its initial events only over HTTP/2 and when its objects
// averaged largeObject bytes of protobuf or more; before the initial
// events have ended it answers as for small objects, and an uncompressed
// stream is never replaced.
func TestReplaceAfterInitialEventsBySize(t *testing.T) {
	dec, err := NewDecoder[*corev1.ConfigMap, *corev1.ConfigMap](Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		n, size     int
		http2       bool
		noGzip      bool
		wantReplace bool
	}{
		{name: "HTTP/2, large objects", n: 3, size: 2 * largeObject, http2: true},
		{name: "HTTP/2, objects of the threshold's size", n: 3, size: largeObject, http2: true},
		{name: "HTTP/2, small objects", n: 3, size: 100, http2: true, wantReplace: true},
		{name: "HTTP/2, just below the threshold", n: 3, size: largeObject - 200, http2: true, wantReplace: true},
		{name: "HTTP/2, no objects", http2: true, wantReplace: true},
		{name: "HTTP/1.1, large objects", n: 3, size: 2 * largeObject, wantReplace: true},
		{name: "HTTP/2, large objects, not compressed", n: 3, size: 2 * largeObject, http2: true, noGzip: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, record := range recorders {
				if tc.noGzip && record.inflates {
					continue // it asks for gzip whatever the transport does
				}
				t.Run(record.name, func(t *testing.T) {
					replaceAfterInitialEvents(t, dec, record.wrap, tc.n, tc.size, tc.http2, tc.noGzip, tc.wantReplace)
				})
			}
		})
	}
}

// recorders are RecordEncoding and RecordEncodingInflating, which the
// tests of the encodings run with each.
var recorders = []struct {
	name     string
	wrap     func(http.RoundTripper) http.RoundTripper
	inflates bool
}{
	{"RecordEncoding", RecordEncoding, false},
	{"RecordEncodingInflating", RecordEncodingInflating, true},
}

// replaceAfterInitialEvents is a case of TestReplaceAfterInitialEventsBySize
// through the recorder record.
func replaceAfterInitialEvents(t *testing.T, dec *Decoder[*corev1.ConfigMap], record func(http.RoundTripper) http.RoundTripper, n, size int, http2, noGzip, wantReplace bool) {
	srv := protobufWatchListServer(t, n, size, http2)
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.DisableCompression = noGzip
	t.Cleanup(tr.CloseIdleConnections)
	src := configMapSource(t, srv.URL, record(tr), dec, true)
	sendInitial := true
	w, err := src.Watch(t.Context(), metav1.ListOptions{SendInitialEvents: &sendInitial, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	replace := w.(interface{ ReplaceAfterInitialEvents() bool }).ReplaceAfterInitialEvents
	if got := replace(); got != !noGzip {
		t.Errorf("before the initial events: ReplaceAfterInitialEvents() = %v, want %v", got, !noGzip)
	}
	next := w.(interface{ NextEvent() (watch.Event, bool) }).NextEvent
	for i := 0; ; i++ {
		ev, ok := next()
		if !ok {
			t.Fatalf("the stream ended after %d events, before its bookmark", i)
		}
		if ev.Type == watch.Bookmark {
			if i != n {
				t.Fatalf("bookmark after %d events, want %d", i, n)
			}
			break
		}
		if cm := ev.Object.(*corev1.ConfigMap); ev.Type != watch.Added || len(cm.Data["d"]) != size {
			t.Fatalf("event %d: %s of %d bytes of data, want ADDED of %d", i, ev.Type, len(cm.Data["d"]), size)
		}
	}
	if got := replace(); got != wantReplace {
		t.Errorf("after the initial events: ReplaceAfterInitialEvents() = %v, want %v", got, wantReplace)
	}
}

// roundTripFunc is an http.RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRecordEncodingInflating: the recorder asks for gzip on a Source's
// watch, and on nothing else, leaves a request that names its own
// Accept-Encoding as it is, and hands the watch its response inflated, as
// a transport does with the gzip it asked for; a stream that is not gzip
// comes through as it is.
func TestRecordEncodingInflating(t *testing.T) {
	const text = "the body of the response, the body"
	var compressed bytes.Buffer
	gz := gzip.NewWriter(&compressed)
	gz.Write([]byte(text))
	gz.Close()
	var asked string
	rt := RecordEncodingInflating(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		asked = r.Header.Get("Accept-Encoding")
		resp := &http.Response{StatusCode: 200, ProtoMajor: 2, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(text)), ContentLength: int64(len(text))}
		if asked == "gzip" {
			resp.Header.Set("Content-Encoding", "gzip")
			resp.Header.Set("Content-Length", fmt.Sprint(compressed.Len()))
			resp.Body = io.NopCloser(bytes.NewReader(compressed.Bytes()))
			resp.ContentLength = int64(compressed.Len())
		}
		return resp, nil
	}))
	for _, tc := range []struct {
		name       string
		watch      bool   // the request is a Source's watch
		own        string // the request's own Accept-Encoding
		wantAsked  string
		compressed bool
	}{
		{name: "a Source's watch", watch: true, wantAsked: "gzip", compressed: true},
		{name: "another request", wantAsked: ""},
		{name: "a watch naming its own encoding", watch: true, own: "identity", wantAsked: "identity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var enc streamEncoding
			ctx := t.Context()
			if tc.watch {
				ctx = withEncoding(ctx, &enc)
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://example.invalid/api/v1/pods?watch=true", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.own != "" {
				req.Header.Set("Accept-Encoding", tc.own)
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if asked != tc.wantAsked {
				t.Errorf("the transport was asked for %q, want %q", asked, tc.wantAsked)
			}
			if req.Header.Get("Accept-Encoding") != tc.own {
				t.Errorf("the caller's request was changed: Accept-Encoding %q", req.Header.Get("Accept-Encoding"))
			}
			if string(body) != text {
				t.Errorf("body %q, want %q", body, text)
			}
			if tc.compressed != (resp.Uncompressed && resp.Header.Get("Content-Encoding") == "" && resp.ContentLength == -1) {
				t.Errorf("compressed %v: Uncompressed %v, Content-Encoding %q, ContentLength %d", tc.compressed, resp.Uncompressed, resp.Header.Get("Content-Encoding"), resp.ContentLength)
			}
			if enc.compressed != tc.compressed {
				t.Errorf("recorded compressed %v, want %v", enc.compressed, tc.compressed)
			}
		})
	}
}
