package wire

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes/scheme"
)

// validateDecoders are the decoders whose Validate FuzzValidate compares
// with their Protobuf: full objects, a projection, and the options that
// change what is decoded.
var validateDecoders = sync.OnceValue(func() map[string]validating {
	full, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		panic(err)
	}
	slim, err := NewDecoder[*podSlim, *corev1.Pod](Options{})
	if err != nil {
		panic(err)
	}
	filtered, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{
		DropManagedFields: true,
		Annotations:       func(k string) bool { return !strings.HasPrefix(k, "x") },
	})
	if err != nil {
		panic(err)
	}
	return map[string]validating{"full": decodeOnly[*corev1.Pod]{full}, "projection": decodeOnly[*podSlim]{slim}, "options": decodeOnly[*corev1.Pod]{filtered}}
})

// validating is a Decoder of any type, for comparing its Validate and its
// Protobuf.
type validating interface {
	Validate([]byte) error
	decode([]byte) error
}

// decodeOnly is a Decoder whose decode drops the object.
type decodeOnly[PP any] struct{ *Decoder[PP] }

func (d decodeOnly[PP]) decode(b []byte) error {
	_, err := d.Protobuf(b)
	return err
}

// checkValidate fails t unless every decoder's Validate returns the error
// its Protobuf returns for b.
func checkValidate(t *testing.T, b []byte) {
	t.Helper()
	for name, d := range validateDecoders() {
		want, got := d.decode(b), d.Validate(b)
		switch {
		case (want == nil) != (got == nil):
			t.Fatalf("%s: Protobuf returns %v, Validate %v", name, want, got)
		case want != nil && want.Error() != got.Error():
			t.Fatalf("%s: Protobuf returns %q, Validate %q", name, want, got)
		}
	}
}

// FuzzValidate checks that Validate refuses exactly the bytes Protobuf
// does, with the same error.
func FuzzValidate(f *testing.F) {
	for i := range 3 {
		b, err := benchPod(i).Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/3])
	}
	fl := filler(5)
	for range 8 {
		p := &corev1.Pod{}
		fl.Fill(p)
		b, err := p.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkValidate(t, b) })
}

// TestValidateAgreesWithDecode checks Validate against Protobuf on every
// prefix of a Pod, on bytes with one byte changed, and on a quantity no
// parser accepts, which only the type's own Unmarshal refuses.
func TestValidateAgreesWithDecode(t *testing.T) {
	b, err := benchPod(3).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(b) {
		checkValidate(t, b[:n])
	}
	step := 1
	if testing.Short() || raceEnabled {
		step = 7
	}
	for i := 0; i < len(b); i += step {
		for _, c := range []byte{0, 0x7f, 0x80, 0xff} {
			mut := append([]byte(nil), b...)
			mut[i] = c
			checkValidate(t, mut)
		}
	}
	bad := benchPod(4)
	bad.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.Quantity{}
	good, err := bad.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// The empty quantity marshals as "0": make it a string no parser takes.
	i := strings.Index(string(good), "\x0a\x010")
	if i < 0 {
		t.Fatal("no quantity \"0\" in the Pod's bytes")
	}
	mut := append([]byte(nil), good...)
	mut[i+2] = '!'
	checkValidate(t, mut)
	if err := validateDecoders()["full"].Validate(mut); err == nil {
		t.Error("Validate accepts a quantity of \"!\"")
	}
}

// TestValidateEveryBuiltinType validates fuzzed objects of every type of
// client-go's scheme with a protobuf encoding: a valid object passes.
func TestValidateEveryBuiltinType(t *testing.T) {
	f := filler(11).MaxDepth(12)
	n := 0
	for _, typ := range scheme.Scheme.AllKnownTypes() {
		if !reflect.PointerTo(typ).Implements(unmarshalerType) || strings.HasSuffix(typ.Name(), "List") {
			continue
		}
		pt := reflect.PointerTo(typ)
		d, err := newDecoder[unsafe.Pointer](pt, pt, Options{})
		if err != nil {
			t.Errorf("%v: %v", typ, err)
			continue
		}
		for range 3 {
			obj := reflect.New(typ)
			f.Fill(obj.Interface())
			b, err := obj.Interface().(protoMessage).Marshal()
			if err != nil {
				t.Fatalf("%v: marshal: %v", typ, err)
			}
			if err := d.Validate(b); err != nil {
				t.Errorf("%v: Validate refuses a marshalled object: %v", typ, err)
			}
		}
		n++
	}
	if n < 150 {
		t.Fatalf("only %d types", n)
	}
}

// TestValidateAllocates checks that validating a Pod allocates nothing once
// its scratch values exist.
func TestValidateAllocates(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := benchPod(5)
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(b); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = d.Validate(b) }); n > 8 {
		t.Errorf("Validate allocates %v times a Pod, want at most 8 (the quantities' own Unmarshal)", n)
	}
}

// An error inside a nested message that is about the message itself (a
// tag with field number 0) is at the nested field's path, with no empty
// name after it, in Protobuf and in Validate.
func TestDecodeErrorPathOfNestedMessage(t *testing.T) {
	dec, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := []byte{1<<3 | wireBytes, 2, 0, 0} // ObjectMeta holding the tag 0
	_, perr := dec.Protobuf(b)
	for what, err := range map[string]error{"Protobuf": perr, "Validate": dec.Validate(b)} {
		var de *DecodeError
		if !errors.As(err, &de) || de.Path != "ObjectMeta" || !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want a *DecodeError at ObjectMeta wrapping ErrMalformed", what, err)
		}
	}
}

// TestValidateAgreesOnMapRuns checks a run of label entries whose first
// entry is malformed inside and whose last runs past the end of the
// metadata: both report the first entry's error, the first in the bytes.
func TestValidateAgreesOnMapRuns(t *testing.T) {
	entry := func(k, v string) []byte {
		e := append([]byte{0x0a, byte(len(k))}, k...)
		e = append(e, 0x12, byte(len(v)))
		return append(e, v...)
	}
	var meta []byte
	for _, kv := range [][2]string{{"app", "web"}, {"tier", "front"}, {"shard", "0"}} {
		e := entry(kv[0], kv[1])
		meta = append(append(meta, 0x5a, byte(len(e))), e...)
	}
	for _, tc := range []struct {
		name string
		bad  func(meta []byte) // changes the first entry
		want string
	}{
		{"end group as the key's tag", func(m []byte) { m[2] = 0x2c }, "end of group outside a group"},
		{"key longer than its entry", func(m []byte) { m[3] = 0x7f }, ErrTruncated.Error()},
		{"field 0 as the value's tag", func(m []byte) { m[2+2+3] = 0x02 }, "illegal field number 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := append([]byte(nil), meta...)
			tc.bad(m)
			// The metadata ends 2 bytes before its last entry does.
			pod := append([]byte{0x0a, byte(len(m) - 2)}, m...)
			checkValidate(t, pod)
			if err := validateDecoders()["full"].Validate(pod); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate returns %v, want an error about %q", err, tc.want)
			}
		})
	}
}
