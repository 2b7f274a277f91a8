package wire

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func mapPointer(m map[string]string) uintptr { return reflect.ValueOf(m).Pointer() }

func marshalPod(t testing.TB, p *corev1.Pod) []byte {
	t.Helper()
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Objects whose labels (or annotations) are the same on the wire share one
// map; others get their own; NoMapSharing and NoSharing turn it off.
func TestMapSharing(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	// benchPod's labels repeat every 48 Pods; its annotations are the same
	// for all. Maps enter the table the second time they come.
	if _, err := d.Protobuf(marshalPod(t, benchPod(0))); err != nil {
		t.Fatal(err)
	}
	a, _ := d.Protobuf(marshalPod(t, benchPod(0)))
	b, _ := d.Protobuf(marshalPod(t, benchPod(48)))
	c, _ := d.Protobuf(marshalPod(t, benchPod(1)))
	if mapPointer(a.Labels) != mapPointer(b.Labels) || mapPointer(a.Annotations) != mapPointer(b.Annotations) {
		t.Error("Pods with the same labels and annotations do not share their maps")
	}
	if mapPointer(a.Labels) == mapPointer(c.Labels) {
		t.Error("Pods with other labels share a map")
	}
	if mapPointer(a.Annotations) != mapPointer(c.Annotations) {
		t.Error("Pods with the same annotations do not share their map")
	}
	for _, tc := range []struct {
		name string
		opts Options
	}{{"NoMapSharing", Options{NoMapSharing: true}}, {"NoSharing", Options{NoSharing: true}}} {
		d, err := NewDecoder[*corev1.Pod, *corev1.Pod](tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := d.Protobuf(marshalPod(t, benchPod(0)))
		b, _ := d.Protobuf(marshalPod(t, benchPod(48)))
		if mapPointer(a.Labels) == mapPointer(b.Labels) || mapPointer(a.Annotations) == mapPointer(b.Annotations) {
			t.Errorf("%s: maps shared", tc.name)
		}
	}
}

// A map each object has its own of (a ConfigMap's data, a StatefulSet
// Pod's labels) never enters the table: a run enters it the second time it
// comes, so that such maps cost no copy of their bytes and do not push out
// those that repeat.
func TestMapTableKeepsWhatRepeats(t *testing.T) {
	d, err := NewDecoder[*corev1.ConfigMap, *corev1.ConfigMap](Options{})
	if err != nil {
		t.Fatal(err)
	}
	kept := func() (n int) {
		for i := range d.maps.sets {
			for _, w := range d.maps.sets[i].ways {
				if w.m != nil {
					n++
				}
			}
		}
		return n
	}
	labels := map[string]string{"app": "web"}
	for i := range 200 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: labels}, Data: map[string]string{"round": fmt.Sprint(i)}}
		b, err := cm.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.Protobuf(b)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(cm.Data, got.Data); diff != "" {
			t.Fatalf("data (-want +got):\n%s", diff)
		}
	}
	if n := kept(); n != 1 {
		t.Errorf("the table holds %d maps after 200 objects of one label set and their own data, want 1 (the labels)", n)
	}
}

// Adding to a shared map copies it first: a merge into an object (its
// labels appear twice on the wire, or ProtobufInto) never changes the
// other objects that share the map.
func TestMapSharingCopiesOnWrite(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web", "tier": "front"}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	d.Protobuf(marshalPod(t, pod("a"))) // maps enter the table the second time they come
	first, _ := d.Protobuf(marshalPod(t, pod("a")))
	second, _ := d.Protobuf(marshalPod(t, pod("b")))
	if mapPointer(first.Labels) != mapPointer(second.Labels) {
		t.Fatal("the labels are not shared")
	}

	// A merge of more labels into second.
	extra := marshalPod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"canary": "true"}}})
	if err := d.ProtobufInto(extra, second); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(labels, first.Labels); d != "" {
		t.Errorf("the other Pod's labels changed (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{"app": "web", "tier": "front", "canary": "true"}, second.Labels); d != "" {
		t.Errorf("merged labels (-want +got):\n%s", d)
	}

	// One message whose labels field comes in two runs, split by another
	// field: the second run adds to a copy.
	meta := marshalPod(t, pod("c"))
	want := &corev1.Pod{}
	split := append(append([]byte{}, meta...), extra...) // labels, name, ..., labels again
	if err := want.Unmarshal(split); err != nil {
		t.Fatal(err)
	}
	got, err := d.Protobuf(split)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("split labels (-want +got):\n%s", d)
	}
	if d := cmp.Diff(labels, first.Labels); d != "" {
		t.Errorf("the first Pod's labels changed (-want +got):\n%s", d)
	}
}

// Objects decoded from JSON share their labels and annotations too, keyed
// by their entries whatever the order on the wire, and never a map whose
// entries merely concatenate alike.
func TestJSONMapSharing(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	decode := func(js string) *corev1.Pod {
		t.Helper()
		p, err := d.JSON([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	decode(`{"metadata":{"name":"a","labels":{"app":"web","tier":"front"},"annotations":{"n":"1"}}}`) // met once
	a := decode(`{"metadata":{"name":"a","labels":{"app":"web","tier":"front"},"annotations":{"n":"1"}}}`)
	b := decode(`{"metadata":{"name":"b","labels":{"tier":"front","app":"web"},"annotations":{"n":"1"}}}`)
	c := decode(`{"metadata":{"name":"c","labels":{"app":"web"}}}`)
	if mapPointer(a.Labels) != mapPointer(b.Labels) || mapPointer(a.Annotations) != mapPointer(b.Annotations) {
		t.Error("equal labels and annotations in another order are not shared")
	}
	if mapPointer(a.Labels) == mapPointer(c.Labels) || len(c.Labels) != 1 {
		t.Errorf("other labels shared: %v", c.Labels)
	}
	// Two maps that would look alike joined with separators.
	x := decode(`{"metadata":{"name":"x","annotations":{"a":"1\u0000b\u00002"}}}`)
	y := decode(`{"metadata":{"name":"y","annotations":{"a":"1","b":"2"}}}`)
	if d := cmp.Diff(map[string]string{"a": "1", "b": "2"}, y.Annotations); d != "" || len(x.Annotations) != 1 {
		t.Errorf("annotations mixed up: %q and %q", x.Annotations, y.Annotations)
	}
	off, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{NoMapSharing: true})
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := off.JSON([]byte(`{"metadata":{"name":"a","labels":{"app":"web"}}}`))
	p2, _ := off.JSON([]byte(`{"metadata":{"name":"b","labels":{"app":"web"}}}`))
	if mapPointer(p1.Labels) == mapPointer(p2.Labels) {
		t.Error("NoMapSharing: JSON labels shared")
	}
	// A projection's Meta shares them as well.
	slim, err := NewDecoder[*podSlim, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	slim.JSON([]byte(`{"metadata":{"name":"a","labels":{"app":"web"}}}`)) // met once
	s1, _ := slim.JSON([]byte(`{"metadata":{"name":"a","labels":{"app":"web"}}}`))
	s2, _ := slim.JSON([]byte(`{"metadata":{"name":"b","labels":{"app":"web"}}}`))
	if mapPointer(s1.Labels) != mapPointer(s2.Labels) {
		t.Error("a projection's JSON labels are not shared")
	}
}

// A map that holds more than one run's entries (a merge into an object
// that had labels, or a message whose labels come in two runs) is never
// remembered for the last run: an object with just that run's entries
// gets its own.
func TestMapSharingAfterMerge(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	withLabels := func(name string, l map[string]string) []byte {
		return marshalPod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}})
	}
	check := func(what string, b []byte, got *corev1.Pod) {
		t.Helper()
		want := &corev1.Pod{}
		if err := want.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", what, d)
		}
	}
	canary := withLabels("", map[string]string{"canary": "true"})
	// seen makes the canary run one the table has met once, so that the
	// next time it comes, unless merged, it is remembered.
	seen := func() {
		t.Helper()
		if _, err := d.Protobuf(withLabels("z", map[string]string{"canary": "true"})); err != nil {
			t.Fatal(err)
		}
	}

	// A merge into an object with labels.
	seen()
	first, err := d.Protobuf(withLabels("a", map[string]string{"app": "web"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.ProtobufInto(canary, first); err != nil {
		t.Fatal(err)
	}
	fresh, err := d.Protobuf(canary)
	if err != nil {
		t.Fatal(err)
	}
	check("an object with the merged run's labels, after the merge", canary, fresh)

	// One message with its labels in two runs.
	d, err = NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	seen()
	split := append(withLabels("b", map[string]string{"tier": "front"}), canary...)
	got, err := d.Protobuf(split)
	if err != nil {
		t.Fatal(err)
	}
	check("a message with two runs of labels", split, got)
	fresh, err = d.Protobuf(canary)
	if err != nil {
		t.Fatal(err)
	}
	check("an object with the second run's labels, after the split message", canary, fresh)
}

// A set of the map table keeps its four most recently used runs: a fifth
// run replaces the one used least recently, whichever way it is in.
func TestMapSetLeastRecentlyUsed(t *testing.T) {
	var set mapSet
	typ := stringMapDescriptor
	ptr := func(m map[string]string) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&m)) }
	var written uint64
	// runOf is the protobuf run of the map {k: ""}: one map entry.
	runOf := func(k string) string {
		e := append([]byte{1<<3 | 2, byte(len(k))}, k...)
		return string(append([]byte{11<<3 | 2, byte(len(e))}, e...))
	}
	// The hash stands for the run's: runs of one set, told apart by it.
	hash := func(run string) uint64 { return uint64(run[0]) }
	get := func(run string) unsafe.Pointer { return set.get(typ, []byte(runOf(run)), hash(run), &written) }
	maps := map[string]map[string]string{}
	for _, run := range []string{"a", "b", "c", "d", "e"} {
		maps[run] = map[string]string{run: ""}
	}
	for _, run := range []string{"a", "b", "c", "d"} {
		set.put(typ, stringMapType, []byte(runOf(run)), "", hash(run), ptr(maps[run]))
	}
	for _, run := range []string{"a", "b", "c", "d"} {
		if get(run) != ptr(maps[run]) {
			t.Fatalf("run %s of four in one set is not remembered", run)
		}
	}
	for _, run := range []string{"a", "c", "d"} {
		get(run) // b is now the least recently used
	}
	set.put(typ, stringMapType, []byte(runOf("e")), "", hash("e"), ptr(maps["e"]))
	if get("b") != nil {
		t.Error("the least recently used run was kept")
	}
	for _, run := range []string{"a", "c", "d", "e"} {
		if get(run) != ptr(maps[run]) {
			t.Errorf("run %s, used recently or new, was lost", run)
		}
	}
	if get("f") != nil {
		t.Error("a run never put was found")
	}
}
