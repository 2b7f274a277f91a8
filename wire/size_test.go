package wire

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// decodeAll decodes encs with a decoder made with opts, keeping the
// objects, and returns them and the estimate of the heap they and the
// decoder hold: the objects' sizes, SharedBytes, and the slice of them.
func decodeAll[PP any](t *testing.T, encs [][]byte, opts Options, json bool) (any, int) {
	t.Helper()
	d, err := NewDecoder[PP, PP](opts)
	if err != nil {
		t.Fatal(err)
	}
	objs := make([]PP, len(encs))
	for i, b := range encs {
		if json {
			objs[i], err = d.JSON(b)
		} else {
			objs[i], err = d.Protobuf(b)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	sz := d.Sizer()
	est := d.SharedBytes() + allocBytes(8*len(objs))
	for _, o := range objs {
		est += sz.Size(o)
	}
	return []any{objs, d}, est // the decoder's tables are held too
}

func protoOf(t *testing.T, pods []*corev1.Pod) [][]byte {
	out := make([][]byte, len(pods))
	for i, p := range pods {
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

func jsonOf(t *testing.T, pods []*corev1.Pod) [][]byte {
	out := make([][]byte, len(pods))
	for i, p := range pods {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// TestSizerMatchesHeap decodes a few thousand Pods, as an informer's
// decoder does, and checks that the Sizer's estimate, the objects' sizes
// plus the decoder's shared bytes, is within 5% of the heap they hold.
func TestSizerMatchesHeap(t *testing.T) {
	const n = 2000
	bench := make([]*corev1.Pod, n)
	for i := range bench {
		bench[i] = benchPod(i)
	}
	real := testobj.RealisticPods("shop", n, 40)
	benchPB := protoOf(t, bench)
	realPB, realJSON := protoOf(t, real), jsonOf(t, real)
	for _, p := range real {
		p.APIVersion, p.Kind = "v1", "Pod" // for unstructured
	}
	realTyped := jsonOf(t, real)
	cases := []struct {
		name string
		run  func(t *testing.T) (any, int)
	}{
		{"bench/protobuf", func(t *testing.T) (any, int) { return decodeAll[*corev1.Pod](t, benchPB, Options{}, false) }},
		{"realistic/json", func(t *testing.T) (any, int) { return decodeAll[*corev1.Pod](t, realJSON, Options{}, true) }},
		{"bench/nosharing", func(t *testing.T) (any, int) {
			return decodeAll[*corev1.Pod](t, benchPB, Options{NoSharing: true}, false)
		}},
		{"bench/projection", func(t *testing.T) (any, int) {
			return decodeProjection[*benchSlim](t, benchPB)
		}},
		{"realistic/protobuf", func(t *testing.T) (any, int) { return decodeAll[*corev1.Pod](t, realPB, Options{}, false) }},
		{"realistic/dropmanagedfields", func(t *testing.T) (any, int) {
			return decodeAll[*corev1.Pod](t, realPB, Options{DropManagedFields: true}, false)
		}},
		{"realistic/nomapsharing", func(t *testing.T) (any, int) {
			return decodeAll[*corev1.Pod](t, realPB, Options{NoMapSharing: true}, false)
		}},
		{"realistic/clientgo", func(t *testing.T) (any, int) {
			objs := make([]*corev1.Pod, len(realPB))
			for i, b := range realPB {
				objs[i] = new(corev1.Pod)
				if err := objs[i].Unmarshal(b); err != nil {
					t.Fatal(err)
				}
			}
			sz := NewSizer[*corev1.Pod]()
			est := allocBytes(8 * len(objs))
			for _, o := range objs {
				est += sz.Size(o)
			}
			return objs, est
		}},
		{"realistic/unstructured", func(t *testing.T) (any, int) {
			objs := make([]*unstructured.Unstructured, len(realTyped))
			for i, b := range realTyped {
				objs[i] = new(unstructured.Unstructured)
				if err := objs[i].UnmarshalJSON(b); err != nil {
					t.Fatal(err)
				}
			}
			sz := NewSizer[*unstructured.Unstructured]()
			est := allocBytes(8 * len(objs))
			for _, o := range objs {
				est += sz.Size(o)
			}
			return objs, est
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := liveHeap()
			keep, est := c.run(t)
			held := liveHeap() - before
			runtime.KeepAlive(keep)
			ratio := float64(est) / float64(held)
			t.Logf("held %.0f B/object, estimated %.0f B/object (%.3f)", float64(held)/n, float64(est)/n, ratio)
			if tol := heapTolerance(); ratio < 1-tol || ratio > 1+tol {
				t.Errorf("estimate %d B is %.1f%% of the %d B held, want within %.0f%%", est, 100*ratio, held, 100*tol)
			}
		})
	}
}

// heapTolerance is how far from the heap held an estimate may be: 5%, or
// 8% under the race detector, whose allocator pads and aligns blocks in
// ways the Sizer does not follow.
func heapTolerance() float64 {
	if raceEnabled {
		return 0.08
	}
	return 0.05
}

// decodeProjection is decodeAll for a projection of a Pod.
func decodeProjection[PP any](t *testing.T, encs [][]byte) (any, int) {
	t.Helper()
	d, err := NewDecoder[PP, *corev1.Pod](Options{Annotations: func(string) bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	objs := make([]PP, len(encs))
	for i, b := range encs {
		if objs[i], err = d.Protobuf(b); err != nil {
			t.Fatal(err)
		}
	}
	sz := d.Sizer()
	est := d.SharedBytes() + allocBytes(8*len(objs))
	for _, o := range objs {
		est += sz.Size(o)
	}
	return []any{objs, d}, est // the decoder's tables are held too
}
