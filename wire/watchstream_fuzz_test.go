package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restwatch "k8s.io/client-go/rest/watch"
)

// event is a watch event or the error that ended a stream.
type event struct {
	typ watch.EventType
	obj runtime.Object
	err error
}

// clientGoStream returns the decoders client-go's watch of pods reads a
// response of mediaType with: of the objects, and of the body's frames.
func clientGoStream(t *testing.T, mediaType string, body []byte) (objects runtime.Decoder, frames streaming.Decoder) {
	t.Helper()
	neg := runtime.NewClientNegotiator(scheme.Codecs.WithoutConversion(), corev1.SchemeGroupVersion)
	objects, stream, framer, err := neg.StreamDecoder(mediaType, nil)
	if err != nil {
		t.Fatal(err)
	}
	return objects, streaming.NewDecoder(framer.NewFrameReader(io.NopCloser(bytes.NewReader(body))), stream)
}

// clientGoEvents decodes body as client-go's watch of pods decodes a
// response of mediaType, up to and including its first error.
func clientGoEvents(t *testing.T, mediaType string, body []byte) []event {
	t.Helper()
	objects, frames := clientGoStream(t, mediaType, body)
	return drain(restwatch.NewDecoder(frames, objects).Decode)
}

// rawPod returns the protobuf of the object of the protobuf watch
// stream body's event i, as client-go's watch reads its frames and
// envelopes, or nil.
func rawPod(t *testing.T, body []byte, i int) []byte {
	t.Helper()
	_, frames := clientGoStream(t, "application/vnd.kubernetes.protobuf", body)
	for j := 0; ; j++ {
		var ev metav1.WatchEvent
		if _, _, err := frames.Decode(nil, &ev); err != nil {
			return nil
		}
		if j < i {
			continue
		}
		raw, ok := bytes.CutPrefix(ev.Object.Raw, protobufMagic)
		var u runtime.Unknown
		if !ok || u.Unmarshal(raw) != nil {
			return nil
		}
		return u.Raw
	}
}

// ourEvents decodes body as a Source's watch of pods does, up to and
// including its first error.
func ourEvents(dec *Decoder[*corev1.Pod], body []byte) []event {
	return drain(newEventDecoder(&Source[*corev1.Pod]{dec: dec}, io.NopCloser(bytes.NewReader(body))).Decode)
}

// ourEventsWithPrevious decodes body as a Source with Previous does (see
// parts.go), over a cache that takes each ADDED and MODIFIED event's Pod
// and drops each DELETED one's, as an informer's store does.
func ourEventsWithPrevious(dec *Decoder[*corev1.Pod], body []byte) []event {
	cache := map[string]*corev1.Pod{}
	src := NewSource(nil, "pods", "", dec, SourceOptions[*corev1.Pod]{Previous: func(ref ObjectRef) (*corev1.Pod, bool) {
		p, ok := cache[string(ref.Namespace)+"/"+string(ref.Name)]
		return p, ok
	}})
	ed := newEventDecoder(src, io.NopCloser(bytes.NewReader(body)))
	return drain(func() (watch.EventType, runtime.Object, error) {
		typ, obj, err := ed.Decode()
		if p, ok := obj.(*corev1.Pod); ok && err == nil {
			switch key := p.Namespace + "/" + p.Name; typ {
			case watch.Added, watch.Modified:
				cache[key] = p
			case watch.Deleted:
				delete(cache, key)
			}
		}
		return typ, obj, err
	})
}

// sameEvents fails t unless got are the events of want: the same types and
// objects, and the same errors.
func sameEvents(t *testing.T, want, got []event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].typ != want[i].typ {
			t.Fatalf("event %d: %s, want %s", i, got[i].typ, want[i].typ)
		}
		if (got[i].err == nil) != (want[i].err == nil) || got[i].err != nil && got[i].err.Error() != want[i].err.Error() {
			t.Fatalf("event %d: error %v, want %v", i, got[i].err, want[i].err)
		}
		if d := cmp.Diff(want[i].obj, got[i].obj); d != "" {
			t.Fatalf("event %d (-want +got):\n%s", i, d)
		}
	}
}

// drain returns the events of decode up to and including its first error.
func drain(decode func() (watch.EventType, runtime.Object, error)) []event {
	var out []event
	for {
		typ, obj, err := decode()
		out = append(out, event{typ, obj, err})
		if err != nil {
			return out
		}
	}
}

// FuzzWatchStream reads arbitrary bytes as the body of a watch of pods,
// protobuf frames or JSON events: never a panic; every error is the end of
// the stream (io.EOF, or io.ErrUnexpectedEOF inside a frame) or wraps
// ErrTruncated or ErrMalformed; and every event client-go's watch decoder
// gives a Pod or the server's Status for, ours gives alike, until the
// first event client-go decodes otherwise (ours decodes every object as
// a Pod, whatever kind its envelope names). A Source with Previous, which
// takes the unchanged parts of MODIFIED and DELETED events from the
// objects of the events before them, gives the same events as one without.
func FuzzWatchStream(f *testing.F) {
	pod, err := benchPod(1).Marshal()
	if err != nil {
		f.Fatal(err)
	}
	st, err := (&metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonExpired, Code: 410}).Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append(frameOf(f, "ADDED", "Pod", pod), frameOf(f, "ERROR", "Status", st)...))
	f.Add(frameOf(f, "MODIFIED", "Pod", badPods(f)["quantity not a quantity"]))
	jsPod := benchPod(2)
	jsPod.ManagedFields = nil
	jsPod.Kind, jsPod.APIVersion = "Pod", "v1"
	js, err := json.Marshal(jsPod)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"type":"ADDED","object":` + string(js) + "}\n" +
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","code":410}}`))
	f.Add([]byte(`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{]}}`))
	// A realistic Pod added, given a status, relabelled and deleted:
	// every event after the add has parts to take.
	rp := testobj.RealisticPod("ns", 0, 1)
	var life []byte
	for i, typ := range []string{"ADDED", "MODIFIED", "MODIFIED", "DELETED"} {
		switch i {
		case 1:
			rp.Status.ContainerStatuses[0].RestartCount++
		case 2:
			rp.Labels["rollout"] = "2"
		}
		life = append(life, frameOf(f, typ, "Pod", marshalPod(f, rp))...)
	}
	f.Add(life)
	dec, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) == 0 {
			return
		}
		ours := ourEvents(dec, body)
		sameEvents(t, ours, ourEventsWithPrevious(dec, body))
		last := ours[len(ours)-1].err
		if !errors.Is(last, io.EOF) && !errors.Is(last, io.ErrUnexpectedEOF) {
			checkDecodeError(t, "a watch stream", last)
		}
		mediaType := "application/vnd.kubernetes.protobuf"
		if c := body[0]; c == '{' || c == ' ' || c == '\n' || c == '\r' || c == '\t' {
			mediaType = "application/json"
		}
		for i, want := range clientGoEvents(t, mediaType, body) {
			_, isStatus := want.obj.(*metav1.Status)
			_, isPod := want.obj.(*corev1.Pod)
			if want.err != nil || !(isPod && want.typ != watch.Error || isStatus && want.typ == watch.Error) {
				return
			}
			if i >= len(ours) || ours[i].err != nil {
				if mediaType != "application/json" && lenientEntry(rawPod(t, body, i), dec.plan) {
					return // accepted by the generated decoder's leniency only (see lenientEntry)
				}
				t.Fatalf("event %d: client-go decodes a %s %T, ours fails: %v", i, want.typ, want.obj, ours[len(ours)-1].err)
			}
			if ours[i].typ != want.typ {
				t.Fatalf("event %d: %s, client-go's %s", i, ours[i].typ, want.typ)
			}
			if d := cmp.Diff(want.obj, ours[i].obj); d != "" {
				t.Fatalf("event %d differs from client-go's (-client-go +ours):\n%s", i, d)
			}
		}
	})
}
