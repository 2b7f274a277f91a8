package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
)

// podDecoders are the decoders of a Pod the fuzz targets check: the full
// Pod, podSlim, and podVolumesSlim (an inlined type's field, an unnamed map
// for a ResourceList, a string for a PodPhase).
type podDecoders struct {
	full *Decoder[*corev1.Pod]
	slim *Decoder[*podSlim]
	vols *Decoder[*podVolumesSlim]
}

func newPodDecoders(t testing.TB) podDecoders {
	t.Helper()
	var d podDecoders
	var err error
	if d.full, err = NewDecoder[*corev1.Pod, *corev1.Pod](Options{}); err != nil {
		t.Fatal(err)
	}
	if d.slim, err = NewDecoder[*podSlim, *corev1.Pod](Options{}); err != nil {
		t.Fatal(err)
	}
	if d.vols, err = NewDecoder[*podVolumesSlim, *corev1.Pod](Options{}); err != nil {
		t.Fatal(err)
	}
	return d
}

// podDecoded is what podDecoders made of some bytes.
type podDecoded struct {
	full               *corev1.Pod
	slim               *podSlim
	vols               *podVolumesSlim
	err, slimErr, vErr error
}

// decode decodes b, protobuf or JSON, with each decoder; every error must
// be a decoding error (see checkDecodeError).
func (d podDecoders) decode(t *testing.T, b []byte, json bool) podDecoded {
	t.Helper()
	var o podDecoded
	if json {
		o.full, o.err = d.full.JSON(b)
		o.slim, o.slimErr = d.slim.JSON(b)
		o.vols, o.vErr = d.vols.JSON(b)
	} else {
		o.full, o.err = d.full.Protobuf(b)
		o.slim, o.slimErr = d.slim.Protobuf(b)
		o.vols, o.vErr = d.vols.Protobuf(b)
	}
	checkDecodeError(t, "the full Pod", o.err)
	checkDecodeError(t, "podSlim", o.slimErr)
	checkDecodeError(t, "podVolumesSlim", o.vErr)
	return o
}

// compare checks that o is want, which client-go decoded, and its
// projections.
func (o podDecoded) compare(t *testing.T, want *corev1.Pod) {
	t.Helper()
	if o.err != nil || o.slimErr != nil || o.vErr != nil {
		t.Fatalf("client-go's decoder accepts the bytes, ours do not: %v, %v, %v", o.err, o.slimErr, o.vErr)
	}
	if d := cmp.Diff(want, o.full); d != "" {
		t.Fatalf("full decode differs from client-go's (-want +got):\n%s", d)
	}
	wantSlim := &podSlim{}
	project(reflectValue(wantSlim), reflectValue(want))
	if d := cmp.Diff(wantSlim, o.slim); d != "" {
		t.Fatalf("podSlim differs (-want +got):\n%s", d)
	}
	wantVols := &podVolumesSlim{}
	project(reflectValue(wantVols), reflectValue(want))
	if d := cmp.Diff(wantVols, o.vols); d != "" {
		t.Fatalf("podVolumesSlim differs (-want +got):\n%s", d)
	}
}

// FuzzDecodeProtobuf decodes arbitrary bytes as a Pod and as projections:
// never a panic; every error of Protobuf, ProtobufInto and PeekProtobufMeta
// wraps ErrTruncated or ErrMalformed (a field type's own Unmarshal error
// included) and neither io.EOF nor io.ErrUnexpectedEOF; and whenever the
// generated decoder accepts the bytes, ours do, and they agree.
func FuzzDecodeProtobuf(f *testing.F) {
	for i := range 4 {
		b, err := benchPod(i).Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	for _, p := range testobj.RealisticPods("shop", 3, 2) { // managedFields as the API server writes them
		b, err := p.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)*2/3])
	}
	fl := filler(3)
	for range 8 {
		p := &corev1.Pod{}
		fl.Fill(p)
		b, err := p.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, b := range badPods(f) {
		f.Add(b)
	}
	d := newPodDecoders(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		got := d.decode(t, b, false)
		checkDecodeError(t, "ProtobufInto", d.full.ProtobufInto(b, &corev1.Pod{}))
		_, err := PeekProtobufMeta(b)
		checkDecodeError(t, "PeekProtobufMeta", err)
		want := &corev1.Pod{}
		if want.Unmarshal(b) != nil || lenientEntry(b, d.full.plan) {
			return // refused, or accepted by the generated decoder's leniency only (see lenientEntry)
		}
		got.compare(t, want)
		// Again: the maps of this decode now come from the sharing table,
		// and the first decode's objects must be unchanged by it.
		again, err := d.full.Protobuf(b)
		if err != nil {
			t.Fatalf("a second decode failed: %v", err)
		}
		if d := cmp.Diff(want, again); d != "" {
			t.Fatalf("a second decode differs (-want +got):\n%s", d)
		}
		if d := cmp.Diff(want, got.full); d != "" {
			t.Fatalf("the first decode changed after the second (-want +got):\n%s", d)
		}
	})
}

// FuzzDecodeJSON decodes arbitrary bytes as the JSON of a Pod and of
// projections: never a panic; every error wraps ErrMalformed; and whenever
// sigs.k8s.io/json, client-go's decoder, accepts the bytes, ours do, and
// they agree.
func FuzzDecodeJSON(f *testing.F) {
	fl := filler(5)
	for i := range 12 {
		p := benchPod(i)
		p.ManagedFields = nil // its FieldsV1 is not JSON
		if i >= 4 {
			p = &corev1.Pod{}
			fl.Fill(p)
		}
		b, err := json.Marshal(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, p := range testobj.RealisticPods("shop", 2, 2) { // their FieldsV1 are JSON
		b, err := json.Marshal(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"spec":{"volumes":[{"name":"v","hostPath":{"path":"/"},"configMap":null}]}}`))
	f.Add([]byte(`{"spec":{"containers":[{"resources":{"limits":{"cpu":"1x0m"}}}]}}`))
	f.Add([]byte(`{"metadata":{]}`))
	d := newPodDecoders(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		got := d.decode(t, b, true)
		want := &corev1.Pod{}
		if sigsjson.UnmarshalCaseSensitivePreserveInts(b, want) != nil {
			return
		}
		got.compare(t, want)
	})
}

// TestTruncatedNeverPanics decodes every prefix of a Pod: each is an
// error or a Pod, never a panic, and the whole message decodes.
func TestTruncatedNeverPanics(t *testing.T) {
	b, err := benchPod(1).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	full, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	slim, err := NewDecoder[*podSlim, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for n := range len(b) {
		if _, err := full.Protobuf(b[:n]); err != nil {
			failed++
		}
		slim.Protobuf(b[:n]) //nolint:errcheck // only a panic matters here
	}
	if failed == 0 {
		t.Error("no prefix failed to decode")
	}
	if _, err := full.Protobuf(b); err != nil {
		t.Fatal(err)
	}
}

// FuzzDecodeProtobufSequence decodes two messages in turn with one Decoder:
// whatever the first left in the decoder's tables (shared strings, shared
// maps and FieldsV1), the second decodes as the generated decoder decodes it, and the
// first object is unchanged by it. Then it merges the first message into
// the second object, with ProtobufInto, as the generated decoder merges:
// the objects that share its maps are unchanged by it.
func FuzzDecodeProtobufSequence(f *testing.F) {
	marshal := func(p *corev1.Pod) []byte {
		b, err := p.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	labelled := func(l map[string]string) []byte {
		return marshal(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: l}})
	}
	canary := labelled(map[string]string{"canary": "true"})
	// Labels in two runs, then an object with the second run alone.
	f.Add(append(labelled(map[string]string{"app": "web"}), canary...), canary)
	f.Add(marshal(benchPod(0)), marshal(benchPod(48)))
	f.Add(marshal(benchPod(1)), marshal(benchPod(1)))
	// Realistic Pods of one ReplicaSet (the FieldsV1 of their create
	// shared) and of two.
	f.Add(marshal(testobj.RealisticPod("shop", 0, 2)), marshal(testobj.RealisticPod("shop", 2, 2)))
	f.Add(marshal(testobj.RealisticPod("shop", 0, 2)), marshal(testobj.RealisticPod("shop", 1, 2)))
	// ResourceLists, shared, then merged into.
	f.Add(marshal(overheadPod("a", "memory", "64Mi")), marshal(overheadPod("b", "cpu", "250m")))
	f.Add(marshal(overheadPod("a", "cpu", "250m")), marshal(overheadPod("b", "cpu", "250m")))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
		if err != nil {
			t.Fatal(err)
		}
		wantA, wantB := &corev1.Pod{}, &corev1.Pod{}
		errA, errB := wantA.Unmarshal(a), wantB.Unmarshal(b)
		gotA, err := d.Protobuf(a)
		if errA == nil && err == nil {
			if diff := cmp.Diff(wantA, gotA); diff != "" {
				t.Fatalf("first decode differs from the generated one (-want +got):\n%s", diff)
			}
		}
		gotB, err := d.Protobuf(b)
		if errB != nil || err != nil {
			return
		}
		if diff := cmp.Diff(wantB, gotB); diff != "" {
			t.Fatalf("second decode differs from the generated one (-want +got):\n%s", diff)
		}
		if errA == nil && gotA != nil {
			if diff := cmp.Diff(wantA, gotA); diff != "" {
				t.Fatalf("the first object changed after the second decode (-want +got):\n%s", diff)
			}
		}
		// The first message merged into the second object, whose maps
		// may be the first's or others' too: as the generated decoder
		// merges, and no other object changes.
		if errA != nil || gotA == nil {
			return
		}
		if wantB.Unmarshal(a) != nil {
			return
		}
		again, err := d.Protobuf(b) // shares what gotB shares
		if err != nil {
			t.Fatal(err)
		}
		if err := d.ProtobufInto(a, gotB); err != nil {
			t.Fatalf("ProtobufInto: %v", err)
		}
		if diff := cmp.Diff(wantB, gotB); diff != "" {
			t.Fatalf("merge differs from the generated one (-want +got):\n%s", diff)
		}
		wantAgain := &corev1.Pod{}
		if err := wantAgain.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantAgain, again); diff != "" {
			t.Fatalf("an object sharing the merged one's maps changed (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(wantA, gotA); diff != "" {
			t.Fatalf("the first object changed after the merge (-want +got):\n%s", diff)
		}
	})
}

// lenientEntry reports whether the message b, which plan x decodes, holds
// a map entry only the generated decoders accept. They read an entry's key
// and value (fields 1 and 2) whatever their wire type, and bounded by the
// whole message rather than by the entry, so that a key of the wrong wire
// type, or one running past its entry, is made of the bytes after it (a
// fuzzed label entry whose key length grew by one byte became a key of
// 105 bytes, most of them the next entries'). Ours refuse such an entry as
// malformed; the API server never writes one.
func lenientEntry(b []byte, x *plan) bool {
	for i := 0; i < len(b); {
		num, typ, next, err := tag(b, i)
		if err != nil {
			return false
		}
		end, err := skip(b, next, typ)
		if err != nil {
			return false
		}
		if o := x.lookup(num); o != nil && typ == wireBytes {
			start, _, _ := lengthDelimited(b, next)
			if lenientValue(b[start:end], o) {
				return true
			}
		}
		i = end
	}
	return false
}

// lenientValue is lenientEntry for the bytes of one length-delimited value
// of the field o.
func lenientValue(v []byte, o *op) bool {
	if o.kind == opRepeated {
		o = o.elem
	}
	switch o.kind {
	case opMessage, opPtrMessage:
		return lenientEntry(v, o.plan)
	case opMap:
		for j := 0; j < len(v); {
			num, typ, next, err := tag(v, j)
			if err != nil {
				return true // a tag running past the entry
			}
			var field *op // the key's or the value's, nil for any other field
			switch num {
			case 1:
				field = o.key
			case 2:
				field = o.elem
			}
			if field != nil && typ != wireOf(field) {
				return true
			}
			end, err := skip(v, next, typ)
			if err != nil {
				return field != nil // a key or value running past the entry
			}
			if field != nil && typ == wireBytes {
				start, _, _ := lengthDelimited(v, next)
				if lenientValue(v[start:end], field) {
					return true
				}
			}
			j = end
		}
	}
	return false
}

// TestGeneratedMapEntryLeniency: a label entry whose key length is one
// byte too long is accepted by client-go's generated decoder, which reads
// the key on into the entries after it; ours refuse it as malformed, and
// lenientEntry, which the fuzz targets use to tell such inputs apart,
// finds it.
func TestGeneratedMapEntryLeniency(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name:        "p",
		Labels:      map[string]string{"app.kubernetes.io/part-of": "informer-bench", "tier": "db"},
		Annotations: map[string]string{"note": strings.Repeat("x", 200)}, // bytes for the overlong key to take
	}}
	good, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("\n\x19app.kubernetes.io/part-of")
	at := bytes.Index(good, key)
	if at < 0 {
		t.Fatal("the label's key is not in the bytes")
	}
	bad := bytes.Clone(good)
	// The key's length one byte too long: the value's tag becomes part of
	// the key, and the value's length (14) the tag of a key again (field
	// 1, wire type 6), whose length is the value's first byte ('i', 105).
	bad[at+1]++
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	if lenientEntry(good, d.plan) {
		t.Error("lenientEntry finds a lenient entry in well-formed bytes")
	}
	want := &corev1.Pod{}
	if err := want.Unmarshal(bad); err != nil {
		t.Fatalf("the generated decoder refuses the bytes: %v (the test no longer shows its leniency)", err)
	}
	if !lenientEntry(bad, d.plan) {
		t.Error("lenientEntry does not find the entry")
	}
	if _, err := d.Protobuf(bad); !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTruncated) {
		t.Errorf("our decoder: %v, want an error wrapping ErrMalformed or ErrTruncated", err)
	}
}
