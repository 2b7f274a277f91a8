package wire

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Versions of a Pod, as a watch delivers them, share the times of their
// managedFields entries from the second version on, and their FieldsV1
// from the second too (bytes enter the table the second time they come);
// a time or FieldsV1 that changed is the object's own. NoMapSharing turns
// it off.
func TestManagedFieldsPointersShared(t *testing.T) {
	pod := testobj.RealisticPods("shop", 1, 1)[0]
	versions := make([][]byte, 3)
	for i := range versions {
		v := pod.DeepCopy()
		v.ResourceVersion = string(rune('1' + i))
		versions[i] = marshalPod(t, v)
	}
	// A fourth whose kubelet wrote a second later, and other fields.
	changed := pod.DeepCopy()
	later := metav1.NewTime(changed.ManagedFields[1].Time.Add(1e9))
	changed.ManagedFields[1].Time = &later
	changed.ManagedFields[1].FieldsV1 = metav1.NewFieldsV1(`{"f:status":{"f:phase":{}}}`)
	n := len(pod.ManagedFields)
	if n < 2 {
		t.Fatalf("the realistic Pod has %d managedFields entries, want at least 2", n)
	}

	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []*corev1.Pod
	for _, msg := range versions {
		got = append(got, decodeBytesChecked(t, d, msg))
	}
	last := decodeChecked(t, d, changed)
	for e := range n {
		if got[1].ManagedFields[e].Time != got[0].ManagedFields[e].Time || got[2].ManagedFields[e].Time != got[0].ManagedFields[e].Time {
			t.Errorf("entry %d: the versions do not share their time", e)
		}
		if got[1].ManagedFields[e].FieldsV1 != got[2].ManagedFields[e].FieldsV1 {
			t.Errorf("entry %d: the second and third versions do not share their FieldsV1", e)
		}
		if got[0].ManagedFields[e].FieldsV1 == got[1].ManagedFields[e].FieldsV1 {
			t.Errorf("entry %d: the first version's FieldsV1, seen once, is shared", e)
		}
	}
	if last.ManagedFields[0].Time != got[0].ManagedFields[0].Time || last.ManagedFields[0].FieldsV1 != got[2].ManagedFields[0].FieldsV1 {
		t.Error("an unchanged entry of a changed Pod does not share its time and FieldsV1")
	}
	if last.ManagedFields[1].Time == got[0].ManagedFields[1].Time || last.ManagedFields[1].FieldsV1 == got[2].ManagedFields[1].FieldsV1 {
		t.Error("a changed entry shares the time or FieldsV1 of the one it replaced")
	}

	off, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{NoMapSharing: true})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := decodeBytesChecked(t, off, versions[0]), decodeBytesChecked(t, off, versions[1]), decodeBytesChecked(t, off, versions[2])
	if a.ManagedFields[0].Time == b.ManagedFields[0].Time || b.ManagedFields[0].FieldsV1 == c.ManagedFields[0].FieldsV1 {
		t.Error("NoMapSharing: pointers shared")
	}
}

// A managedFields entry whose time and FieldsV1 come twice (protobuf
// merges the second into the first) is decoded as client-go decodes it,
// and never writes into the time or FieldsV1 that other objects share.
func TestSharedPointersCopyOnWrite(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	when := metav1.Unix(1_700_000_000, 0)
	fields := `{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`
	shared := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "m", FieldsType: "FieldsV1", Time: &when, FieldsV1: metav1.NewFieldsV1(fields)},
	}}}
	var held []*corev1.Pod
	for range 3 {
		held = append(held, decodeChecked(t, d, shared))
	}
	if held[1].ManagedFields[0].Time != held[2].ManagedFields[0].Time || held[1].ManagedFields[0].FieldsV1 != held[2].ManagedFields[0].FieldsV1 {
		t.Fatal("the time and FieldsV1 of equal entries are not shared")
	}

	later := metav1.Unix(1_700_000_100, 0)
	whenPB, err := when.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	laterPB, err := later.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	other := `{"f:metadata":{"f:labels":{".":{},"f:xyz":{}}}}`[:len(fields)]
	var entry []byte
	entry = appendField(entry, 1, []byte("m"))
	entry = appendField(entry, 4, whenPB)
	entry = appendField(entry, 4, laterPB)
	entry = appendField(entry, 7, appendField(nil, 1, []byte(fields)))
	entry = appendField(entry, 7, appendField(nil, 1, []byte(other)))
	msg := appendField(nil, 1, appendField(appendField(nil, 1, []byte("b")), 17, entry))
	merged := decodeBytesChecked(t, d, msg)
	for i, p := range held {
		if got := p.ManagedFields[0].Time; !got.Equal(&when) {
			t.Errorf("Pod %d's time changed to %v", i, got)
		}
		if got := p.ManagedFields[0].FieldsV1.GetRawString(); got != fields {
			t.Errorf("Pod %d's FieldsV1 changed to %s", i, got)
		}
	}
	if merged.ManagedFields[0].Time == held[2].ManagedFields[0].Time || merged.ManagedFields[0].FieldsV1 == held[2].ManagedFields[0].FieldsV1 {
		t.Error("the merged entry holds a shared pointer")
	}
}

// A Sizer counts a shared time or FieldsV1 once, in SharedBytes, not in
// each object that holds it.
func TestSizerSharedPointers(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	when := metav1.Unix(1_700_000_000, 0)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "m", FieldsType: "FieldsV1", Time: &when, FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{}}}`)},
	}}}
	before := d.SharedBytes()
	var pods []*corev1.Pod
	for i := range 3 {
		// A manager of its own, so that the entries, a run of one, are
		// not shared as a whole (see sharedRun).
		pod.ManagedFields[0].Manager = fmt.Sprintf("m%d", i)
		pods = append(pods, decodeBytesChecked(t, d, marshalPod(t, pod)))
	}
	third := pods[2]
	if pods[1].ManagedFields[0].FieldsV1 != third.ManagedFields[0].FieldsV1 || pods[1].ManagedFields[0].Time != pods[0].ManagedFields[0].Time {
		t.Fatal("the pointers are not shared")
	}
	// The third Pod with a time and FieldsV1 of its own, equal.
	own := *third
	own.ManagedFields = make([]metav1.ManagedFieldsEntry, 1, cap(third.ManagedFields))
	own.ManagedFields[0] = third.ManagedFields[0]
	tm := *third.ManagedFields[0].Time
	own.ManagedFields[0].Time = &tm
	own.ManagedFields[0].FieldsV1 = metav1.NewFieldsV1(third.ManagedFields[0].FieldsV1.GetRawString())

	sz := d.Sizer()
	timeBytes := allocBytes(int(unsafe.Sizeof(metav1.Time{})))
	fieldsBytes := allocBytes(int(unsafe.Sizeof(metav1.FieldsV1{}))) + allocBytes(len(own.ManagedFields[0].FieldsV1.GetRawBytes()))
	if got, want := sz.Size(third), sz.Size(&own)-timeBytes-fieldsBytes; got != want {
		t.Errorf("Size of a Pod that shares its time and FieldsV1 = %d, want %d: %d less than with its own", got, want, timeBytes+fieldsBytes)
	}
	// SharedBytes counts them, with the table of times.
	held := 0
	for _, sl := range d.times.slots {
		if sl.hit {
			held += timeBytes
		}
	}
	for _, set := range d.bytes.sets {
		for _, w := range set.ways {
			if w.fv != nil {
				held += allocBytes(int(unsafe.Sizeof(metav1.FieldsV1{})))
			}
		}
	}
	if want := timeBytes + allocBytes(int(unsafe.Sizeof(metav1.FieldsV1{}))); held != want {
		t.Errorf("the tables hold %d B of shared times and FieldsV1, want %d: one of each", held, want)
	}
	if got := d.SharedBytes() - before; got < held+allocBytes(len(own.ManagedFields[0].FieldsV1.GetRawBytes())) {
		t.Errorf("SharedBytes grew by %d, less than the %d B of the shared time and FieldsV1 with its bytes", got, held)
	}
}
