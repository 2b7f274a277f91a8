package wire

import (
	"encoding/binary"
	"fmt"
	"testing"
	"unsafe"

	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// smallMapsExpected reports whether this platform's maps are expected to
// be read from their memory: on a 64-bit little-endian one, where this Go
// release lays them out as share_smallmap.go reads them.
func smallMapsExpected() bool {
	return unsafe.Sizeof(uintptr(0)) == 8 && binary.NativeEndian.Uint16([]byte{1, 0}) == 1
}

// The runtime of this toolchain lays maps out as smallMapSum reads them on
// a 64-bit little-endian platform: were it not, every map would be hashed
// by ranging over it, correct but slower, and nothing else would show it.
// Elsewhere the check finds otherwise, and every map is ranged over.
func TestSmallMapsLaidOut(t *testing.T) {
	if want := smallMapsExpected(); smallMaps != want {
		t.Fatalf("maps read from their memory: %v, want %v: the runtime's maps are not laid out as share_smallmap.go reads them", smallMaps, want)
	}
}

// A small map's sum read from its memory is the one ranging over it
// makes, before and after each kind of write, whatever its size (a map of
// eight that grows past its group is ranged over); every write changes it,
// and reading the map changes nothing.
func TestSmallMapSumWrites(t *testing.T) {
	writes := []struct {
		name  string
		write func(m map[string]string, q map[string]resource.Quantity)
	}{
		{"value set", func(m map[string]string, q map[string]resource.Quantity) {
			m["k0"] = "other"
			q["k0"] = resource.MustParse("3Gi")
		}},
		{"value set equal elsewhere", func(m map[string]string, q map[string]resource.Quantity) {
			m["k0"] = string([]byte(m["k0"]))
			v := q["k0"]
			v.Format = resource.Format(string([]byte(v.Format)))
			q["k0"] = v
		}},
		{"entry added", func(m map[string]string, q map[string]resource.Quantity) {
			m["added"] = "x"
			q["added"] = resource.MustParse("1")
		}},
		{"entry deleted", func(m map[string]string, q map[string]resource.Quantity) {
			delete(m, "k0")
			delete(q, "k0")
		}},
		{"entry moved", func(m map[string]string, q map[string]resource.Quantity) {
			v, w := m["k0"], q["k0"]
			delete(m, "k0")
			delete(q, "k0")
			m["k0-moved"], q["k0-moved"] = v, w
		}},
		{"cleared", func(m map[string]string, q map[string]resource.Quantity) {
			clear(m)
			clear(q)
		}},
	}
	for n := 1; n <= groupSlots; n++ {
		for _, w := range writes {
			t.Run(fmt.Sprintf("entries=%d/%s", n, w.name), func(t *testing.T) {
				m, q := make(map[string]string), make(map[string]resource.Quantity, n)
				for i := range n {
					m[fmt.Sprint("k", i)] = fmt.Sprint("value-", i)
					q[fmt.Sprint("k", i)] = resource.MustParse(fmt.Sprint(i+1, "00m"))
				}
				mp, qp := unsafe.Pointer(&m), unsafe.Pointer(&q)
				if _, ok := smallMapSum(stringMap, mp); ok != smallMaps {
					t.Fatalf("a string map of up to eight entries hashed from its memory: %v, want %v", ok, smallMaps)
				}
				if _, ok := smallMapSum(quantityMap, qp); ok != smallMaps {
					t.Fatalf("a ResourceList of up to eight entries hashed from its memory: %v, want %v", ok, smallMaps)
				}
				mBefore, qBefore := mapSum(stringMap, mp), mapSum(quantityMap, qp)
				for k := range m { // reads change nothing
					_ = m[k]
					_ = q[k]
				}
				if mapSum(stringMap, mp) != mBefore || mapSum(quantityMap, qp) != qBefore {
					t.Fatal("the hash changed with no write")
				}
				if mBefore != rangeMapSum(stringMap, mp) || qBefore != rangeMapSum(quantityMap, qp) {
					t.Fatal("the sum from memory is not the ranged one")
				}
				w.write(m, q)
				if s, ok := smallMapSum(stringMap, mp); ok && s != rangeMapSum(stringMap, mp) {
					t.Error("a string map's sum from its memory is not the ranged one")
				}
				if s, ok := smallMapSum(quantityMap, qp); ok && s != rangeMapSum(quantityMap, qp) {
					t.Error("a ResourceList's sum from its memory is not the ranged one")
				}
				if mapSum(stringMap, mp) == mBefore {
					t.Error("a string map's hash did not change")
				}
				if mapSum(quantityMap, qp) == qBefore {
					t.Error("a ResourceList's hash did not change")
				}
			})
		}
	}
}

// A map of more than eight entries has a directory of tables, and is
// hashed by ranging over it; so is a nil map.
func TestSmallMapSumRefusesOthers(t *testing.T) {
	m := make(map[string]string)
	for i := range groupSlots + 1 {
		m[fmt.Sprint("k", i)] = "v"
	}
	if _, ok := smallMapSum(stringMap, unsafe.Pointer(&m)); ok {
		t.Error("a map of nine entries is hashed as a small one")
	}
	var none map[string]string
	if _, ok := smallMapSum(stringMap, unsafe.Pointer(&none)); ok {
		t.Error("a nil map is hashed as a small one")
	}
	if rangeMapSum(stringMap, unsafe.Pointer(&none)) != mapSum(stringMap, unsafe.Pointer(&none)) {
		t.Error("a nil map's hash is not the ranged one")
	}
}

// The maps the decoder makes of a realistic Pod, and shares, are small
// ones: where maps are read from their memory, the check each hand-out
// makes reads theirs.
func TestDecodedMapsAreSmall(t *testing.T) {
	d := newPodDecoder(t, Options{})
	p, err := d.Protobuf(marshalPod(t, testobj.RealisticPod("ns", 1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	maps := map[string]unsafe.Pointer{"labels": unsafe.Pointer(&p.Labels), "annotations": unsafe.Pointer(&p.Annotations)}
	lists := map[string]unsafe.Pointer{}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		lists[c.Name+" requests"] = unsafe.Pointer(&c.Resources.Requests)
		lists[c.Name+" limits"] = unsafe.Pointer(&c.Resources.Limits)
	}
	check := func(kind mapKind, all map[string]unsafe.Pointer) {
		for name, mp := range all {
			if *(*unsafe.Pointer)(mp) == nil {
				continue
			}
			if _, ok := smallMapSum(kind, mp); ok != smallMaps {
				t.Errorf("the Pod's %s hashed from its memory: %v, want %v", name, ok, smallMaps)
			}
		}
	}
	check(stringMap, maps)
	check(quantityMap, lists)
	if len(p.Labels) == 0 || len(lists) == 0 {
		t.Fatal("the Pod has no labels or containers: the test checks nothing")
	}
}

// BenchmarkMapSum hashes a Pod's labels (3 entries) and a container's
// requests (2), from their memory and by ranging over them.
func BenchmarkMapSum(b *testing.B) {
	labels := map[string]string{"app": "shop", "pod-template-hash": "7d9f8c6b5", "tier": "web"}
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	for _, tc := range []struct {
		name string
		kind mapKind
		p    unsafe.Pointer
	}{{"map=labels", stringMap, unsafe.Pointer(&labels)}, {"map=requests", quantityMap, unsafe.Pointer(&requests)}} {
		b.Run(tc.name+"/by=memory", func(b *testing.B) {
			for b.Loop() {
				mapSum(tc.kind, tc.p)
			}
		})
		b.Run(tc.name+"/by=range", func(b *testing.B) {
			for b.Loop() {
				rangeMapSum(tc.kind, tc.p)
			}
		})
	}
}
