package wire

import (
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// anyMapPointer returns the address of the map m, of any map type.
func anyMapPointer(m any) uintptr { return reflect.ValueOf(m).Pointer() }

// decodeChecked decodes the protobuf of p with d and checks the object is
// what client-go's generated decoder makes of it.
func decodeChecked(t *testing.T, d *Decoder[*corev1.Pod], p *corev1.Pod) *corev1.Pod {
	t.Helper()
	return decodeBytesChecked(t, d, marshalPod(t, p))
}

// decodeBytesChecked decodes the protobuf message b of a Pod with d and
// checks the object is what client-go's generated decoder makes of it.
func decodeBytesChecked(t *testing.T, d *Decoder[*corev1.Pod], b []byte) *corev1.Pod {
	t.Helper()
	want := upstreamPod(t, b)
	got, err := d.Protobuf(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%s differs from client-go's decoding (-want +got):\n%s", want.Name, diff)
	}
	return got
}

// Realistic Pods whose containers ask for the same resources share one
// ResourceList; lists of other entries (another container's, the limits
// beside the requests) are other maps; NoMapSharing and NoSharing turn it
// off.
func TestResourceListSharing(t *testing.T) {
	pods := testobj.RealisticPods("shop", 2, 2) // of two ReplicaSets: only their resources are alike
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	decodeChecked(t, d, pods[0]) // maps enter the table the second time they come
	a, b := decodeChecked(t, d, pods[0]), decodeChecked(t, d, pods[1])
	for c := range a.Spec.Containers {
		ra, rb := a.Spec.Containers[c].Resources, b.Spec.Containers[c].Resources
		if anyMapPointer(ra.Requests) != anyMapPointer(rb.Requests) || anyMapPointer(ra.Limits) != anyMapPointer(rb.Limits) {
			t.Errorf("container %d: equal requests and limits of two Pods are not shared", c)
		}
		if anyMapPointer(ra.Requests) == anyMapPointer(ra.Limits) {
			t.Errorf("container %d: its requests and limits are one map", c)
		}
	}
	if anyMapPointer(a.Spec.Containers[0].Resources.Requests) == anyMapPointer(a.Spec.Containers[1].Resources.Requests) {
		t.Error("the different requests of two containers are one map")
	}
	for _, opts := range []Options{{NoMapSharing: true}, {NoSharing: true}} {
		d, err := NewDecoder[*corev1.Pod, *corev1.Pod](opts)
		if err != nil {
			t.Fatal(err)
		}
		a, b := decodeChecked(t, d, pods[0]), decodeChecked(t, d, pods[1])
		if anyMapPointer(a.Spec.Containers[0].Resources.Requests) == anyMapPointer(b.Spec.Containers[0].Resources.Requests) {
			t.Errorf("%+v: requests shared", opts)
		}
	}
}

// podMixedLimits declares the limits of containers as a ResourceList and
// those of init containers as the unnamed map type under it: on the wire
// the two are the same field of the same message.
type podMixedLimits struct {
	Meta[podMixedLimits]
	Spec struct {
		Containers []struct {
			Resources struct{ Limits corev1.ResourceList }
		}
		InitContainers []struct {
			Resources struct {
				Limits map[corev1.ResourceName]resource.Quantity
			}
		}
	}
}

// Two maps of different types whose entries are the same bytes on the
// wire are never one map; two of one type are.
func TestSharedMapKeyHasTheType(t *testing.T) {
	d, err := NewDecoder[*podMixedLimits, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	limits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")}
	pod := func(name string) []byte {
		c := corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Limits: limits}}
		return marshalPod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{c}, InitContainers: []corev1.Container{c}}})
	}
	if _, err := d.Protobuf(pod("a")); err != nil { // maps enter the table the second time they come
		t.Fatal(err)
	}
	a, err := d.Protobuf(pod("a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.Protobuf(pod("b"))
	if err != nil {
		t.Fatal(err)
	}
	containers, inits := a.Spec.Containers[0].Resources.Limits, a.Spec.InitContainers[0].Resources.Limits
	if anyMapPointer(containers) == anyMapPointer(inits) {
		t.Error("a ResourceList and a map[ResourceName]Quantity are one map")
	}
	if d := cmp.Diff(map[corev1.ResourceName]resource.Quantity(limits), inits); d != "" {
		t.Errorf("init container limits (-want +got):\n%s", d)
	}
	if anyMapPointer(containers) != anyMapPointer(b.Spec.Containers[0].Resources.Limits) ||
		anyMapPointer(inits) != anyMapPointer(b.Spec.InitContainers[0].Resources.Limits) {
		t.Error("equal maps of one type in two objects are not shared")
	}

	// The table itself: one run, two types.
	tab := newMapTable()
	run := []byte("\x0a\x05\x0a\x01a\x12\x00")
	if set, _, _ := tab.find(stringMapDescriptor, run); set != nil {
		t.Fatal("a run met once is to be remembered")
	}
	set, h, _ := tab.find(stringMapDescriptor, run)
	if set == nil {
		t.Fatal("a run met twice is not to be remembered")
	}
	m := map[string]string{"a": ""}
	set.put(stringMapDescriptor, stringMapType, run, "", h, *(*unsafe.Pointer)(unsafe.Pointer(&m)))
	if _, _, seen := tab.find(typeDescriptor(reflect.TypeFor[map[string][]byte]()), run); seen != nil {
		t.Error("a map of another type with the same bytes was found")
	}
	if _, _, seen := tab.find(stringMapDescriptor, run); seen == nil {
		t.Error("the map of the same type and bytes was not found")
	}
	// And in one set, where the type's hash does not set them apart.
	var one mapSet
	one.put(stringMapDescriptor, stringMapType, run, "", 7, *(*unsafe.Pointer)(unsafe.Pointer(&m)))
	var written uint64
	if one.get(typeDescriptor(reflect.TypeFor[map[string][]byte]()), run, 7, &written) != nil {
		t.Error("a set found a map of another type with the same bytes")
	}
}

// overheadPod returns a Pod whose spec's overhead is the list of name and
// quantity pairs kv.
func overheadPod(name string, kv ...string) *corev1.Pod {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Overhead: l}}
}

// A ResourceList holding a Quantity kept as an inf.Dec, whose copies share
// it, is never shared: computing with a copy of one object's value never
// changes another's.
func TestResourceListWithDecNotShared(t *testing.T) {
	// More digits than an int64 holds, in canonical form: a Dec on the
	// wire too ("1.5Gi" would be written "1536Mi", an int64).
	const huge = "1234567890123456789"
	if !quantityHoldsDec(reflect.ValueOf(resource.MustParse(huge))) || quantityHoldsDec(reflect.ValueOf(resource.MustParse("250m"))) {
		t.Fatal("quantityHoldsDec does not tell a Quantity kept as an inf.Dec from one kept as an int64")
	}
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := decodeChecked(t, d, overheadPod("a", "cpu", "250m", "memory", huge))
	b := decodeChecked(t, d, overheadPod("b", "cpu", "250m", "memory", huge))
	if anyMapPointer(a.Spec.Overhead) == anyMapPointer(b.Spec.Overhead) {
		t.Fatal("a ResourceList holding an inf.Dec is shared")
	}
	q := a.Spec.Overhead[corev1.ResourceMemory]
	q.Add(resource.MustParse("1Gi"))
	if got := b.Spec.Overhead[corev1.ResourceMemory]; got.Cmp(resource.MustParse(huge)) != 0 {
		t.Errorf("another Pod's overhead changed to %s", got.String())
	}
	// Int64 quantities are shared.
	decodeChecked(t, d, overheadPod("c", "cpu", "250m", "memory", "1Gi")) // met once
	c := decodeChecked(t, d, overheadPod("c", "cpu", "250m", "memory", "1Gi"))
	e := decodeChecked(t, d, overheadPod("e", "cpu", "250m", "memory", "1Gi"))
	if anyMapPointer(c.Spec.Overhead) != anyMapPointer(e.Spec.Overhead) {
		t.Error("equal ResourceLists of int64 quantities are not shared")
	}
}

// Adding to a shared ResourceList copies it first: a merge into an object
// (ProtobufInto, or a message whose spec comes twice) never changes the
// other objects that share it, and the merged map is not remembered for
// the second run's entries.
func TestResourceListSharingCopiesOnWrite(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	decodeChecked(t, d, overheadPod("a", "cpu", "250m")) // maps enter the table the second time they come
	first := decodeChecked(t, d, overheadPod("a", "cpu", "250m"))
	second := decodeChecked(t, d, overheadPod("b", "cpu", "250m"))
	if anyMapPointer(first.Spec.Overhead) != anyMapPointer(second.Spec.Overhead) {
		t.Fatal("the overheads are not shared")
	}
	extra := marshalPod(t, overheadPod("", "memory", "64Mi"))
	if err := d.ProtobufInto(extra, second); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(overheadPod("a", "cpu", "250m").Spec.Overhead, first.Spec.Overhead); diff != "" {
		t.Errorf("the other Pod's overhead changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(overheadPod("", "cpu", "250m", "memory", "64Mi").Spec.Overhead, second.Spec.Overhead); diff != "" {
		t.Errorf("merged overhead (-want +got):\n%s", diff)
	}

	// One message with two specs: the second's overhead merges into the
	// first's, shared, map.
	decodeBytesChecked(t, d, append(marshalPod(t, overheadPod("c", "cpu", "250m")), extra...))
	if diff := cmp.Diff(overheadPod("a", "cpu", "250m").Spec.Overhead, first.Spec.Overhead); diff != "" {
		t.Errorf("the first Pod's overhead changed (-want +got):\n%s", diff)
	}
	decodeChecked(t, d, overheadPod("d", "memory", "64Mi")) // not the merged map
}

// Readers of objects that share ResourceLists, and of the maps' values,
// race with nothing: String, which caches the Quantity's form, works on a
// copy of a map's value, as do DeepCopy, Equal, MarshalJSON and the
// Quantity ResourceList.Cpu returns. A decoder meanwhile hands the same
// maps to new objects. Run with -race.
func TestSharedResourceListsConcurrentReaders(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := testobj.RealisticPods("shop", 40, 4)
	var pods []*corev1.Pod
	for _, p := range src[:20] {
		pods = append(pods, decodeChecked(t, d, p))
	}
	if anyMapPointer(pods[1].Spec.Containers[0].Resources.Requests) != anyMapPointer(pods[2].Spec.Containers[0].Resources.Requests) {
		t.Fatal("the Pods do not share their requests")
	}
	read := func(p *corev1.Pod) {
		for _, c := range p.Spec.Containers {
			for name, q := range c.Resources.Requests {
				_ = q.String()
				_ = q.DeepCopy()
				_ = q.Equal(c.Resources.Limits[name])
				if _, err := q.MarshalJSON(); err != nil {
					t.Error(err)
				}
			}
			_ = c.Resources.Limits.Cpu().String()
			_ = c.Resources.Requests.Memory().Value()
		}
		if _, err := json.Marshal(p); err != nil {
			t.Error(err)
		}
		_ = p.DeepCopy()
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for _, p := range pods {
				read(p)
			}
		})
	}
	wg.Go(func() {
		for _, p := range src[20:] {
			got, err := d.Protobuf(marshalPod(t, p))
			if err != nil {
				t.Error(err)
				return
			}
			read(got)
		}
	})
	wg.Wait()
	for i, p := range pods {
		want := &corev1.Pod{}
		if err := want.Unmarshal(marshalPod(t, src[i])); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, p); diff != "" {
			t.Fatalf("%s changed while read (-want +got):\n%s", p.Name, diff)
		}
	}
}
