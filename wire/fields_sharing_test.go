package wire

import (
	"encoding/binary"
	"encoding/json"
	"runtime"
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
// of one ReplicaSet) share one slice of them from the second Pod on (bytes
// enter the table the second time they come), in protobuf and JSON; others
// (another ReplicaSet's, the kubelet's status of each Pod) do not; and
// every Pod is what client-go decodes. NoMapSharing and NoSharing turn it
// off.
func TestFieldsV1Sharing(t *testing.T) {
	pods := testobj.RealisticPods("shop", 3*realisticReplicaSets, realisticReplicaSets)
	first, a, b, other := pods[0], pods[realisticReplicaSets], pods[2*realisticReplicaSets], pods[1]
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
			decode(t, d, first)
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
				decode(t, d, first)
				if ga, gb := decode(t, d, a), decode(t, d, b); rawData(ga, 0) == rawData(gb, 0) {
					t.Errorf("%+v: FieldsV1 shared", opts)
				}
			})
		}
	}
}

// The FieldsV1 that repeat stay in the table however many come once
// between them: 1,000 Pods of 10 ReplicaSets, in turn, whose kubelet
// entries are each Pod's own, hold at most two copies of each
// ReplicaSet's create. (Only if five of the ten fell in one set of the
// table, about once in a million seeds, would one of them miss.)
func TestFieldsV1SharingKeepsWhatRepeats(t *testing.T) {
	const replicaSets = 10
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	copies := map[*byte]bool{}
	var held []*corev1.Pod // so that no copy's address is reused
	for _, p := range testobj.RealisticPods("shop", 100*replicaSets, replicaSets) {
		got, err := d.Protobuf(marshalPod(t, p))
		if err != nil {
			t.Fatal(err)
		}
		copies[rawData(got, 0)] = true
		held = append(held, got)
	}
	if n := len(copies); n > 2*replicaSets {
		t.Errorf("%d copies of the FieldsV1 of %d ReplicaSets' creates, want at most 2 each", n, replicaSets)
	}
	runtime.KeepAlive(held)
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

// The bytes table keeps at most bytesBudget bytes, however many large
// slices repeat, and what it hands out is always equal to what it is given.
func TestBytesTableBudget(t *testing.T) {
	tab := newBytesTable()
	for i := range 400 {
		b := make([]byte, bytesMaxLen-i)
		binary.LittleEndian.PutUint64(b, uint64(i))
		for range 2 {
			if got := tab.get(b); string(got) != string(b) || cap(got) != len(got) {
				t.Fatalf("slice %d: got other bytes or room to append", i)
			}
		}
		sum := 0
		for _, set := range tab.sets {
			for _, w := range set.ways {
				sum += len(w.v)
			}
		}
		if sum != tab.held || tab.held > bytesBudget {
			t.Fatalf("after slice %d: the table holds %d bytes and counts %d, budget %d", i, sum, tab.held, bytesBudget)
		}
	}
	if tab.held < bytesBudget/2 {
		t.Errorf("the table holds %d bytes of large slices, want near its budget %d", tab.held, bytesBudget)
	}
}
