package wire

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
)

// inRecord reports whether the bytes of s lie in r's memory: its own bytes
// or one of the runs it shares.
func inRecord(r *Record, s string) bool {
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	within := func(base unsafe.Pointer, n int) bool {
		b := uintptr(base)
		return p >= b && p+uintptr(len(s)) <= b+uintptr(n)
	}
	if within(unsafe.Pointer(unsafe.StringData(r.own())), len(r.own())) {
		return true
	}
	for rf := range r.eachRef {
		if within(unsafe.Pointer(rf.p), int(rf.n)) {
			return true
		}
	}
	return false
}

// The strings of an object decoded from a protobuf record are made over the
// record's memory, its own bytes or the runs it shares, not copied; and
// the decoding is the decoder's. (A map's may lie in another record's: the
// decoder shares maps between objects.)
func TestCompactStringsAliasRecord(t *testing.T) {
	d, c := newPodCompact(t)
	for i := range 50 {
		b := marshalPod(t, benchPod(i))
		r, err := c.Protobuf(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		want, err := d.Protobuf(b)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("Pod %d decodes otherwise (-want +got):\n%s", i, diff)
		}
		for what, s := range map[string]string{
			"name": got.Name, "namespace": got.Namespace, "uid": string(got.UID), "resourceVersion": got.ResourceVersion,
			"an arg": got.Spec.Containers[0].Args[2], "an env value": got.Spec.Containers[0].Env[0].Value,
			"the image": got.Spec.Containers[0].Image,
		} {
			if !inRecord(r, s) {
				t.Fatalf("Pod %d: its %s %q is not in the record's memory", i, what, s)
			}
		}
	}
}

// An object decoded from a record stays as it was decoded after the
// record has gone and the garbage collector has run, and after other
// records have been decoded in the buffers it was decoded in: its strings
// keep the record's memory alive, and none is made over a buffer.
func TestCompactDecodedOutlivesRecord(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := NewCompact(d, 1) // each record loses its object to the next
	const n = 100
	objs := make([]*corev1.Pod, n)
	wants := make([]*corev1.Pod, n)
	for i := range n {
		r, err := c.Protobuf(marshalPod(t, benchPod(i)))
		if err != nil {
			t.Fatal(err)
		}
		if objs[i], err = c.Decode(r); err != nil {
			t.Fatal(err)
		}
		wants[i] = objs[i].DeepCopy()
	}
	// Nothing points at the records now but the objects' strings.
	runtime.GC()
	runtime.GC()
	// Other records, decoded in the same pooled buffers, and garbage that
	// reuses the memory the collector freed.
	var junk []string
	for i := range 2 * n {
		p := benchPod(1000 + i)
		p.Name = strings.Repeat("z", 40)
		r, err := c.Protobuf(marshalPod(t, p))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Decode(r); err != nil {
			t.Fatal(err)
		}
		junk = append(junk, strings.Repeat("j", 1+i%700))
	}
	runtime.GC()
	for i := range n {
		if diff := cmp.Diff(wants[i], objs[i]); diff != "" {
			t.Fatalf("Pod %d changed after its record went (-decoded +now):\n%s", i, diff)
		}
	}
	runtime.KeepAlive(junk)
}

// FuzzCompactDecode makes records of arbitrary bytes, three times over so
// that the later ones share runs with the first, and decodes them with no
// cache: whenever the generated decoder accepts the bytes, each record
// decodes into its object, with strings made over the record's memory
// wherever they lie in one run, and the first objects stay so after the
// later decodings; DecodeOwned gives the same objects, sharing nothing
// with Decode's.
func FuzzCompactDecode(f *testing.F) {
	for i := range 3 {
		f.Add(marshalPod(f, benchPod(i)))
	}
	for _, p := range testobj.RealisticPods("shop", 2, 2) {
		f.Add(marshalPod(f, p))
	}
	fl := filler(7)
	for range 4 {
		p := &corev1.Pod{}
		fl.Fill(p)
		f.Add(marshalPod(f, p))
	}
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		f.Fatal(err)
	}
	c := NewCompact(d, 0)
	f.Fuzz(func(t *testing.T, b []byte) {
		want := &corev1.Pod{}
		if want.Unmarshal(b) != nil {
			return
		}
		if lenientEntry(b, d.plan) { // accepted by the generated decoder's leniency only
			if _, err := c.Protobuf(b); err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("Compact refuses a lenient entry with %v, which wraps neither ErrMalformed nor ErrTruncated", err)
			}
			return
		}
		var got []*corev1.Pod
		for range 3 {
			r, err := c.Protobuf(b)
			if err != nil {
				t.Fatalf("the generated decoder accepts what Compact refuses: %v", err)
			}
			p, err := c.Decode(r)
			if err != nil {
				t.Fatalf("a record does not decode: %v", err)
			}
			if d := cmp.Diff(want, p); d != "" {
				t.Fatalf("a record decodes otherwise (-want +got):\n%s", d)
			}
			o, own, err := c.DecodeOwned(r)
			if err != nil || !own {
				t.Fatalf("DecodeOwned of a record c keeps no object of: owned %v, %v", own, err)
			}
			if d := cmp.Diff(want, o); d != "" {
				t.Fatalf("a record's owned object differs (-want +got):\n%s", d)
			}
			if s := testobj.SharedRefs(o, p); len(s) > 0 {
				t.Fatalf("a record's owned object shares %v with Decode's", s)
			}
			got = append(got, p)
		}
		for _, p := range got {
			if d := cmp.Diff(want, p); d != "" {
				t.Fatalf("an object changed after its records were decoded (-want +got):\n%s", d)
			}
		}
	})
}

// Objects decoded from records share the messages and runs that are equal
// on the wire, as objects decoded from bytes do (a container's ports, a
// Pod's tolerations): the decoder's table keeps the value it made the
// second time those bytes came. A kept value's strings are its own, not
// over the record it was decoded from, which the table would keep alive
// for as long as it keeps the value.
func TestCompactDecodeSharesOwnValues(t *testing.T) {
	_, c := newPodCompact(t)
	recs := podRecords(t, c, 4)
	pods := make([]*corev1.Pod, len(recs))
	for i, r := range recs {
		p, err := c.Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		pods[i] = p
	}
	first, kept, later := pods[0].Spec, pods[1].Spec, pods[3].Spec
	if &kept.Tolerations[0] != &later.Tolerations[0] || &kept.Containers[0].Ports[0] != &later.Containers[0].Ports[0] {
		t.Fatal("the tolerations and ports of Pods decoded from records, equal on the wire, are not shared")
	}
	if &first.Tolerations[0] == &kept.Tolerations[0] {
		t.Fatal("the first Pod's tolerations are shared: the table keeps bytes the second time they come")
	}
	for _, s := range []string{kept.Tolerations[0].Key, string(kept.Tolerations[1].Effect), kept.Containers[0].Ports[1].Name} {
		for i, r := range recs {
			if inRecord(r, s) {
				t.Errorf("the shared value's string %q lies in record %d's memory", s, i)
			}
		}
	}
	// A string of the Pod's own is still made over its record.
	if !inRecord(recs[3], pods[3].Spec.Containers[0].Args[2]) {
		t.Errorf("the fourth Pod's argument %q is not made over its record", pods[3].Spec.Containers[0].Args[2])
	}
}
