package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// SourceOptions.Decoded is given the objects of ADDED and MODIFIED events
// the Source decoded, with their bytes; not those of DELETED and BOOKMARK
// events, nor an object Reuse gave.
func TestSourceDecodedHook(t *testing.T) {
	pod := func(name, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	cached := pod("cached", "5")
	var stream []byte
	for _, e := range []struct {
		typ watch.EventType
		pod *corev1.Pod
	}{
		{watch.Added, pod("a", "1")},
		{watch.Added, cached}, // Reuse gives it
		{watch.Modified, pod("a", "2")},
		{watch.Deleted, pod("a", "3")},
		{watch.Bookmark, pod("", "4")},
		{watch.Added, pod("b", "6")},
	} {
		stream = append(stream, podFrame(t, e.typ, e.pod)...)
	}
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		obj *corev1.Pod
		b   []byte
	}
	var got []seen
	src := &Source[*corev1.Pod]{dec: d, opts: SourceOptions[*corev1.Pod]{
		Reuse: func(ref ObjectRef) (*corev1.Pod, bool) {
			if string(ref.Name) == "cached" {
				return cached, true
			}
			return nil, false
		},
		Decoded: func(obj *corev1.Pod, b []byte) { got = append(got, seen{obj, bytes.Clone(b)}) },
	}}
	ed := newEventDecoder(src, io.NopCloser(bytes.NewReader(stream)))
	var objs []*corev1.Pod
	for {
		_, obj, err := ed.Decode()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, obj.(*corev1.Pod))
	}
	if len(objs) != 6 {
		t.Fatalf("%d events decoded, want 6", len(objs))
	}
	want := []*corev1.Pod{objs[0], objs[2], objs[5]}
	if len(got) != len(want) {
		t.Fatalf("Decoded was given %d objects, want %d (ADDED a, MODIFIED a, ADDED b)", len(got), len(want))
	}
	for i, g := range got {
		if g.obj != want[i] {
			t.Errorf("Decoded's object %d is not the event's", i)
		}
		back, err := d.Protobuf(g.b)
		if err != nil || back.Name != g.obj.Name || back.ResourceVersion != g.obj.ResourceVersion {
			t.Errorf("Decoded's bytes %d decode to %v (%v), want %s at %s", i, back, err, g.obj.Name, g.obj.ResourceVersion)
		}
	}
}
