package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// checkGenerated decodes b with the generated Unmarshal of T and with a
// Decoder of *T, compares them, and returns the Decoder's.
func checkGenerated[T any, PT interface {
	*T
	Unmarshal([]byte) error
}](t *testing.T, b []byte) PT {
	t.Helper()
	want := PT(new(T))
	if err := want.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	d, err := NewDecoder[PT, PT](Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Protobuf(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("differs from the generated decoder (-want +got):\n%s", diff)
	}
	return got
}

// TestMapEntryValueTwice: a map entry whose value field comes twice takes
// the second, as the generated decoders do (ours merged the two: a list
// value appended, a message value merged fields).
func TestMapEntryValueTwice(t *testing.T) {
	// SubjectAccessReviewSpec.extra (5): {"k": ["a"], then ["b"]}
	e := []byte{0x0a, 1, 'k', 0x12, 3, 0x0a, 1, 'a', 0x12, 3, 0x0a, 1, 'b'}
	checkGenerated[authzv1.SubjectAccessReviewSpec](t, append([]byte{5<<3 | 2, byte(len(e))}, e...))
	// resource/v1 Device{name: "d", attributes (2): {"a": {int: 1}, then {string: "x"}}}
	e = []byte{0x0a, 1, 'a', 0x12, 2, 2 << 3, 1, 0x12, 3, 4<<3 | 2, 1, 'x'}
	checkGenerated[resourcev1.Device](t, append([]byte{0x0a, 1, 'd', 2<<3 | 2, byte(len(e))}, e...))
}

// TestListItemsFromLargeList: a LIST body larger than MaxItem (70 items of
// 1 MiB) is read an item at a time; only items are bounded (the whole list
// used to be, so a large cluster's LIST failed as malformed).
func TestListItemsFromLargeList(t *testing.T) {
	item, err := (&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p",
		Annotations: map[string]string{"big": strings.Repeat("x", 1<<20)}}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	const n = 70
	field := binary.AppendUvarint([]byte{2<<3 | 2}, uint64(len(item))) // PodList.items
	head := binary.AppendUvarint([]byte("k8s\x00\x12"), uint64(n*(len(field)+len(item))))
	rs := []io.Reader{bytes.NewReader(head)}
	for range n {
		rs = append(rs, bytes.NewReader(field), bytes.NewReader(item))
	}
	count := 0
	if _, err := ListItemsFrom(bufio.NewReader(io.MultiReader(rs...)), func([]byte) error { count++; return nil }); err != nil || count != n {
		t.Fatalf("%d items, err %v; want %d items", count, err, n)
	}
	// An item larger than MaxItem is still refused.
	big := binary.AppendUvarint([]byte("k8s\x00\x12"), MaxItem+100)
	big = binary.AppendUvarint(append(big, 2<<3|2), MaxItem+10)
	if _, err := ListItemsFrom(bufio.NewReader(bytes.NewReader(big)), func([]byte) error { return nil }); err == nil {
		t.Error("an item of more than MaxItem bytes was accepted")
	}
}

// TestJSONWatchNullObject: a JSON watch event whose object is null is a
// decoding error, as client-go's watch decoder reports it, not an ADDED
// event of an empty object.
func TestJSONWatchNullObject(t *testing.T) {
	want, got := watchBoth(t, "application/json", []byte(`{"type":"ADDED","object":null}`+"\n"))
	if len(got) == 0 || len(want) == 0 || got[0].Type != want[0].Type {
		t.Errorf("ours: %v; client-go's: %v", got, want)
	}
}

// TestJSONAppliesOptions: DropManagedFields and Annotations apply to a
// JSON-decoded object's own metadata as to a protobuf-decoded one's (JSON
// used to keep both: CRDs, served in JSON only, kept their managed fields).
func TestJSONAppliesOptions(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{"keep": "1", "drop": "2"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	pb, err := pod.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{DropManagedFields: true, Annotations: func(k string) bool { return k == "keep" }})
	if err != nil {
		t.Fatal(err)
	}
	fromPB, err := d.Protobuf(pb)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := d.JSON(js)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fromPB, fromJSON); diff != "" {
		t.Errorf("-protobuf +json:\n%s", diff)
	}
	if fromJSON.ManagedFields != nil || len(fromJSON.Annotations) != 1 {
		t.Errorf("JSON: managed fields %v, annotations %v", fromJSON.ManagedFields, fromJSON.Annotations)
	}
}

// TestProjectionOfSelfDecodingType: a projection of a type that decodes
// its own JSON (intstr.IntOrString, a number or a string) is refused when
// the Decoder is made (it was accepted, and then no JSON object with such
// a field decoded).
func TestProjectionOfSelfDecodingType(t *testing.T) {
	type svcSlim struct {
		Meta[svcSlim]
		Spec struct {
			Ports []struct{ TargetPort struct{ IntVal int32 } }
		}
	}
	_, err := NewDecoder[*svcSlim, *corev1.Service](Options{})
	var mismatch *MismatchError
	if !errors.As(err, &mismatch) || !strings.Contains(mismatch.Path, "TargetPort") {
		t.Errorf("NewDecoder of a projection of IntOrString = %v, want a *MismatchError at .spec.ports.targetPort", err)
	}
	// Kept whole, it decodes.
	type svcPorts struct {
		Meta[svcPorts]
		Spec struct {
			Ports []struct{ TargetPort intstr.IntOrString }
		}
	}
	d, err := NewDecoder[*svcPorts, *corev1.Service](Options{})
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(&corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{TargetPort: intstr.FromInt32(8080)}}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.JSON(js)
	if err != nil || len(got.Spec.Ports) != 1 || got.Spec.Ports[0].TargetPort.IntVal != 8080 {
		t.Errorf("JSON = %+v, %v", got, err)
	}
}

// TestUnknownWatchEventType: a watch frame of a type other than the five
// a watch has is a decoding error, as client-go's watch decoder says (it
// was passed on, with its object decoded).
func TestUnknownWatchEventType(t *testing.T) {
	pod, err := (&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	u, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Pod"}, Raw: pod}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	ev, err := (&metav1.WatchEvent{Type: "FOO", Object: runtime.RawExtension{Raw: append([]byte("k8s\x00"), u...)}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(ev))), ev...)
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := &Source[*corev1.Pod]{dec: d}
	if typ, obj, err := newEventDecoder(src, io.NopCloser(bytes.NewReader(frame))).Decode(); !errors.Is(err, ErrMalformed) {
		t.Errorf("protobuf frame of type FOO: %q %T %v, want ErrMalformed", typ, obj, err)
	}
	js := `{"type":"FOO","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"}}}`
	if typ, obj, err := newEventDecoder(src, io.NopCloser(strings.NewReader(js))).Decode(); !errors.Is(err, ErrMalformed) {
		t.Errorf("JSON event of type FOO: %q %T %v, want ErrMalformed", typ, obj, err)
	}
}

// TestRepeatedFieldInRuns: a repeated field whose elements come in two
// runs, another field between them, decodes as the generated decoder
// does (the elements of both, in order), and each run sizes the slice
// exactly: its capacity is its length.
func TestRepeatedFieldInRuns(t *testing.T) {
	part := func(s corev1.PodSpec) []byte {
		b, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// Concatenated encodings of one message merge: repeated fields append.
	b := part(corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}, Tolerations: []corev1.Toleration{{Key: "t1"}}})
	b = append(b, part(corev1.PodSpec{NodeName: "n"})...)
	b = append(b, part(corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}, Tolerations: []corev1.Toleration{{Key: "t2"}, {Key: "t3"}}})...)
	got := checkGenerated[corev1.PodSpec](t, b)
	if len(got.Containers) != 3 || cap(got.Containers) != 3 || len(got.Tolerations) != 3 || cap(got.Tolerations) != 3 {
		t.Errorf("containers len %d cap %d, tolerations len %d cap %d: want 3 of each",
			len(got.Containers), cap(got.Containers), len(got.Tolerations), cap(got.Tolerations))
	}
}
