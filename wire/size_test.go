package wire

import (
	"encoding/json"
	"runtime"
	"slices"
	"strings"
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
	return decodeWith(t, encs, json, func() (*Decoder[PP], error) { return NewDecoder[PP, PP](opts) })
}

// decodeWith is decodeAll with the decoder newDecoder makes.
func decodeWith[PP any](t *testing.T, encs [][]byte, json bool, newDecoder func() (*Decoder[PP], error)) (any, int) {
	t.Helper()
	d, err := newDecoder()
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
	return []any{objs, d}, estimate(d.Sizer(), objs, d.SharedBytes()) // the decoder's tables are held too
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
	ownPB := protoOf(t, testobj.OwnTokenPods("shop", n, 40))
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
			return decodeWith(t, benchPB, false, func() (*Decoder[*benchSlim], error) {
				return NewDecoder[*benchSlim, *corev1.Pod](Options{Annotations: func(string) bool { return false }})
			})
		}},
		{"realistic/protobuf", func(t *testing.T) (any, int) { return decodeAll[*corev1.Pod](t, realPB, Options{}, false) }},
		{"owntoken/protobuf", func(t *testing.T) (any, int) { return decodeAll[*corev1.Pod](t, ownPB, Options{}, false) }},
		{"realistic/dropmanagedfields", func(t *testing.T) (any, int) {
			return decodeAll[*corev1.Pod](t, realPB, Options{DropManagedFields: true}, false)
		}},
		{"realistic/nomapsharing", func(t *testing.T) (any, int) {
			return decodeAll[*corev1.Pod](t, realPB, Options{NoMapSharing: true}, false)
		}},
		{"realistic/clientgo", func(t *testing.T) (any, int) {
			return undecoded(t, realPB, (*corev1.Pod).Unmarshal)
		}},
		{"realistic/unstructured", func(t *testing.T) (any, int) {
			return undecoded(t, realTyped, (*unstructured.Unstructured).UnmarshalJSON)
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

// undecoded decodes encs with each new object's own method, as client-go
// does, and returns the objects and the estimate of a Sizer that knows no
// sharing.
func undecoded[T any, PT interface{ *T }](t *testing.T, encs [][]byte, unmarshal func(PT, []byte) error) (any, int) {
	t.Helper()
	objs := make([]PT, len(encs))
	for i, b := range encs {
		objs[i] = PT(new(T))
		if err := unmarshal(objs[i], b); err != nil {
			t.Fatal(err)
		}
	}
	return objs, estimate(NewSizer[PT](), objs, 0)
}

// estimate is the sizes of objs, plus shared bytes, plus their slice.
func estimate[PP any](sz *Sizer[PP], objs []PP, shared int) int {
	est := shared + allocBytes(8*len(objs))
	for _, o := range objs {
		est += sz.Size(o)
	}
	return est
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

// A Sizer's walk allocates nothing: it runs as each object is stored.
func TestSizerAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	p := testobj.RealisticPod("shop", 1, 4)
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := d.Protobuf(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, sz := range []*Sizer[*corev1.Pod]{d.Sizer(), NewSizer[*corev1.Pod]()} {
		sz.Size(obj) // the pools' first scratch
		if n := testing.AllocsPerRun(100, func() { sz.Size(obj) }); n != 0 {
			t.Errorf("Size of a realistic Pod allocates %.0f times, want 0", n)
		}
	}
}

// BenchmarkSizer is what counting StoreBytes adds to storing a realistic
// Pod (op=size, with the decoder's Sizer), beside decoding it (op=decode).
func BenchmarkSizer(b *testing.B) {
	p := testobj.RealisticPod("shop", 1, 4)
	enc, err := p.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		b.Fatal(err)
	}
	obj, err := d.Protobuf(enc)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("op=decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := d.Protobuf(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("op=size", func(b *testing.B) {
		sz := d.Sizer()
		b.ReportAllocs()
		for b.Loop() {
			sz.Size(obj)
		}
	})
}

// BenchmarkSizerAtScale is TestSizerMatchesHeap's check at the size of an
// informer's list of 10,000 Pods of 20 ReplicaSets in order of name (a
// ReplicaSet's Pods together, as a LIST returns them), too slow to make
// under the race detector for a test: the bytes held per object
// (B/object), those a Sizer of the decoder tells (told-B/object, with
// SharedBytes) and their ratio (told/held). pods=owntoken are
// testobj.OwnTokenPods, whose containers are decoded for each Pod.
func BenchmarkSizerAtScale(b *testing.B) {
	const n = 10000
	for _, w := range []struct {
		name string
		pods func(string, int, int) []*corev1.Pod
	}{{"realistic", testobj.RealisticPods}, {"owntoken", testobj.OwnTokenPods}} {
		encs := func() [][]byte {
			pods := w.pods("shop", n, 20)
			slices.SortFunc(pods, func(x, y *corev1.Pod) int { return strings.Compare(x.Name, y.Name) })
			out := make([][]byte, n)
			for i, p := range pods {
				out[i] = marshalPod(b, p)
			}
			return out
		}()
		b.Run("pods="+w.name, func(b *testing.B) {
			var held, told int64
			for b.Loop() {
				b.StopTimer()
				before := liveHeap()
				b.StartTimer()
				d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
				if err != nil {
					b.Fatal(err)
				}
				objs := make([]*corev1.Pod, n)
				for i, enc := range encs {
					if objs[i], err = d.Protobuf(enc); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				held = liveHeap() - before
				told = int64(estimate(d.Sizer(), objs, d.SharedBytes()))
				runtime.KeepAlive(objs)
				runtime.KeepAlive(encs)
				b.StartTimer()
			}
			b.ReportMetric(float64(held)/n, "B/object")
			b.ReportMetric(float64(told)/n, "told-B/object")
			b.ReportMetric(float64(told)/float64(held), "told/held")
		})
	}
}
