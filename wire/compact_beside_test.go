package wire

import (
	"bytes"
	"encoding/json"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
)

// A record read beside the record that replaced it decodes as it would
// alone, and takes from the new object the parts whose bytes did not
// change, and no other; it is not kept, unless it held its object already.
func TestCompactDecodeBeside(t *testing.T) {
	d, c := newPodCompact(t)
	base := testobj.RealisticPod("ns", 3, 2)
	status, spec, meta := changeStatus, changeSpec, changeMeta
	other := func(p *corev1.Pod) { *p = *testobj.RealisticPod("other", 9, 1) }
	for _, tc := range []struct {
		name                 string
		change               []func(*corev1.Pod)
		sameSpec, sameStatus bool
		held, json           bool
	}{
		{name: "status", change: []func(*corev1.Pod){status}, sameSpec: true},
		{name: "spec", change: []func(*corev1.Pod){spec}, sameStatus: true},
		{name: "metadata", change: []func(*corev1.Pod){meta}, sameSpec: true, sameStatus: true},
		{name: "all", change: []func(*corev1.Pod){meta, spec, status}},
		{name: "another object", change: []func(*corev1.Pod){other}},
		{name: "held", change: []func(*corev1.Pod){status}, held: true},
		{name: "json", change: []func(*corev1.Pod){status}, json: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := base.DeepCopy()
			next.ResourceVersion += "1"
			for _, f := range tc.change {
				f(next)
			}
			b1, b2 := marshalPod(t, base), marshalPod(t, next)
			r1, err := c.Protobuf(b1)
			if err != nil {
				t.Fatal(err)
			}
			if tc.json {
				j, err := json.Marshal(base)
				if err != nil {
					t.Fatal(err)
				}
				r1 = c.record(j, true, nil)
			}
			r2, err := c.Protobuf(b2)
			if err != nil {
				t.Fatal(err)
			}
			like, err := d.Protobuf(b2)
			if err != nil {
				t.Fatal(err)
			}
			var held *corev1.Pod
			if tc.held {
				if held, err = c.Decode(r1); err != nil {
					t.Fatal(err)
				}
			}
			got, err := c.DecodeBeside(r1, r2, like)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(upstreamPod(t, b1), got); diff != "" {
				t.Fatalf("-client-go +read beside:\n%s", diff)
			}
			if tc.held {
				if got != held {
					t.Error("a record that holds its object was decoded again")
				}
				return
			}
			if r1.cached() != nil {
				t.Error("the record read beside keeps its object")
			}
			if tc.json {
				tc.sameSpec = false
			}
			sameSpec := &got.Spec.Containers[0] == &like.Spec.Containers[0]
			sameStatus := &got.Status.Conditions[0] == &like.Status.Conditions[0]
			if sameSpec != tc.sameSpec || sameStatus != tc.sameStatus {
				t.Errorf("spec shared with the new object: %v, want %v; status: %v, want %v", sameSpec, tc.sameSpec, sameStatus, tc.sameStatus)
			}
			if &got.ObjectMeta == &like.ObjectMeta || got.ResourceVersion != base.ResourceVersion {
				t.Error("the metadata was not decoded")
			}
			// The strings decoded are made over the record's memory, as
			// Decode makes them.
			if !tc.json && !r1.holds(unsafe.Pointer(unsafe.StringData(got.Name))) {
				t.Error("the name is not made over the record")
			}
		})
	}
}

// FuzzCompactDecodeBeside reads the record of a beside the record of b and
// b's object: the result is the decoder's own decoding of a, whichever
// parts it took from b's object. The decoder's decoding is held to
// client-go's by FuzzDecodeProtobuf.
func FuzzCompactDecodeBeside(f *testing.F) {
	for i := range 3 {
		pod := benchPod(i)
		b := marshalPod(f, pod)
		next := pod.DeepCopy()
		next.Status.Phase = corev1.PodRunning
		f.Add(b, marshalPod(f, next))
		next.Spec.Containers[0].Image = "other"
		f.Add(marshalPod(f, next), b)
		f.Add(b, append(bytes.Clone(b), b...))
	}
	pod := testobj.RealisticPod("ns", 0, 1)
	next := pod.DeepCopy()
	next.Status.ContainerStatuses[0].RestartCount = 7
	f.Add(marshalPod(f, pod), marshalPod(f, next))
	f.Add([]byte{0x12, 0x00}, []byte{0x12, 0x00, 0x1a, 0x00})
	d, c := newPodCompact(f)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ra, err := c.Protobuf(a)
		if err != nil {
			return
		}
		rb, err := c.Protobuf(b)
		if err != nil {
			return
		}
		like, err := d.Protobuf(b)
		if err != nil {
			t.Fatalf("a record's bytes do not decode: %v", err)
		}
		want, err := d.Protobuf(a)
		if err != nil {
			t.Fatalf("a record's bytes do not decode: %v", err)
		}
		got, err := c.DecodeBeside(ra, rb, like)
		if err != nil {
			t.Fatalf("read beside: %v", err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("-whole +read beside:\n%s", diff)
		}
	})
}
