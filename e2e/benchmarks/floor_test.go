package benchmarks

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/internal/gunzip"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// The transport floor (impl=floor): what any informer on this transport pays at least. A
// consumer over the same rest.Config, HTTP/2 transport and protobuf content type as the
// informers, that lists and watches as they do and reads the stream frame by frame, decoding
// nothing: no object, no event, only the few bytes that say what kind of event a frame is and, to
// watch from the list, the list's resource version. Beside it, typed/floor and upstream/floor say
// how much of each informer's cost is its own.

// floorClient is a REST client of the core group for the floor, asking for protobuf as
// client-go's typed clients do.
func floorClient(cfg *rest.Config) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.APIPath = "/api"
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return rest.RESTClientFor(c)
}

// floorStream opens a watch of resource in ns with params, as the informers' watches ask for it
// (bookmarks, protobuf), and returns its body: frames of a 4-byte big-endian length and a
// metav1.WatchEvent.
func floorStream(ctx context.Context, rc *rest.RESTClient, resource, ns string, params map[string]string) (io.ReadCloser, error) {
	req := rc.Get().Namespace(ns).Resource(resource).Param("watch", "true").Param("allowWatchBookmarks", "true")
	for k, v := range params {
		req = req.Param(k, v)
	}
	return req.Stream(ctx)
}

// frameReader reads the frames of a protobuf watch stream into a buffer it reuses.
type frameReader struct {
	r   *bufio.Reader
	buf []byte
}

func newFrameReader(r io.Reader) *frameReader { return &frameReader{r: bufio.NewReaderSize(r, 64<<10)} }

// next returns the next frame, valid until the next call.
func (f *frameReader) next() ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(f.r, n[:]); err != nil {
		return nil, err
	}
	size := int(binary.BigEndian.Uint32(n[:]))
	if cap(f.buf) < size {
		f.buf = make([]byte, size)
	}
	f.buf = f.buf[:size]
	_, err := io.ReadFull(f.r, f.buf)
	return f.buf, err
}

// eventType returns the type of the metav1.WatchEvent frame (its field 1, a string), as bytes
// of frame: all the floor reads of an event.
func eventType(frame []byte) []byte {
	if len(frame) < 2 || frame[0] != 1<<3|2 || int(frame[1]) > len(frame)-2 || frame[1] >= 0x80 {
		return nil
	}
	return frame[2 : 2+int(frame[1])]
}

// floorListVersion lists resource in ns and returns the list's resource version, read from its
// ListMeta alone (the items are not decoded).
func floorListVersion(ctx context.Context, rc *rest.RESTClient, resource, ns string) (string, error) {
	body, err := rc.Get().Namespace(ns).Resource(resource).Do(ctx).Raw()
	if err != nil {
		return "", err
	}
	rv, err := listVersion(body)
	if err != nil {
		return "", fmt.Errorf("floor: the list's resource version: %w", err)
	}
	return rv, nil
}

// listVersion reads the resource version of a protobuf LIST response: the k8s\x00 magic, a
// runtime.Unknown whose raw (field 2) is the list, whose field 1 is its ListMeta, whose field 2
// is the resource version.
func listVersion(body []byte) (string, error) {
	if len(body) < 4 || string(body[:4]) != "k8s\x00" {
		return "", fmt.Errorf("not a protobuf response")
	}
	raw, err := field(body[4:], 2)
	if err != nil {
		return "", err
	}
	meta, err := field(raw, 1)
	if err != nil {
		return "", err
	}
	rv, err := field(meta, 2)
	return string(rv), err
}

// field returns the first length-delimited field num of the protobuf message b.
func field(b []byte, num uint64) ([]byte, error) {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, fmt.Errorf("bad key")
		}
		b = b[n:]
		switch key & 7 {
		case 0:
			_, n = binary.Uvarint(b)
			if n <= 0 {
				return nil, fmt.Errorf("bad varint")
			}
			b = b[n:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || int(l) > len(b)-n {
				return nil, fmt.Errorf("bad length")
			}
			v := b[n : n+int(l)]
			if key>>3 == num {
				return v, nil
			}
			b = b[n+int(l):]
		default:
			return nil, fmt.Errorf("wire type %d", key&7)
		}
	}
	return nil, fmt.Errorf("no field %d", num)
}

// floorWatcher is the floor of a watching informer: it lists, then watches from the list's
// version, and calls onEvent for each frame whose event type counts says it counts. As an
// informer does, it watches again from the last resource version it saw when the server ends
// the watch (it reads that version of each frame, a few fields deep, without decoding the
// object), and lists again after an ERROR event (a version too old): a round would otherwise
// miss every event after the end and wait out its timeout.
func floorWatcher(ctx context.Context, cfg *rest.Config, resource, ns string, counts func(typ []byte) bool, onEvent func()) (stop func(), err error) {
	rc, err := floorClient(cfg)
	if err != nil {
		return nil, err
	}
	rv, err := floorListVersion(ctx, rc, resource, ns)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	body, err := floorStream(ctx, rc, resource, ns, map[string]string{"resourceVersion": rv})
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := []byte(rv) // reused: a version kept costs no allocation per event
		for {
			relist := false
			_ = eachFrame(body, func(frame []byte) bool {
				typ := eventType(frame)
				if counts(typ) {
					onEvent()
				}
				if string(typ) == "ERROR" {
					relist = true
					return false
				}
				if v, err := eventVersion(frame); err == nil {
					last = append(last[:0], v...)
				}
				return true
			})
			for body = nil; body == nil; {
				if relist {
					if v, err := floorListVersion(ctx, rc, resource, ns); err == nil {
						last, relist = append(last[:0], v...), false
					}
				}
				if !relist {
					body, _ = floorStream(ctx, rc, resource, ns, map[string]string{"resourceVersion": string(last)})
				}
				if body == nil { // the server refused: try again shortly, unless stopped
					select {
					case <-ctx.Done():
						return
					case <-time.After(50 * time.Millisecond):
					}
				}
			}
		}
	}()
	return func() { cancel(); <-done }, nil
}

// eventVersion returns the resource version of the object of the metav1.WatchEvent frame: its
// field 2 (a RawExtension, whose field 1 holds the object's envelope: the k8s\x00 magic and a
// runtime.Unknown, whose field 2 is the object), the object's field 1 (its ObjectMeta), and
// that one's field 6.
func eventVersion(frame []byte) ([]byte, error) {
	ext, err := field(frame, 2)
	if err != nil {
		return nil, err
	}
	raw, err := field(ext, 1)
	if err != nil {
		return nil, err
	}
	if len(raw) < 4 || string(raw[:4]) != "k8s\x00" {
		return nil, fmt.Errorf("not a protobuf object")
	}
	obj, err := field(raw[4:], 2)
	if err != nil {
		return nil, err
	}
	meta, err := field(obj, 1)
	if err != nil {
		return nil, err
	}
	return field(meta, 6)
}

// eachFrame reads the frames of body and calls each with every frame until it returns false or
// the stream ends, and closes body; it returns the error that ended the stream, if each did not.
func eachFrame(body io.ReadCloser, each func(frame []byte) bool) error {
	defer body.Close()
	fr := newFrameReader(body)
	for {
		frame, err := fr.next()
		if err != nil {
			return err
		}
		if !each(frame) {
			return nil
		}
	}
}

// readFrames reads the frames of body in a goroutine of its own, and calls each with every
// frame's event type until it returns false or the stream ends; done is closed then, and
// *failed is the error that ended the stream, if each did not.
func readFrames(body io.ReadCloser, each func(typ []byte) bool) (done <-chan struct{}, failed *error) {
	ch, failed := make(chan struct{}), new(error)
	go func() {
		defer close(ch)
		*failed = eachFrame(body, func(frame []byte) bool { return each(eventType(frame)) })
	}()
	return ch, failed
}

// floorPods is the floor of BenchmarkColdStart: a watch-list stream of the Pods of ns, as the
// informers ask for one (sendInitialEvents, bookmarks, protobuf), read until the initial
// events have all come (the n objects and the bookmark that ends them), decoding nothing.
func floorPods(b fataler, cfg *rest.Config, ns string, n int) startFunc {
	return floorPodsOver(b, cfg, ns, n, false)
}

// floorPodsOwnInflater is floorPods whose stream is inflated by the library's inflater, as the
// factory's clients inflate theirs (wire.RecordEncodingInflating), not by compress/gzip in the
// HTTP transport: the floor of a client that inflates as ours does.
func floorPodsOwnInflater(b fataler, cfg *rest.Config, ns string, n int) startFunc {
	return floorPodsOver(b, cfg, ns, n, true)
}

// inflatingTransport asks for gzip itself and inflates the response with package gunzip.
type inflatingTransport struct{ rt http.RoundTripper }

func (t inflatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := t.rt.RoundTrip(req)
	if err == nil {
		gunzip.InflateResponse(resp)
	}
	return resp, err
}

func floorPodsOver(b fataler, cfg *rest.Config, ns string, n int, ownInflater bool) startFunc {
	return func(ctx context.Context) (synced func() bool, size func() int, stats func() informer.Stats, stop func()) {
		c := cfg
		if ownInflater {
			c = rest.CopyConfig(cfg)
			c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return inflatingTransport{rt} })
		}
		rc, err := floorClient(c)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(ctx)
		body, err := floorStream(ctx, rc, "pods", ns, map[string]string{
			"sendInitialEvents": "true", "resourceVersionMatch": string(metav1.ResourceVersionMatchNotOlderThan),
		})
		if err != nil {
			cancel()
			b.Fatal(err)
		}
		var objects int
		done, failed := readFrames(body, func(typ []byte) bool {
			switch string(typ) {
			case "ADDED":
				objects++
			case "BOOKMARK":
				return objects < n // the end of the initial events
			}
			return true
		})
		isDone := func() bool {
			select {
			case <-done:
				return true
			default:
				return false
			}
		}
		return isDone, func() int {
				<-done
				if *failed != nil {
					b.Fatal(fmt.Errorf("floor: %w after %s objects", *failed, strconv.Itoa(objects)))
				}
				return objects
			}, nil, func() {
				cancel()
				<-done
			}
	}
}
