package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedkube/informer/internal/testobj"
)

// erasedPair is a decoder of *corev1.Pod and one made by NewDecoderOf that
// hands the same Pods out as runtime.Object.
func erasedPair(t *testing.T, opts Options) (*Decoder[*corev1.Pod], *Decoder[runtime.Object]) {
	t.Helper()
	typed, err := NewDecoder[*corev1.Pod, *corev1.Pod](opts)
	if err != nil {
		t.Fatal(err)
	}
	erased, err := NewDecoderOf[runtime.Object](reflect.TypeFor[*corev1.Pod](), opts)
	if err != nil {
		t.Fatal(err)
	}
	return typed, erased
}

// A decoder made by NewDecoderOf decodes protobuf and JSON into the type
// it was given, exactly as NewDecoder's does, and sizes what it decodes
// alike: its Sizer gives an object the size a Sizer of *corev1.Pod that
// knows the same sharing gives it, and without sharing the size
// NewDecoder's Sizer gives NewDecoder's object. (With sharing, two
// decoders' bounded tables, hashed with seeds of their own, may keep
// different strings and maps, so their objects' sizes need not match.)
func TestNewDecoderOfDecodesAsNewDecoder(t *testing.T) {
	for _, opts := range []Options{{}, {DropManagedFields: true}, {NoSharing: true}} {
		typed, erased := erasedPair(t, opts)
		ts, es := typed.Sizer(), erased.Sizer()
		podSizer := &Sizer[*corev1.Pod]{top: sizePlanOf(reflect.TypeFor[*corev1.Pod]()), shares: erased.share}
		for i := range 20 {
			pod := testobj.RealisticPod("ns", i, 1)
			pb := marshalPod(t, pod)
			js, err := json.Marshal(pod)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"protobuf", "json"} {
				// Each decoder decodes the same bytes in the same order, so
				// that their sharing tables stay alike.
				want, werr := typed.Protobuf(pb)
				got, err := erased.Protobuf(pb)
				if name == "json" {
					want, werr = typed.JSON(js)
					got, err = erased.JSON(js)
				}
				if werr != nil {
					t.Fatal(werr)
				}
				if err != nil {
					t.Fatalf("%+v %s: %v", opts, name, err)
				}
				p, ok := got.(*corev1.Pod)
				if !ok {
					t.Fatalf("%+v %s: decoded a %T", opts, name, got)
				}
				if diff := cmp.Diff(want, p); diff != "" {
					t.Errorf("%+v %s, Pod %d (-NewDecoder +NewDecoderOf):\n%s", opts, name, i, diff)
				}
				if w, g := podSizer.Size(p), es.Size(got); w != g || g == 0 {
					t.Errorf("%+v %s: Sizer %d bytes, a Sizer of *corev1.Pod %d", opts, name, g, w)
				}
				if w, g := ts.Size(want), es.Size(got); opts.NoSharing && w != g {
					t.Errorf("%+v %s: Sizer %d bytes, NewDecoder's %d", opts, name, g, w)
				}
			}
			into := runtime.Object(&corev1.Pod{})
			if err := erased.ProtobufInto(pb, into); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(pod, into); diff != "" && !opts.DropManagedFields {
				t.Errorf("ProtobufInto (-sent +decoded):\n%s", diff)
			}
		}
	}
}

// A Source over a decoder made by NewDecoderOf takes the unchanged parts
// of the cached object an update replaces, derived and remembered, as
// one over NewDecoder's does, and takes nothing from a cached object of
// another type.
func TestNewDecoderOfSourceParts(t *testing.T) {
	_, erased := erasedPair(t, Options{})
	cache := map[string]runtime.Object{}
	src := NewSource(nil, "pods", "", erased, SourceOptions[runtime.Object]{
		Previous: func(ref ObjectRef) (runtime.Object, bool) {
			p, ok := cache[string(ref.Name)]
			return p, ok
		},
	})
	pod := testobj.RealisticPod("ns", 0, 1)
	listed, err := erased.Protobuf(marshalPod(t, pod))
	if err != nil {
		t.Fatal(err)
	}
	cache[pod.Name] = listed
	var stream []byte
	var sent []*corev1.Pod
	for i := range 3 {
		pod = pod.DeepCopy()
		pod.ResourceVersion = fmt.Sprint(10 + i)
		pod.Status.ContainerStatuses[0].RestartCount = int32(i + 1)
		stream = append(stream, podFrame(t, watch.Modified, pod)...)
		sent = append(sent, pod)
	}
	ed := newEventDecoder(src, io.NopCloser(bytes.NewReader(stream)))
	for i := range 3 {
		_, obj, err := ed.Decode()
		if err != nil {
			t.Fatal(err)
		}
		p, ok := obj.(*corev1.Pod)
		if !ok {
			t.Fatalf("update %d: a %T", i, obj)
		}
		if diff := cmp.Diff(sent[i], p); diff != "" {
			t.Errorf("update %d (-sent +decoded):\n%s", i, diff)
		}
		prev := cache[p.Name].(*corev1.Pod)
		if &p.Spec.Containers[0] != &prev.Spec.Containers[0] {
			t.Errorf("update %d (parts %s): the spec is not the cached object's", i, map[bool]string{true: "derived", false: "remembered"}[i == 0])
		}
		cache[p.Name] = obj
	}

	// A cached object of another Go type is no object to take parts from.
	cache[pod.Name] = &corev1.ConfigMap{}
	pod = pod.DeepCopy()
	pod.ResourceVersion = "20"
	ed = newEventDecoder(src, io.NopCloser(bytes.NewReader(podFrame(t, watch.Modified, pod))))
	_, obj, err := ed.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pod, obj); diff != "" {
		t.Errorf("beside a ConfigMap (-sent +decoded):\n%s", diff)
	}
}

// A Compact over a decoder made by NewDecoderOf keeps, decodes and sizes
// records as one over NewDecoder's does, and decodes beside a like
// object.
func TestNewDecoderOfCompact(t *testing.T) {
	typed, erased := erasedPair(t, Options{})
	tc, ec := NewCompact(typed, 8), NewCompact(erased, 8)
	var last, lastTyped *Record
	var lastObj runtime.Object
	for i := range 4 {
		pod := testobj.RealisticPod("ns", 0, 1)
		pod.ResourceVersion = fmt.Sprint(10 + i)
		pod.Status.ContainerStatuses[0].RestartCount = int32(i)
		b := marshalPod(t, pod)
		tr, err := tc.Protobuf(b)
		if err != nil {
			t.Fatal(err)
		}
		er, err := ec.Protobuf(b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(tr.AppendTo(nil), er.AppendTo(nil)) {
			t.Fatalf("record %d: its bytes differ from NewDecoder's", i)
		}
		want, err := tc.Decode(tr)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ec.Decode(er)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("record %d (-NewDecoder +NewDecoderOf):\n%s", i, diff)
		}
		if held, ok := ec.HeldObject(er); !ok || held != got {
			t.Errorf("record %d: holds %v (%v), want the object decoded", i, held, ok)
		}
		if last != nil {
			prev, err := ec.DecodeBeside(last, er, got)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tc.DecodeBeside(lastTyped, tr, want); err != nil {
				t.Fatal(err)
			}
			if prev.(*corev1.Pod) != lastObj.(*corev1.Pod) {
				t.Errorf("record %d: DecodeBeside of the held record decoded it again", i)
			}
		}
		last, lastTyped, lastObj = er, tr, got
		rec, err := ec.Encode(got)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tc.Encode(want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rec.AppendTo(nil), er.AppendTo(nil)) {
			t.Errorf("record %d: Encode of the decoded object differs from its record", i)
		}
	}
	if w, g := tc.DecodedBytes(), ec.DecodedBytes(); w != g || g == 0 {
		t.Errorf("DecodedBytes %d, NewDecoder's %d", g, w)
	}
}

// NewDecoderOf refuses a type that is not PP and does not implement it, or
// that is no pointer to a struct, with a *MismatchError; PP may be the
// type itself, or any interface it implements.
func TestNewDecoderOfTypes(t *testing.T) {
	var mismatch *MismatchError
	for name, err := range map[string]error{
		"nil type": func() error { _, err := NewDecoderOf[runtime.Object](nil, Options{}); return err }(),
		"not implementing": func() error {
			_, err := NewDecoderOf[runtime.Object](reflect.TypeFor[*corev1.PodSpec](), Options{})
			return err
		}(),
		"struct, not a ptr": func() error { _, err := NewDecoderOf[any](reflect.TypeFor[corev1.Pod](), Options{}); return err }(),
		"another pointer": func() error {
			_, err := NewDecoderOf[*corev1.Pod](reflect.TypeFor[*corev1.Node](), Options{})
			return err
		}(),
	} {
		if !errors.As(err, &mismatch) {
			t.Errorf("%s: %v, want a *MismatchError", name, err)
		}
	}
	pod := testobj.RealisticPod("ns", 0, 1)
	b := marshalPod(t, pod)
	self, err := NewDecoderOf[*corev1.Pod](reflect.TypeFor[*corev1.Pod](), Options{})
	if err != nil {
		t.Fatal(err)
	}
	empty, err := NewDecoderOf[any](reflect.TypeFor[*corev1.Pod](), Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := self.Protobuf(b)
	if err != nil {
		t.Fatal(err)
	}
	a, err := empty.Protobuf(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pod, p); diff != "" {
		t.Errorf("PP the type itself (-sent +decoded):\n%s", diff)
	}
	if diff := cmp.Diff(any(pod), a); diff != "" {
		t.Errorf("PP any (-sent +decoded):\n%s", diff)
	}
	if got := empty.pointerOf(any("a string")); got != nil {
		t.Errorf("pointerOf a string in an any: %v, want nil", got)
	}
}
