package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"reflect"
	goruntime "runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedkube/informer/internal/testobj"
)

// len returns the number of entries of t.
func (t *partsTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// upstreamPod is client-go's decoding of b.
func upstreamPod(t testing.TB, b []byte) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	if err := p.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	return p
}

// Changes of a realistic Pod's status, spec and metadata, each of one part
// of its bytes (or of none: the metadata is not a part).
func changeStatus(p *corev1.Pod) {
	p.Status.Conditions[0].LastTransitionTime = metav1.Unix(1_800_000_000, 0)
	p.Status.ContainerStatuses[0].RestartCount++
}

func changeSpec(p *corev1.Pod) { p.Spec.Containers[0].Image += "-2" }

func changeMeta(p *corev1.Pod) { p.Labels = map[string]string{"new": "label"} }

// An update decoded with the parts of the object before it equals
// client-go's decoding of its bytes, and shares the parts whose bytes did
// not change with the object before it, and no other: with the hashes of
// the bytes the object before it was decoded from, and with none (an
// object nothing remembers, such as a listed one), its parts then derived
// by encoding them again.
func TestProtobufPartsReusesUnchangedParts(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !d.parts || !d.derive {
		t.Fatalf("a Pod's decoder: parts %v, derived parts %v", d.parts, d.derive)
	}
	base := testobj.RealisticPod("ns", 3, 2)
	status, spec, meta := changeStatus, changeSpec, changeMeta
	for _, tc := range []struct {
		name                   string
		change                 []func(*corev1.Pod)
		sameSpec, sameStatus   bool
		noPrevious, wrongParts bool
	}{
		{name: "status", change: []func(*corev1.Pod){status}, sameSpec: true},
		{name: "spec", change: []func(*corev1.Pod){spec}, sameStatus: true},
		{name: "metadata", change: []func(*corev1.Pod){meta}, sameSpec: true, sameStatus: true},
		{name: "all", change: []func(*corev1.Pod){meta, spec, status}},
		{name: "none", sameSpec: true, sameStatus: true},
		{name: "no previous object", change: []func(*corev1.Pod){status}, noPrevious: true},
		{name: "parts of another object", change: []func(*corev1.Pod){status}, wrongParts: true},
		// The same size, other bytes: a derived part is encoded, and
		// hashes otherwise.
		{name: "status of the same size", change: []func(*corev1.Pod){func(p *corev1.Pod) { p.Status.Phase = "Runnin2" }}, sameSpec: true},
	} {
		for _, derived := range []bool{false, true} {
			if derived && tc.wrongParts {
				continue
			}
			t.Run(fmt.Sprintf("%s/derived=%v", tc.name, derived), func(t *testing.T) {
				// A decoder of its own, which has seen none of these bytes:
				// a part is told reused by its address, and runs of
				// repeated messages seen before would be shared.
				d := newPodDecoder(t, Options{})
				b1 := marshalPod(t, base)
				p1, ps1, err := d.protobufParts(b1, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if ps1[0].num != 2 || ps1[1].num != 3 || ps1[2].num != 0 {
					t.Fatalf("parts of a Pod: %+v, want spec (2) and status (3)", ps1)
				}
				next := base.DeepCopy()
				next.ResourceVersion += "1"
				for _, f := range tc.change {
					f(next)
				}
				b2 := marshalPod(t, next)
				prev, old := unsafe.Pointer(p1), &ps1
				switch {
				case tc.noPrevious:
					prev = nil
				case tc.wrongParts:
					other := ps1
					other[0].hash++
					other[1].hash++
					old = &other
				case derived:
					old = nil
					// What is derived is what the object's own bytes hash to.
					if got, ok := d.derivedParts(prev, &ps1); !ok || got != ps1 {
						t.Errorf("derived parts %+v (%v), want the hashes of its bytes %+v", got, ok, ps1)
					}
				}
				p2, ps2, err := d.protobufParts(b2, prev, old)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(upstreamPod(t, b2), p2); diff != "" {
					t.Fatalf("decoded with parts, -client-go +ours:\n%s", diff)
				}
				if want, _, _ := d.scanParts(b2); ps2 != want {
					t.Errorf("parts %+v, want those of its bytes %+v", ps2, want)
				}
				sameSpec := &p2.Spec.Containers[0] == &p1.Spec.Containers[0]
				sameStatus := &p2.Status.Conditions[0] == &p1.Status.Conditions[0]
				if sameSpec != tc.sameSpec || sameStatus != tc.sameStatus {
					t.Errorf("spec shared with the object before: %v, want %v; status: %v, want %v", sameSpec, tc.sameSpec, sameStatus, tc.sameStatus)
				}
				if &p2.ObjectMeta == &p1.ObjectMeta || p2.ResourceVersion != next.ResourceVersion {
					t.Error("the metadata was not decoded")
				}
			})
		}
	}
}

// Deriving a cached object's parts writes nothing into it. A Quantity's
// encoder calls its String, which keeps the string it makes in the value
// when it has none, as a Quantity parsed from "1536Mi" has none; the decoder
// makes it hold it while the object is its own. One in a map (a
// container's limits), encoded from a copy, holds it too, so that the
// encoding makes no string of it again.
func TestDerivedPartsWriteNothing(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	size := resource.MustParse("1536Mi")
	pod := testobj.RealisticPod("ns", 0, 1)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &size}}})
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1536Mi")}
	b1 := marshalPod(t, pod)
	held := func(q resource.Quantity) string { return reflect.ValueOf(q).FieldByName("s").String() }
	if up := upstreamPod(t, b1); held(*up.Spec.Volumes[len(up.Spec.Volumes)-1].EmptyDir.SizeLimit) != "" {
		t.Fatal("client-go's decoding of 1536Mi holds its string: the test does not test")
	}
	p1, err := d.Protobuf(b1)
	if err != nil {
		t.Fatal(err)
	}
	q := p1.Spec.Volumes[len(p1.Spec.Volumes)-1].EmptyDir.SizeLimit
	if held(*q) != "1536Mi" {
		t.Fatalf("the decoded Quantity holds %q, want its string 1536Mi", held(*q))
	}
	limits := maps.Clone(p1.Spec.Containers[0].Resources.Limits)
	if got := held(limits[corev1.ResourceMemory]); got != "1536Mi" {
		t.Fatalf("the decoded Quantity in a map holds %q, want its string 1536Mi", got)
	}
	if n := testing.AllocsPerRun(10, func() { _ = p1.Spec.Containers[0].Size() }); n != 0 {
		t.Errorf("sizing a decoded container allocates %v times, want none", n)
	}
	before := *q
	next := pod.DeepCopy()
	changeStatus(next)
	p2, _, err := d.protobufParts(marshalPod(t, next), unsafe.Pointer(p1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if &p2.Spec.Containers[0] != &p1.Spec.Containers[0] {
		t.Fatal("the spec was not derived and shared")
	}
	if !reflect.DeepEqual(before, *q) || !reflect.DeepEqual(limits, p1.Spec.Containers[0].Resources.Limits) {
		t.Error("deriving the parts of the cached object wrote into it")
	}
	if diff := cmp.Diff(upstreamPod(t, marshalPod(t, next)), p2); diff != "" {
		t.Fatalf("-client-go +ours:\n%s", diff)
	}
}

// A decoder of a projection, whose parts have no encoders, derives none:
// the update decodes whole; nor does one that has decoded JSON. A part that is a pointer is derived when the
// object before has it, and the update takes the very pointer.
func TestProtobufPartsDerivedWhere(t *testing.T) {
	slim, err := NewDecoder[*benchSlim, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	if slim.derive {
		t.Error("a projection's decoder derives parts")
	}
	pod := testobj.RealisticPod("ns", 0, 1)
	p1, err := slim.Protobuf(marshalPod(t, pod))
	if err != nil {
		t.Fatal(err)
	}
	p2, _, err := slim.protobufParts(marshalPod(t, pod), unsafe.Pointer(p1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if &p2.Spec.Containers[0] == &p1.Spec.Containers[0] {
		t.Error("a projection's update shares a part with no parts remembered")
	}

	// Once a decoder has decoded JSON, whose Quantities need not hold
	// their strings, it derives nothing.
	js, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	full, err := js.Protobuf(marshalPod(t, pod))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.JSON([]byte(`{"metadata":{"name":"other"}}`)); err != nil {
		t.Fatal(err)
	}
	if p, _, err := js.protobufParts(marshalPod(t, pod), unsafe.Pointer(full), nil); err != nil || &p.Spec.Containers[0] == &full.Spec.Containers[0] {
		t.Errorf("after a JSON decoding, an update shares a derived part (%v)", err)
	}

	d, err := NewDecoder[*corev1.Event, *corev1.Event](Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !d.derive {
		t.Fatal("an Event decoder derives no parts")
	}
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "e", Namespace: "ns", ResourceVersion: "1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "ns"},
		Reason:         "Pulled",
	}
	marshal := func(e *corev1.Event) []byte {
		b, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	decode := func(b []byte, prev *corev1.Event) *corev1.Event {
		t.Helper()
		var pp unsafe.Pointer
		if prev != nil {
			pp = unsafe.Pointer(prev)
		}
		got, _, err := d.protobufParts(b, pp, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := &corev1.Event{}
		if err := want.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("-client-go +ours:\n%s", diff)
		}
		return got
	}
	e1 := decode(marshal(ev), nil)
	withSeries := ev.DeepCopy()
	withSeries.ResourceVersion = "2"
	withSeries.Series = &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(time.Unix(1_800_000_000, 0))}
	e2 := decode(marshal(withSeries), e1) // e1 has no series: decoded
	if e2.Series == nil || e2.Series == e1.Series {
		t.Fatalf("the series the object before lacked: %p, before %p", e2.Series, e1.Series)
	}
	again := withSeries.DeepCopy()
	again.ResourceVersion = "3"
	e3 := decode(marshal(again), e2)
	if e3.Series != e2.Series {
		t.Error("the unchanged series is not the object before's pointer")
	}
}

// A part that comes twice is merged, as protobuf merges it; the object
// then has no parts, and an update of it reuses none.
func TestProtobufPartsTwice(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := testobj.RealisticPod("ns", 1, 1)
	b := marshalPod(t, base)
	extra := marshalPod(t, &corev1.Pod{Spec: corev1.PodSpec{NodeName: "elsewhere", Containers: []corev1.Container{{Name: "more"}}}})
	twice := append(bytes.Clone(b), extra...) // a second spec (field 2), merged into the first
	p1, ps1, err := d.protobufParts(b, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p2, ps2, err := d.protobufParts(twice, unsafe.Pointer(p1), &ps1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(upstreamPod(t, twice), p2); diff != "" {
		t.Fatalf("-client-go +ours:\n%s", diff)
	}
	if ps2 != (parts{}) {
		t.Errorf("parts of a message with its spec twice: %+v, want none", ps2)
	}
	if &p2.Spec.Containers[0] == &p1.Spec.Containers[0] {
		t.Error("the merged spec is shared with the object before")
	}
}

// A write to a cached object's part (which the contract forbids) reaches
// the versions that reuse the part, as Options.NoPartReuse says; with that
// option, every update is decoded whole and the write stays in its object.
func TestProtobufPartsWrittenPart(t *testing.T) {
	for _, noReuse := range []bool{false, true} {
		d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{NoPartReuse: noReuse})
		if err != nil {
			t.Fatal(err)
		}
		cache := map[string]*corev1.Pod{}
		src := NewSource(nil, "pods", "", d, SourceOptions[*corev1.Pod]{
			Previous: func(ref ObjectRef) (*corev1.Pod, bool) {
				p, ok := cache[string(ref.Name)]
				return p, ok
			},
		})
		if (src.parts == nil) != noReuse {
			t.Fatalf("NoPartReuse %v: a table of parts %v", noReuse, src.parts != nil)
		}
		pod := testobj.RealisticPod("ns", 0, 1)
		var stream []byte
		for i := range 3 {
			pod = pod.DeepCopy()
			pod.ResourceVersion = fmt.Sprint(10 + i)
			pod.Status.ContainerStatuses[0].RestartCount = int32(i)
			stream = append(stream, podFrame(t, watch.Modified, pod)...)
		}
		ed := newEventDecoder(src, io.NopCloser(bytes.NewReader(stream)))
		for i := range 3 {
			_, obj, err := ed.Decode()
			if err != nil {
				t.Fatal(err)
			}
			p := obj.(*corev1.Pod)
			want := pod.Spec.NodeName
			if i > 0 && !noReuse {
				want = "written"
			}
			if p.Spec.NodeName != want {
				t.Errorf("NoPartReuse %v, version %d: node %q, want %q", noReuse, i, p.Spec.NodeName, want)
			}
			p.Spec.NodeName = "written" // a program's write to the cached object
			cache[p.Name] = p
		}
	}
}

// Types without parts (a ConfigMap's fields besides its metadata are maps
// and scalars) are decoded as ever, and a Source keeps no table for them.
func TestProtobufPartsNone(t *testing.T) {
	d, err := NewDecoder[*corev1.ConfigMap, *corev1.ConfigMap](Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.parts {
		t.Fatal("a ConfigMap has parts")
	}
	src := NewSource(nil, "configmaps", "", d, SourceOptions[*corev1.ConfigMap]{
		Previous: func(ObjectRef) (*corev1.ConfigMap, bool) { return nil, false },
	})
	if src.parts != nil {
		t.Error("a Source of ConfigMaps keeps a table of parts")
	}
}

// podFrame is the frame of a watch event of p.
func podFrame(t testing.TB, typ watch.EventType, p *corev1.Pod) []byte {
	t.Helper()
	u, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Pod"}, Raw: marshalPod(t, p)}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	ev, err := (&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: append([]byte("k8s\x00"), u...)}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(ev))), ev...)
}

// A Source with Previous shares a MODIFIED or DELETED event's unchanged
// parts with the cached object: by the hashes it remembers when that object
// is the one it decoded from the previous ADDED or MODIFIED event, and by
// the object's parts encoded again otherwise (a listed object, or one the
// cache has not caught up with); a changed part is never shared. DELETED
// forgets the object, a list forgets them all, and the ADDED events of a
// watch-list's initial state are not remembered. With WeakPrevious it is the
// same while the cache holds its objects.
func TestSourcePrevious(t *testing.T) {
	for _, weak := range []bool{false, true} {
		t.Run(fmt.Sprintf("weak=%v", weak), func(t *testing.T) { testSourcePrevious(t, weak) })
	}
}

// cachedSource returns a Source of Pods whose Previous reads cache, by
// namespace/name.
func cachedSource(t *testing.T, weak bool) (src *Source[*corev1.Pod], cache map[string]*corev1.Pod) {
	t.Helper()
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	cache = map[string]*corev1.Pod{}
	src = NewSource(nil, "pods", "", d, SourceOptions[*corev1.Pod]{
		Previous: func(ref ObjectRef) (*corev1.Pod, bool) {
			p, ok := cache[string(ref.Namespace)+"/"+string(ref.Name)]
			return p, ok
		},
		WeakPrevious: weak,
	})
	return src, cache
}

func testSourcePrevious(t *testing.T, weak bool) {
	src, cache := cachedSource(t, weak)
	a := testobj.RealisticPod("ns", 0, 1)
	b := testobj.RealisticPod("ns", 1, 1)
	version := func(p *corev1.Pod, rv string) *corev1.Pod {
		p = p.DeepCopy()
		p.ResourceVersion = rv
		p.Status.ContainerStatuses[0].RestartCount++
		return p
	}
	respec := func(p *corev1.Pod, rv string) *corev1.Pod {
		p = version(p, rv)
		changeSpec(p)
		return p
	}
	type step struct {
		typ    watch.EventType
		pod    *corev1.Pod
		cache  bool // the cache takes the event's object
		shared bool // the object shares its spec with the cached one
	}
	run := func(t *testing.T, initial bool, steps []step) {
		t.Helper()
		var stream []byte
		for _, s := range steps {
			stream = append(stream, podFrame(t, s.typ, s.pod)...)
		}
		ed := newEventDecoder(src, io.NopCloser(bytes.NewReader(stream)))
		ed.initial = initial
		for i, s := range steps {
			_, obj, err := ed.Decode()
			if err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
			p := obj.(*corev1.Pod)
			if diff := cmp.Diff(upstreamPod(t, marshalPod(t, s.pod)), p); diff != "" {
				t.Fatalf("event %d, -client-go +ours:\n%s", i, diff)
			}
			key := p.Namespace + "/" + p.Name
			if c := cache[key]; c != nil && (s.typ == watch.Modified || s.typ == watch.Deleted) {
				if shared := &p.Spec.Containers[0] == &c.Spec.Containers[0]; shared != s.shared {
					t.Errorf("event %d (%s %s): spec shared with the cached object: %v, want %v", i, s.typ, key, shared, s.shared)
				}
			}
			switch {
			case s.typ == watch.Deleted:
				delete(cache, key)
			case s.cache:
				cache[key] = p
			}
		}
		if _, _, err := ed.Decode(); !errors.Is(err, io.EOF) {
			t.Fatalf("after the events: %v", err)
		}
	}
	run(t, false, []step{
		{typ: watch.Added, pod: a, cache: true},
		{typ: watch.Added, pod: b},                                             // not cached yet
		{typ: watch.Modified, pod: version(a, "2"), cache: true, shared: true}, // the cache has the added object
		{typ: watch.Modified, pod: version(a, "3"), cache: true, shared: true}, // the cache has the object of "2"
		{typ: watch.Modified, pod: version(a, "4"), shared: true},              // the cache keeps "3", as if not yet applied
		{typ: watch.Modified, pod: version(a, "5"), cache: true, shared: true}, // the cache has "3", the table "4": derived
		{typ: watch.Modified, pod: respec(a, "5a"), cache: true},               // the spec changed
		{typ: watch.Modified, pod: version(b, "6"), cache: true},               // the cache has not b's added object
		{typ: watch.Modified, pod: version(b, "7"), cache: true, shared: true},
		{typ: watch.Deleted, pod: version(b, "8"), shared: true},
	})
	if n := src.parts.len(); n != 1 {
		t.Fatalf("%d objects remembered after DELETED, want 1", n)
	}
	src.listing(metav1.ListOptions{Continue: "next"})
	if n := src.parts.len(); n != 1 {
		t.Fatalf("%d objects remembered after a list's later page, want 1", n)
	}
	src.listing(metav1.ListOptions{Watch: true})
	if n := src.parts.len(); n != 1 {
		t.Fatalf("%d objects remembered after a watch, want 1", n)
	}
	src.listing(metav1.ListOptions{})
	if n := src.parts.len(); n != 0 {
		t.Fatalf("%d objects remembered after a list, want 0", n)
	}
	run(t, false, []step{{typ: watch.Modified, pod: respec(a, "9"), cache: true, shared: true}}) // forgotten: derived from "5a"
	yes := true
	src.listing(metav1.ListOptions{Watch: true, SendInitialEvents: &yes})
	if n := src.parts.len(); n != 0 {
		t.Fatalf("%d objects remembered after a watch-list start, want 0", n)
	}
	// A watch-list's initial ADDED events are a list, up to its BOOKMARK;
	// an ADDED event after it is an object added since.
	clear(cache)
	c, d := testobj.RealisticPod("ns", 2, 1), testobj.RealisticPod("ns", 3, 1)
	end := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "10", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	run(t, true, []step{
		{typ: watch.Added, pod: c, cache: true},
		{typ: watch.Added, pod: a, cache: true},
		{typ: watch.Bookmark, pod: end},
		{typ: watch.Added, pod: d, cache: true},
		{typ: watch.Modified, pod: version(c, "11"), cache: true, shared: true}, // listed: derived
		{typ: watch.Modified, pod: version(d, "12"), cache: true, shared: true},
		{typ: watch.Deleted, pod: respec(a, "13")}, // listed, its spec changed
		{typ: watch.Deleted, pod: version(d, "14"), shared: true},
	})
}

// A Source with WeakPrevious keeps no object it remembers alive: once the
// cache lets go of an update's object, the object is collected and the
// Source no longer uses its parts; the next update is decoded whole.
// Without WeakPrevious the Source holds the object until the next update
// of its key.
func TestSourceWeakPrevious(t *testing.T) {
	src, cache := cachedSource(t, true)
	pod := testobj.RealisticPod("ns", 0, 1)
	decode := func(rv string) *corev1.Pod {
		t.Helper()
		pod = pod.DeepCopy()
		pod.ResourceVersion = rv
		pod.Status.ContainerStatuses[0].RestartCount++
		ed := newEventDecoder(src, io.NopCloser(bytes.NewReader(podFrame(t, watch.Modified, pod))))
		_, obj, err := ed.Decode()
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*corev1.Pod)
	}
	first := decode("2")
	cache["ns/"+first.Name] = first
	second := decode("3")
	if &second.Spec.Containers[0] != &first.Spec.Containers[0] {
		t.Fatal("the update does not share the spec of the cached object")
	}
	collected := make(chan struct{})
	goruntime.AddCleanup(second, func(ch chan struct{}) { close(ch) }, collected)
	second = nil
	clear(cache) // the cache lets go of both objects
	key := []byte("ns/" + first.Name)
	waitCollected(t, collected, func() bool {
		e, ok := src.parts.get(key)
		return !ok || e.object() == nil
	})
	third := decode("4")
	cache["ns/"+third.Name] = third
	if fourth := decode("5"); &fourth.Spec.Containers[0] != &third.Spec.Containers[0] {
		t.Fatal("after its object was collected, an update of the object cached again does not share its spec")
	}
	got := decode("6")
	if diff := cmp.Diff(upstreamPod(t, marshalPod(t, pod)), got); diff != "" {
		t.Fatalf("-client-go +ours:\n%s", diff)
	}
}

// waitCollected collects garbage until collected is closed and gone
// reports true, and fails the test if that takes more than 10 seconds.
func waitCollected(t *testing.T, collected <-chan struct{}, gone func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for done := false; !done || !gone(); {
		select {
		case <-collected:
			done = true
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("an object the parts table remembers was not collected (%v) or its entry is still of use (%v) within 10s", done, !gone())
		}
		goruntime.GC()
		goruntime.Gosched()
	}
}

// A weak table keeps the entry of an object that was collected until its
// next sweep, which comes after as many puts as the last sweep left
// entries (minSweep at least), and never uses it: the entries it holds stay
// within about twice those of live objects, however many objects come and
// go.
func TestPartsTableSweepsCollected(t *testing.T) {
	tb := newPartsTable(true)
	ps := parts{{num: 1, n: 8, hash: 1}}
	dead := []byte("ns/dead")
	collected := make(chan struct{})
	func() {
		obj := new([64]byte)
		goruntime.AddCleanup(obj, func(ch chan struct{}) { close(ch) }, collected)
		tb.put(dead, unsafe.Pointer(obj), ps)
	}()
	waitCollected(t, collected, func() bool {
		e, ok := tb.get(dead)
		return ok && e.object() == nil // there, and of no use
	})
	live := make([]*[64]byte, minSweep-1)
	for i := range live {
		live[i] = new([64]byte)
	}
	for i := range minSweep - 2 {
		tb.put(fmt.Appendf(nil, "ns/live-%d", i), unsafe.Pointer(live[i]), ps)
	}
	if _, ok := tb.get(dead); !ok || tb.len() != minSweep-1 {
		t.Fatalf("before the sweep: the dead entry there %v, %d entries; want true, %d", ok, tb.len(), minSweep-1)
	}
	tb.put([]byte("ns/live-last"), unsafe.Pointer(live[minSweep-2]), ps) // the minSweep-th put sweeps
	if _, ok := tb.get(dead); ok || tb.len() != minSweep-1 {
		t.Fatalf("after the sweep: the dead entry there %v, %d entries; want false, %d", ok, tb.len(), minSweep-1)
	}
	// Puts of new keys whose objects are let go at once, collected every
	// minSweep puts: a sweep leaves the live entries and at most minSweep
	// of objects not collected yet, and the next comes after as many
	// puts, so the table holds at most 4*minSweep, and a few more if a
	// collection keeps some of them for one more cycle (a frame scanned
	// conservatively); without sweeps it would reach 21*minSweep.
	for i := range 20 * minSweep {
		if i%minSweep == 0 {
			goruntime.GC()
		}
		tb.put(fmt.Appendf(nil, "ns/gone-%d", i), unsafe.Pointer(new([64]byte)), ps)
		if n := tb.len(); n > 6*minSweep {
			t.Fatalf("after %d puts of objects let go: %d entries, %d of them live", i+1, n, minSweep-1)
		}
	}
	for i := range live[:minSweep-2] {
		if e, ok := tb.get(fmt.Appendf(nil, "ns/live-%d", i)); !ok || e.object() != unsafe.Pointer(live[i]) {
			t.Fatalf("the entry of live object %d is gone or not its own", i)
		}
	}
	goruntime.KeepAlive(live)
}

// FuzzProtobufParts decodes a, then b with a's parts, as hashed from a's
// bytes and as derived from the object decoded: the result is the
// decoder's own decoding of b, whichever parts it took from a. The
// decoder's decoding is held to client-go's by FuzzDecodeProtobuf.
func FuzzProtobufParts(f *testing.F) {
	for i := range 3 {
		pod := benchPod(i)
		b := marshalPod(f, pod)
		next := pod.DeepCopy()
		next.Status.Phase = corev1.PodRunning
		f.Add(b, marshalPod(f, next))
		next.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
		f.Add(b, marshalPod(f, next))
		f.Add(b, append(bytes.Clone(b), b...))
	}
	pod := testobj.RealisticPod("ns", 0, 1)
	next := pod.DeepCopy()
	next.Status.ContainerStatuses[0].RestartCount = 7
	f.Add(marshalPod(f, pod), marshalPod(f, next))
	f.Add([]byte{0x12, 0x00}, []byte{0x12, 0x00, 0x1a, 0x00})
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		pa, psa, err := d.protobufParts(a, nil, nil)
		if err != nil {
			return
		}
		if want, _, ok := d.scanParts(a); ok && psa != want || !ok && psa != (parts{}) {
			t.Fatalf("parts of a: %+v, scanned %+v (%v)", psa, want, ok)
		}
		got, _, err := d.protobufParts(b, unsafe.Pointer(pa), &psa)
		derived, _, derr := d.protobufParts(b, unsafe.Pointer(pa), nil)
		want, werr := d.Protobuf(b)
		if (err == nil) != (werr == nil) || (derr == nil) != (werr == nil) {
			t.Fatalf("with parts: %v; derived: %v; whole: %v", err, derr, werr)
		}
		if err != nil {
			return
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("-whole +with parts:\n%s", diff)
		}
		if diff := cmp.Diff(want, derived); diff != "" {
			t.Fatalf("-whole +with derived parts:\n%s", diff)
		}
	})
}

// The fuzz target's check on seeded mutations of a realistic Pod and its
// update: byte changes, cuts and repeats anywhere, in both the object and
// the update, so that lengths, tags and parts' bytes all break somewhere.
func TestProtobufPartsMutations(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	pod := testobj.RealisticPod("ns", 0, 1)
	next := pod.DeepCopy()
	next.Status.ContainerStatuses[0].RestartCount = 7
	a0, b0 := marshalPod(t, pod), marshalPod(t, next)
	r := rand.New(rand.NewPCG(37, 38))
	mutate := func(b []byte) []byte {
		b = bytes.Clone(b)
		switch r.IntN(4) {
		case 0: // leave it
		case 1:
			for range 1 + r.IntN(3) {
				b[r.IntN(len(b))] = byte(r.IntN(256))
			}
		case 2:
			b = b[:r.IntN(len(b))]
		case 3:
			i := r.IntN(len(b))
			b = append(b[:i:i], b[r.IntN(len(b)):]...)
		}
		return b
	}
	n := 2000
	if testing.Short() || raceEnabled {
		n = 300
	}
	var reusedSome, derivedSome int
	for i := range n {
		a, b := mutate(a0), mutate(b0)
		pa, psa, err := d.protobufParts(a, nil, nil)
		if err != nil {
			continue
		}
		got, _, err := d.protobufParts(b, unsafe.Pointer(pa), &psa)
		derived, _, derr := d.protobufParts(b, unsafe.Pointer(pa), nil)
		want, werr := d.Protobuf(b)
		if (err == nil) != (werr == nil) || (derr == nil) != (werr == nil) {
			t.Fatalf("mutation %d: with parts: %v; derived: %v; whole: %v", i, err, derr, werr)
		}
		if err != nil {
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("mutation %d, -whole +with parts:\n%s", i, diff)
		}
		if diff := cmp.Diff(want, derived); diff != "" {
			t.Fatalf("mutation %d, -whole +with derived parts:\n%s", i, diff)
		}
		if len(got.Spec.Containers) > 0 && len(pa.Spec.Containers) > 0 && &got.Spec.Containers[0] == &pa.Spec.Containers[0] {
			reusedSome++
		}
		if len(derived.Spec.Containers) > 0 && len(pa.Spec.Containers) > 0 && &derived.Spec.Containers[0] == &pa.Spec.Containers[0] {
			derivedSome++
		}
	}
	if reusedSome == 0 {
		t.Error("no mutation reused a part")
	}
	if derivedSome == 0 {
		t.Error("no mutation reused a derived part")
	}
}
