package wire

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzDecodeProtobuf decodes arbitrary bytes as a Pod and as a projection:
// never a panic; an error wraps ErrTruncated or ErrMalformed (or is a
// type's own Unmarshal error, in a DecodeError); and whenever both the
// generated decoder and ours accept the bytes, they agree.
func FuzzDecodeProtobuf(f *testing.F) {
	for i := range 4 {
		b, err := benchPod(i).Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
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
	full, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		f.Fatal(err)
	}
	slim, err := NewDecoder[*podSlim, *corev1.Pod](Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := full.Protobuf(b)
		var de *DecodeError
		if err != nil && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrMalformed) && !errors.As(err, &de) {
			t.Fatalf("error %v is not a decoding error", err)
		}
		gotSlim, slimErr := slim.Protobuf(b)
		want := &corev1.Pod{}
		if want.Unmarshal(b) != nil || err != nil {
			return
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("full decode differs from the generated one (-want +got):\n%s", d)
		}
		// Again: the maps of this decode now come from the sharing table,
		// and the first decode's objects must be unchanged by it.
		again, err := full.Protobuf(b)
		if err != nil {
			t.Fatalf("a second decode failed: %v", err)
		}
		if d := cmp.Diff(want, again); d != "" {
			t.Fatalf("a second decode differs (-want +got):\n%s", d)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("the first decode changed after the second (-want +got):\n%s", d)
		}
		if slimErr != nil {
			t.Fatalf("the full decode succeeded, the projection failed: %v", slimErr)
		}
		wantSlim := &podSlim{}
		project(reflectValue(wantSlim), reflectValue(want))
		if d := cmp.Diff(wantSlim, gotSlim); d != "" {
			t.Fatalf("projection differs (-want +got):\n%s", d)
		}
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
// maps), the second decodes as the generated decoder decodes it, and the
// first object is unchanged by it.
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
	})
}
