package informer

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/typedkube/informer/internal/testobj"
	"github.com/typedkube/informer/wire"
	corev1 "k8s.io/api/core/v1"
)

// informerIndexer returns an Indexer of Pods as an informer makes it: the
// namespace index and the label index, counting bytes with sz; compact
// with codec if it is not nil.
func informerIndexer(sz objectSizer[*corev1.Pod], codec *wire.Compact[*corev1.Pod]) *Indexer[*corev1.Pod] {
	x := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]})
	x.setSizer(sz)
	if codec != nil {
		x.setCompact(codec, true, true)
	}
	_ = x.AddLabelIndex(MetaLabelsFunc[*corev1.Pod])
	return x
}

// decodedPods returns pods encoded and decoded by dec, as an informer's
// source hands them over.
func decodedPods(t testing.TB, dec *wire.Decoder[*corev1.Pod], pods []*corev1.Pod) []*corev1.Pod {
	t.Helper()
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if out[i], err = dec.Protobuf(b); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestStoreBytesMatchesHeap fills an informer's Indexer with decoded Pods,
// full and compact, and checks that storeBytes is within 5% of the heap it
// and its decoder hold, measured.
func TestStoreBytesMatchesHeap(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector turns off the allocator's packing of small blocks, which the estimate counts on")
	}
	const n = 3000
	cases := []struct {
		name string
		pods func(n int) []*corev1.Pod
	}{
		{"bench", func(n int) []*corev1.Pod { return testobj.BenchPods(n, 10) }},
		{"realistic", func(n int) []*corev1.Pod { return testobj.RealisticPods("shop", n, 40) }},
	}
	for _, c := range cases {
		src := c.pods(n)
		encs := make([][]byte, n)
		for i, p := range src {
			encs[i], _ = p.Marshal()
		}
		for _, compact := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/compact=%v", c.name, compact), func(t *testing.T) {
				before := liveHeap()
				dec, err := wire.NewDecoder[*corev1.Pod, *corev1.Pod](wire.Options{})
				if err != nil {
					t.Fatal(err)
				}
				var codec *wire.Compact[*corev1.Pod]
				if compact {
					codec = wire.NewCompact(dec, wire.DecodedCacheSize)
				}
				x := informerIndexer(decoderSizer(dec), codec)
				for _, b := range encs {
					obj, err := dec.Protobuf(b)
					if err != nil {
						t.Fatal(err)
					}
					if err := x.Add(obj); err != nil {
						t.Fatal(err)
					}
				}
				held := liveHeap() - before
				got := x.storeBytes()
				runtime.KeepAlive(x)
				ratio := float64(got) / float64(held)
				t.Logf("held %.0f B/object, storeBytes %.0f B/object (%.3f)", float64(held)/n, float64(got)/n, ratio)
				if ratio < 0.95 || ratio > 1.05 {
					t.Errorf("storeBytes %d is %.1f%% of the %d B held, want within 5%%", got, 100*ratio, held)
				}
			})
		}
	}
}
