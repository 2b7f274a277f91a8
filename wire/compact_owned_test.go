package wire

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DecodeOwned gives a record that holds no decoded object as an object the
// reader owns: what Decode gives, sharing no map, pointer or slice with
// the objects Decode shares them between, nor with another owned object,
// and not kept; a record that holds one gives that object, not owned.
func TestCompactDecodeOwned(t *testing.T) {
	_, c := newPodCompact(t)
	var recs []*Record
	var wants []*corev1.Pod
	for i, p := range testobj.RealisticPods("shop", 6, 3) {
		b := marshalPod(t, p)
		r, err := c.Protobuf(b)
		if err != nil {
			t.Fatal(err)
		}
		want := &corev1.Pod{}
		if err := want.Unmarshal(b); err != nil { // client-go's decoder
			t.Fatal(err)
		}
		if r.cached() != nil {
			t.Fatalf("record %d holds an object before it is read", i)
		}
		recs, wants = append(recs, r), append(wants, want)
	}
	// Decode shares maps, FieldsV1 and times between the first siblings:
	// what an owned object must not.
	var read []*corev1.Pod
	for _, r := range recs[:3] {
		p, err := c.Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		read = append(read, p)
	}
	if len(testobj.SharedRefs(read[1], read[2])) == 0 {
		t.Fatal("two siblings decoded by Decode share nothing: the test shows nothing")
	}
	cached := c.Cached()
	var owned []*corev1.Pod
	for i, r := range recs[3:] {
		p, own, err := c.DecodeOwned(r)
		if err != nil {
			t.Fatal(err)
		}
		if !own {
			t.Fatalf("record %d, never read: not owned", 3+i)
		}
		if diff := cmp.Diff(wants[3+i], p); diff != "" {
			t.Fatalf("record %d decodes otherwise (-client-go +owned):\n%s", 3+i, diff)
		}
		for _, q := range append(read, owned...) {
			if s := testobj.SharedRefs(p, q); len(s) > 0 {
				t.Fatalf("record %d's owned object shares %v with another", 3+i, s)
			}
		}
		if r.cached() != nil {
			t.Fatalf("record %d keeps the object it gave its reader", 3+i)
		}
		owned = append(owned, p)
	}
	if c.Cached() != cached {
		t.Errorf("%d objects cached after DecodeOwned, want %d", c.Cached(), cached)
	}
	// The reader writes to what it owns; no other object changes.
	for _, p := range owned {
		p.Labels["written"] = "yes"
		p.ManagedFields[0].Time.Time = time.Unix(1, 0)
		p.ManagedFields[0].FieldsV1.GetRawBytes()[0] = '!' // the bytes the object holds
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
	}
	for i, r := range recs {
		p, err := c.Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wants[i], p); diff != "" {
			t.Fatalf("after the owners' writes, record %d decodes otherwise (-want +got):\n%s", i, diff)
		}
	}
	// A record that holds its decoded object gives that one, not owned.
	p, own, err := c.DecodeOwned(recs[0])
	if err != nil || own || p != read[0] {
		t.Errorf("DecodeOwned of a read record: %p owned %v, %v; want %p, not owned", p, own, err, read[0])
	}
}

// DecodeOwned of a JSON record (a type without protobuf): its object
// shares no map or FieldsV1 with those Decode shares them between.
func TestCompactDecodeOwnedJSON(t *testing.T) {
	d, err := NewDecoder[*widget, *widget](Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := NewCompact(d, DecodedCacheSize)
	var recs []*Record
	var wants []*widget
	for i := range 4 {
		w := &widget{
			TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"},
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprint("w-", i), Namespace: "ns", Labels: map[string]string{"app": "a"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:size":{}}}`)}},
			},
			Spec: widgetSpec{Size: int32(i)},
		}
		r, err := c.Encode(w)
		if err != nil {
			t.Fatal(err)
		}
		if !r.JSON() {
			t.Fatal("a widget's record is not JSON")
		}
		r.obj = nil // as if the cache had let it go
		recs, wants = append(recs, r), append(wants, w)
	}
	// Maps enter the decoder's table the second time they come: the
	// third widget shares the second's.
	var read []*widget
	for _, r := range recs[:3] {
		w, err := c.Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		read = append(read, w)
	}
	if len(testobj.SharedRefs(read[1], read[2])) == 0 {
		t.Fatal("two widgets of one label decoded by Decode share nothing: the test shows nothing")
	}
	got, own, err := c.DecodeOwned(recs[3])
	if err != nil || !own {
		t.Fatalf("DecodeOwned: owned %v, %v", own, err)
	}
	if diff := cmp.Diff(wants[3], got); diff != "" {
		t.Fatalf("decodes otherwise (-want +got):\n%s", diff)
	}
	for _, q := range append(read, wants[3]) {
		if s := testobj.SharedRefs(got, q); len(s) > 0 {
			t.Errorf("the owned widget shares %v with another", s)
		}
	}
}

// An Unstructured record's owned object is a fresh one too.
func TestCompactDecodeOwnedUnstructured(t *testing.T) {
	d, err := NewDecoder[*unstructured.Unstructured, *unstructured.Unstructured](Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := NewCompact(d, DecodedCacheSize)
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns","labels":{"app":"a"}},"spec":{"size":3}}`), u); err != nil {
		t.Fatal(err)
	}
	r, err := c.Encode(u)
	if err != nil {
		t.Fatal(err)
	}
	if _, own, _ := c.DecodeOwned(r); own {
		t.Fatal("a record Encode made gave an owned object: it keeps the object it was made of")
	}
	r.obj = nil // as if the cache had let it go
	got, own, err := c.DecodeOwned(r)
	if err != nil || !own {
		t.Fatalf("DecodeOwned: owned %v, %v", own, err)
	}
	if diff := cmp.Diff(u, got); diff != "" {
		t.Fatalf("decodes otherwise (-want +got):\n%s", diff)
	}
	if s := testobj.SharedRefs(got, u); len(s) > 0 {
		t.Errorf("the owned object shares %v with the one encoded", s)
	}
}
