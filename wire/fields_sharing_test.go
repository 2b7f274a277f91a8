package wire

import (
	"encoding/binary"
	"encoding/json"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// realisticReplicaSets is how many ReplicaSets the realistic Pods of these
// tests belong to: Pods i and i+realisticReplicaSets are of one.
const realisticReplicaSets = 20

// rawData returns the address of the bytes of a Pod's managedFields[entry]
// FieldsV1.
func rawData(p *corev1.Pod, entry int) *byte {
	return unsafe.SliceData(p.ManagedFields[entry].FieldsV1.GetRawBytes())
}

// Pods whose FieldsV1 bytes are equal on the wire (the create of the Pods
// of one ReplicaSet) share one slice of them, in protobuf and JSON; others
// (another ReplicaSet's, the kubelet's status of each Pod) do not; and
// every Pod is what client-go decodes. NoMapSharing and NoSharing turn it
// off.
func TestFieldsV1Sharing(t *testing.T) {
	pods := testobj.RealisticPods("shop", 2*realisticReplicaSets, realisticReplicaSets)
	a, b, other := pods[0], pods[realisticReplicaSets], pods[1]
	for _, enc := range []string{"protobuf", "json"} {
		decode := func(t *testing.T, d *Decoder[*corev1.Pod], p *corev1.Pod) *corev1.Pod {
			t.Helper()
			var got *corev1.Pod
			var err error
			want := &corev1.Pod{}
			if enc == "protobuf" {
				msg := marshalPod(t, p)
				if err := want.Unmarshal(msg); err != nil {
					t.Fatal(err)
				}
				got, err = d.Protobuf(msg)
			} else {
				js, jerr := json.Marshal(p)
				if jerr != nil {
					t.Fatal(jerr)
				}
				if err := json.Unmarshal(js, want); err != nil {
					t.Fatal(err)
				}
				got, err = d.JSON(js)
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("differs from client-go's decoding (-want +got):\n%s", d)
			}
			return got
		}
		t.Run(enc, func(t *testing.T) {
			d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
			if err != nil {
				t.Fatal(err)
			}
			ga, gb, gother := decode(t, d, a), decode(t, d, b), decode(t, d, other)
			if rawData(ga, 0) != rawData(gb, 0) {
				t.Error("two Pods of one ReplicaSet do not share the FieldsV1 of their create")
			}
			if rawData(ga, 0) == rawData(gother, 0) {
				t.Error("Pods of two ReplicaSets share the FieldsV1 of their create")
			}
			if rawData(ga, 1) == rawData(gb, 1) || rawData(ga, 0) == rawData(ga, 1) {
				t.Error("FieldsV1 of different bytes are shared")
			}
			if n := len(ga.ManagedFields[0].FieldsV1.GetRawBytes()); cap(ga.ManagedFields[0].FieldsV1.GetRawBytes()) != n {
				t.Error("a shared FieldsV1 has room to append to it in place")
			}
		})
		for _, opts := range []Options{{NoMapSharing: true}, {NoSharing: true}} {
			t.Run(enc+"/off", func(t *testing.T) {
				d, err := NewDecoder[*corev1.Pod, *corev1.Pod](opts)
				if err != nil {
					t.Fatal(err)
				}
				if ga, gb := decode(t, d, a), decode(t, d, b); rawData(ga, 0) == rawData(gb, 0) {
					t.Errorf("%+v: FieldsV1 shared", opts)
				}
			})
		}
	}
}

// appendField appends field num, of wire type bytes, holding v.
func appendField(b []byte, num int, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(num)<<3|2)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// A FieldsV1 whose bytes come twice in one message (the second replaces
// the first, as protobuf merges) never writes the second into the slice
// the first shares with other objects.
func TestFieldsV1SharingCopiesOnWrite(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	shared := `{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`
	first, err := d.Protobuf(marshalPod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "m", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(shared)},
	}}}))
	if err != nil {
		t.Fatal(err)
	}
	// Pod b's entry: its FieldsV1 (field 7) twice, the shared bytes then
	// others of the same length.
	other := `{"f:metadata":{"f:labels":{".":{},"f:xyz":{}}}}`[:len(shared)]
	var entry []byte
	entry = appendField(entry, 1, []byte("m"))
	entry = appendField(entry, 7, appendField(nil, 1, []byte(shared)))
	entry = appendField(entry, 7, appendField(nil, 1, []byte(other)))
	msg := appendField(nil, 1, appendField(appendField(nil, 1, []byte("b")), 17, entry))
	want := &corev1.Pod{}
	if err := want.Unmarshal(msg); err != nil {
		t.Fatal(err)
	}
	second, err := d.Protobuf(msg)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, second); d != "" {
		t.Errorf("the merged FieldsV1 (-want +got):\n%s", d)
	}
	if got := first.ManagedFields[0].FieldsV1.GetRawString(); got != shared {
		t.Errorf("the first Pod's FieldsV1 changed to %s", got)
	}
}
