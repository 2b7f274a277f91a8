package wire

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/internal/testobj"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
)

// The server's metadata view (PartialObjectMetadata, what informer.ForMetadata asks for) is
// decoded by the same plans as any type: these check it against the generated decoder and
// client-go's JSON decoder, as the tests of Pods do.

// metadataViews returns PartialObjectMetadata objects: the metadata of realistic Pods (their
// managedFields as the API server writes them) and fuzzed ones.
func metadataViews(n int) []*metav1.PartialObjectMetadata {
	var out []*metav1.PartialObjectMetadata
	for _, p := range testobj.RealisticPods("shop", 3, 2) {
		out = append(out, &metav1.PartialObjectMetadata{ObjectMeta: p.ObjectMeta})
	}
	fl := filler(11)
	for range n {
		m := &metav1.PartialObjectMetadata{}
		fl.Fill(m)
		out = append(out, m)
	}
	return out
}

// TestDecodeMetadataView decodes PartialObjectMetadata from protobuf and JSON, with and without
// DropManagedFields, and compares each with client-go's decoders: the generated protobuf
// decoder, and sigs.k8s.io/json (the JSON objects' FieldsV1 are made valid JSON, as the server's
// are).
func TestDecodeMetadataView(t *testing.T) {
	for _, drop := range []bool{false, true} {
		d, err := NewDecoder[*metav1.PartialObjectMetadata, *metav1.PartialObjectMetadata](Options{DropManagedFields: drop})
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range metadataViews(40) {
			t.Run(fmt.Sprintf("drop=%v/%d", drop, i), func(t *testing.T) {
				b, err := m.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				metadataFromProtobuf(t, d, b, drop)

				for j := range m.ManagedFields {
					if m.ManagedFields[j].FieldsV1 != nil {
						m.ManagedFields[j].FieldsV1 = metav1.NewFieldsV1(fmt.Sprintf(`{"f:metadata":{"f:labels":{"f:n%d":{}}}}`, j))
					}
				}
				m.APIVersion, m.Kind = "meta.k8s.io/v1", "PartialObjectMetadata" // as the server's JSON view says
				js, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				metadataFromJSON(t, d, js, drop)
			})
		}
	}
}

// TestDecodeMetadataViewOfFullObjects decodes a whole Pod's protobuf and JSON as
// PartialObjectMetadata, as a server without the metadata view answers (the Accept header's
// last choice is plain JSON): its other fields are skipped, as client-go's decoders skip them.
func TestDecodeMetadataViewOfFullObjects(t *testing.T) {
	d, err := NewDecoder[*metav1.PartialObjectMetadata, *metav1.PartialObjectMetadata](Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range testobj.RealisticPods("shop", 3, 2) {
		t.Run(fmt.Sprint("Pod ", i), func(t *testing.T) {
			b, err := p.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			got := metadataFromProtobuf(t, d, b, false)
			if diff := cmp.Diff(p.ObjectMeta, got.ObjectMeta); diff != "" {
				t.Errorf("metadata differs from the Pod's (-want +got):\n%s", diff)
			}
			js, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			metadataFromJSON(t, d, js, false)
		})
	}
}

// metadataFromProtobuf decodes b with d and fails t unless the object is the generated
// decoder's, without managedFields if drop; it returns the object.
func metadataFromProtobuf(t *testing.T, d *Decoder[*metav1.PartialObjectMetadata], b []byte, drop bool) *metav1.PartialObjectMetadata {
	t.Helper()
	want := &metav1.PartialObjectMetadata{}
	if err := want.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	if drop {
		want.ManagedFields = nil
	}
	got, err := d.Protobuf(b)
	if err != nil {
		t.Fatalf("protobuf: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("protobuf differs from the generated decoder's (-want +got):\n%s", diff)
	}
	return got
}

// metadataFromJSON decodes js with d and fails t unless the object is sigs.k8s.io/json's,
// without managedFields if drop.
func metadataFromJSON(t *testing.T, d *Decoder[*metav1.PartialObjectMetadata], js []byte, drop bool) {
	t.Helper()
	want := &metav1.PartialObjectMetadata{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, want); err != nil {
		t.Fatal(err)
	}
	if drop {
		want.ManagedFields = nil
	}
	got, err := d.JSON(js)
	if err != nil {
		t.Fatalf("JSON: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON differs from sigs.k8s.io/json's (-want +got):\n%s", diff)
	}
}

// FuzzDecodeMetadataView decodes arbitrary bytes as the protobuf of a PartialObjectMetadata:
// never a panic; every error wraps ErrMalformed or ErrTruncated; and whenever the generated
// decoder accepts the bytes (but for its leniency with map entries, see lenientEntry), ours
// do, and they agree.
func FuzzDecodeMetadataView(f *testing.F) {
	for _, m := range metadataViews(8) {
		b, err := m.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	d, err := NewDecoder[*metav1.PartialObjectMetadata, *metav1.PartialObjectMetadata](Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := d.Protobuf(b)
		checkDecodeError(t, "Protobuf", err)
		want := &metav1.PartialObjectMetadata{}
		if want.Unmarshal(b) != nil || lenientEntry(b, d.plan) {
			return
		}
		if err != nil {
			t.Fatalf("the generated decoder accepts what ours refuses: %v", err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("differs from the generated decoder (-want +got):\n%s", diff)
		}
	})
}
