package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// checkDecodeError fails the test unless err is nil or wraps ErrTruncated
// or ErrMalformed, and wraps neither io.EOF nor io.ErrUnexpectedEOF, which
// a watch or a list would take for a cut connection and retry quietly.
func checkDecodeError(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrMalformed) {
		t.Fatalf("%s: error %q (%T) wraps neither ErrTruncated nor ErrMalformed", what, err, err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("%s: error %q wraps io.EOF or io.ErrUnexpectedEOF: it would be taken for the end of a stream", what, err)
	}
}

// badPods returns Pods whose bytes the generated decoder refuses, each in
// a way of its own: a field type's own Unmarshal that fails (metav1.Time's,
// resource.Quantity's) and a message cut short.
func badPods(t testing.TB) map[string][]byte {
	t.Helper()
	// A Pod named p created at the given metav1.Time bytes.
	created := func(ts ...byte) []byte {
		meta := append([]byte{1<<3 | 2, 1, 'p', 8<<3 | 2, byte(len(ts))}, ts...)
		return append([]byte{1<<3 | 2, byte(len(meta))}, meta...)
	}
	limited, err := (&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string][]byte{
		"timestamp cut inside":        created(1<<3|wireVarint, 0x80), // seconds: a varint without its end
		"timestamp illegal wire type": created(3<<3 | 7),
		"timestamp wrong wire type":   created(1<<3|2, 0),
		"quantity not a quantity":     bytes.Replace(limited, []byte("100m"), []byte("1x0m"), 1),
		"message cut short":           limited[:len(limited)-3],
	}
	for name, b := range bad {
		if err := new(corev1.Pod).Unmarshal(b); err == nil {
			t.Fatalf("%s: the generated decoder accepts it", name)
		}
	}
	return bad
}

// TestDecodeErrorsWrapSentinels: every error of the decoding entry points
// wraps ErrTruncated or ErrMalformed, those of a field type's own
// Unmarshal included (they passed through as they were: "unexpected EOF",
// which a list or a watch took for a cut connection, "illegal wireType",
// a bad Quantity).
func TestDecodeErrorsWrapSentinels(t *testing.T) {
	decs := newPodDecoders(t)
	full, slim := decs.full, decs.slim
	// Where each error is: a Container's path was that of the first field
	// of its type planned (InitContainers), whose plan the others share.
	paths := map[string][2]string{
		"timestamp cut inside":        {"ObjectMeta.CreationTimestamp", "Meta.CreationTimestamp"},
		"timestamp illegal wire type": {"ObjectMeta.CreationTimestamp", "Meta.CreationTimestamp"},
		"timestamp wrong wire type":   {"ObjectMeta.CreationTimestamp", "Meta.CreationTimestamp"},
		"quantity not a quantity":     {"Spec.Containers.Resources.Limits", "Spec.Containers.Resources.Limits"},
	}
	for name, b := range badPods(t) {
		t.Run(name, func(t *testing.T) {
			_, err := full.Protobuf(b)
			if err == nil {
				t.Fatal("Protobuf accepted it")
			}
			checkDecodeError(t, "Protobuf", err)
			var de *DecodeError
			if want, ok := paths[name]; ok && (!errors.As(err, &de) || de.Path != want[0]) {
				t.Errorf("Protobuf: %v, want a *DecodeError at %s", err, want[0])
			}
			_, err = slim.Protobuf(b)
			checkDecodeError(t, "Protobuf of a projection", err)
			if want, ok := paths[name]; ok && (!errors.As(err, &de) || de.Path != want[1]) {
				t.Errorf("Protobuf of a projection: %v, want a *DecodeError at %s", err, want[1])
			}
			checkDecodeError(t, "ProtobufInto", full.ProtobufInto(b, &corev1.Pod{}))
			body := listOf(t, b)
			decode := func(item []byte) error { _, err := full.Protobuf(item); return err }
			_, err = ListItems(body, decode)
			checkDecodeError(t, "ListItems", err)
			_, err = ListItemsFrom(bufio.NewReader(bytes.NewReader(body)), decode)
			checkDecodeError(t, "ListItemsFrom", err)
			d := newEventDecoder(&Source[*corev1.Pod]{dec: full}, io.NopCloser(bytes.NewReader(frameOf(t, "ADDED", "Pod", b))))
			_, _, err = d.Decode()
			checkDecodeError(t, "a watch event", err)
		})
	}
	for name, b := range map[string][]byte{
		"JSON syntax":      []byte(`{"metadata":{]}`),
		"JSON type":        []byte(`{"metadata":{"name":1}}`),
		"JSON quantity":    []byte(`{"spec":{"containers":[{"resources":{"limits":{"cpu":"1x0m"}}}]}}`),
		"JSON time":        []byte(`{"metadata":{"creationTimestamp":"yesterday"}}`),
		"JSON cut":         []byte(`{"metadata":{"name":"p"`),
		"protobuf to JSON": limitedPod(t),
	} {
		_, err := full.JSON(b)
		if err == nil {
			t.Errorf("%s: JSON accepted it", name)
		}
		checkDecodeError(t, name, err)
		_, err = slim.JSON(b)
		checkDecodeError(t, name+", projection", err)
	}
	js := `{"type":"ADDED","object":{"metadata":{]}}` + "\n"
	_, _, err := newEventDecoder(&Source[*corev1.Pod]{dec: full}, io.NopCloser(bytes.NewReader([]byte(js)))).Decode()
	checkDecodeError(t, "a JSON watch stream that is not JSON", err)
}

func limitedPod(t testing.TB) []byte {
	b, err := (&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// envelope returns the protobuf body of raw, of kind, with the magic
// prefix.
func envelope(t testing.TB, kind string, raw []byte) []byte {
	t.Helper()
	u, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: kind}, Raw: raw}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(append([]byte{}, protobufMagic...), u...)
}

// listOf returns the protobuf body of a PodList of the given item bytes.
func listOf(t testing.TB, items ...[]byte) []byte {
	t.Helper()
	raw := []byte{1<<3 | 2, 0} // an empty ListMeta
	for _, it := range items {
		raw = append(binary.AppendUvarint(append(raw, 2<<3|2), uint64(len(it))), it...)
	}
	return envelope(t, "PodList", raw)
}

// frameOf returns a protobuf watch frame of an event of typ whose object
// is raw, of kind.
func frameOf(t testing.TB, typ, kind string, raw []byte) []byte {
	t.Helper()
	ev, err := (&metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: envelope(t, kind, raw)}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(ev))), ev...)
}

// TestListBodiesClientGoRefuses: a body that is only the magic prefix
// (client-go: "empty body"), an envelope without a list, and a list or
// envelope field of the wrong wire type are ErrMalformed for both list
// readers (ListItems read the first two as an empty list, and both skipped
// fields of the wrong wire type).
func TestListBodiesClientGoRefuses(t *testing.T) {
	pod := limitedPod(t)
	item := binary.AppendUvarint([]byte{2<<3 | 2}, uint64(len(pod)))
	item = append(item, pod...)
	for name, body := range map[string][]byte{
		"magic only":                  []byte("k8s\x00"),
		"no list":                     append([]byte("k8s\x00"), 1<<3|2, 0),
		"items as a varint":           envelope(t, "PodList", append(append([]byte{}, item...), 2<<3|wireVarint, 1)),
		"metadata as a varint":        envelope(t, "PodList", append(append([]byte{}, item...), 1<<3|wireVarint, 1)),
		"metadata as fixed32":         envelope(t, "PodList", append(append([]byte{}, item...), 1<<3|5, 1, 2, 3, 4)),
		"raw as a varint":             append(append([]byte("k8s\x00"), 2<<3|wireVarint, 1), envelope(t, "PodList", item)[4:]...),
		"kind as a varint":            append([]byte("k8s\x00"), 1<<3|2, 2, 2<<3|wireVarint, 1, 2<<3|2, 0),
		"content type as a varint":    append(envelope(t, "PodList", item), 4<<3|wireVarint, 1),
		"content encoding as fixed64": append(envelope(t, "PodList", item), 3<<3|1, 1, 2, 3, 4, 5, 6, 7, 8),
	} {
		t.Run(name, func(t *testing.T) {
			fromBytes, fromStream, _, _, errBytes, errStream := collect(body)
			if !errors.Is(errBytes, ErrMalformed) {
				t.Errorf("ListItems: %d items, error %v; want ErrMalformed", len(fromBytes), errBytes)
			}
			if !errors.Is(errStream, ErrMalformed) {
				t.Errorf("ListItemsFrom: %d items, error %v; want ErrMalformed", len(fromStream), errStream)
			}
			// client-go reads an envelope without a list as an empty
			// list; the API server never sends one, and both readers
			// refuse it rather than empty a cache.
			if _, _, err := clientGoList(body); err == nil && name != "no list" {
				t.Errorf("client-go's decoder accepts it")
			}
		})
	}
}

// clientGoList decodes body as client-go's typed client decodes a LIST
// response of pods.
func clientGoList(body []byte) (*corev1.PodList, *schema.GroupVersionKind, error) {
	d := runtime.WithoutVersionDecoder{Decoder: protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)}
	list := &corev1.PodList{}
	obj, gvk, err := d.Decode(body, nil, list)
	if err != nil {
		return nil, gvk, err
	}
	l, ok := obj.(*corev1.PodList)
	if !ok {
		return nil, gvk, errors.New("not a PodList")
	}
	return l, gvk, nil
}

// TestWatchFrameFieldsOfWrongWireType: a watch frame whose type, object or
// raw object is not length-delimited is ErrMalformed, as the generated
// decoder refuses it (such fields were skipped, and the frame read as an
// event without them).
func TestWatchFrameFieldsOfWrongWireType(t *testing.T) {
	obj := envelope(t, "Pod", limitedPod(t))
	raw := append(binary.AppendUvarint([]byte{1<<3 | 2}, uint64(len(obj))), obj...)
	object := append(binary.AppendUvarint([]byte{2<<3 | 2}, uint64(len(raw))), raw...)
	typ := []byte{1<<3 | 2, 5, 'A', 'D', 'D', 'E', 'D'}
	for name, ev := range map[string][]byte{
		"type as a varint":      append(append([]byte{1<<3 | wireVarint, 1}, typ...), object...),
		"object as a varint":    append(append(append([]byte{}, typ...), object...), 2<<3|wireVarint, 1),
		"raw object as fixed32": append(append(append([]byte{}, typ...), 2<<3|2, byte(len(raw)+5), 1<<3|5, 1, 2, 3, 4), raw...),
	} {
		if err := new(metav1.WatchEvent).Unmarshal(ev); err == nil {
			t.Errorf("%s: the generated decoder accepts it", name)
		}
		frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(ev))), ev...)
		if _, _, err := NewFrameReader(bytes.NewReader(frame)).Next(); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}

// watchBoth serves body, with contentType, to a watch of pods through
// client-go's typed client and through a Source, and returns the events
// each gave until its stream ended.
func watchBoth(t *testing.T, contentType string, body []byte) (clientGo, ours []watch.Event) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL, APIPath: "/api", ContentConfig: rest.ContentConfig{
		GroupVersion: &schema.GroupVersion{Version: "v1"}, NegotiatedSerializer: scheme.Codecs.WithoutConversion()}}
	client, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cw, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Pods("ns").Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cw.Stop()
	for ev := range cw.ResultChan() {
		clientGo = append(clientGo, ev)
	}
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewSource(client, "pods", "ns", d, SourceOptions[*corev1.Pod]{Protobuf: true}).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		ours = append(ours, ev)
	}
	return clientGo, ours
}

// TestWatchErrorEventsMatchClientGo: an ERROR event's Status, sent by the
// server in JSON or protobuf, is what client-go's watch gives (JSON kept
// its Kind "Status" and APIVersion "v1"), and an event whose object's own
// Unmarshal fails ends the watch with an ERROR event as client-go's does
// (it ended quietly, as if the connection had been cut).
func TestWatchErrorEventsMatchClientGo(t *testing.T) {
	status := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Message: "too old resource version", Reason: metav1.StatusReasonExpired, Code: http.StatusGone}
	st, err := status.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	type watchCase struct {
		contentType string
		body        []byte
		same        bool // the events' objects equal client-go's, not only their types
	}
	const protobufWatch = "application/vnd.kubernetes.protobuf;stream=watch"
	cases := map[string]watchCase{
		"JSON status": {"application/json", []byte(`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
			`"message":"too old resource version","reason":"Expired","code":410}}` + "\n"), true},
		"protobuf status": {protobufWatch, frameOf(t, "ERROR", "Status", st), true},
	}
	for name, b := range badPods(t) {
		// A good event, then the bad one: client-go's ERROR event says
		// why in words of its own.
		cases["protobuf, "+name] = watchCase{protobufWatch, append(frameOf(t, "ADDED", "Pod", limitedPod(t)), frameOf(t, "MODIFIED", "Pod", b)...), false}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want, got := watchBoth(t, tc.contentType, tc.body)
			types := func(evs []watch.Event) (out []watch.EventType) {
				for _, ev := range evs {
					out = append(out, ev.Type)
				}
				return out
			}
			if !cmp.Equal(types(want), types(got)) {
				t.Fatalf("events %v, client-go's %v", types(got), types(want))
			}
			for i := range want {
				if tc.same || want[i].Type != watch.Error {
					if d := cmp.Diff(want[i].Object, got[i].Object); d != "" {
						t.Errorf("event %d's object differs from client-go's (-client-go +ours):\n%s", i, d)
					}
				}
			}
		})
	}
}

// TestPeekProtobufMetaWrongWireType: PeekProtobufMeta refuses an object
// whose metadata, or its name, namespace or resourceVersion, is not
// length-delimited, as the generated decoder does (they were skipped, and
// an object read without them).
func TestPeekProtobufMetaWrongWireType(t *testing.T) {
	for name, b := range map[string][]byte{
		"metadata as a varint":        {1<<3 | wireVarint, 1},
		"name as a varint":            {1<<3 | 2, 2, 1<<3 | wireVarint, 1},
		"namespace as fixed32":        {1<<3 | 2, 5, 3<<3 | 5, 1, 2, 3, 4},
		"resourceVersion as a varint": {1<<3 | 2, 2, 6<<3 | wireVarint, 1},
	} {
		if err := new(corev1.Pod).Unmarshal(b); err == nil {
			t.Errorf("%s: the generated decoder accepts it", name)
		}
		if ref, err := PeekProtobufMeta(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %+v, %v; want ErrMalformed", name, ref, err)
		}
	}
}

// TestProtobufIntoNil: ProtobufInto a nil object is a programming error
// that panics with a message, not a write through a nil pointer.
func TestProtobufIntoNil(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "ProtobufInto a nil *v1.Pod") {
			t.Errorf("recovered %v, want the nil *v1.Pod named", r)
		}
	}()
	_ = d.ProtobufInto(limitedPod(t), nil)
}

// TestFrameReaderAllocatesNothing: reading a watch stream's frames makes no
// allocation once the buffer has grown to the largest (a frame's length
// was read into an array of its own, allocated at every frame).
func TestFrameReaderAllocatesNothing(t *testing.T) {
	obj := envelope(t, "Pod", limitedPod(t))
	raw := append(binary.AppendUvarint([]byte{1<<3 | 2}, uint64(len(obj))), obj...)
	ev := append([]byte{1<<3 | 2, 8, 'M', 'O', 'D', 'I', 'F', 'I', 'E', 'D'}, 2<<3|2)
	ev = append(binary.AppendUvarint(ev, uint64(len(raw))), raw...)
	frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(ev))), ev...)
	const frames = 20
	stream := bytes.NewReader(bytes.Repeat(frame, frames+1))
	f := NewFrameReader(stream)
	if _, _, err := f.Next(); err != nil { // the buffer grows
		t.Fatal(err)
	}
	got := testing.AllocsPerRun(frames-1, func() {
		typ, object, err := f.Next()
		if err != nil || typ != "MODIFIED" || !bytes.Equal(object, obj) {
			t.Fatalf("Next = %q, %d bytes, %v; want MODIFIED and the object", typ, len(object), err)
		}
	})
	if got != 0 {
		t.Errorf("a frame read made %v allocations, want 0", got)
	}
}
