package informer

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/typedkube/informer/internal/testobj"
	"github.com/typedkube/informer/wire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// benchCompactGroups is how many groups op=select/cache=cold queries in
// turn: 20 groups of 100 Pods, twice what the decoded cache holds.
const benchCompactGroups = 20

// benchCompactSelectors are the selectors of op=select/cache=cold: the 100
// Pods of group g-i, in all namespaces.
var benchCompactSelectors = sync.OnceValue(func() []labels.Selector {
	out := make([]labels.Selector, benchCompactGroups)
	for i := range out {
		out[i] = labels.SelectorFromSet(labels.Set{"app": fmt.Sprintf("app-%d", i*7%50), "group": fmt.Sprintf("g-%d", i*7)})
	}
	return out
})

// benchCompactFixture is what BenchmarkCompactStore keeps between its
// cases: the Pods of benchSelectorPods as protobuf, and their namespaces
// and names. No decoded Pod of the fixture stays live, so each case runs
// beside its own cache only, as a process that uses that store would.
type benchCompactFixture struct {
	wire       [][]byte
	namespaces []string
	names      []string
}

// benchCompactPods builds the fixture from Pods made for it, not from
// benchSelectorPods, whose Pods would then stay live.
var benchCompactPods = sync.OnceValue(func() *benchCompactFixture {
	pods := withGroupLabel(testobj.BenchPods(100_000, benchNamespaces))
	f := &benchCompactFixture{
		wire:       make([][]byte, len(pods)),
		namespaces: make([]string, len(pods)),
		names:      make([]string, len(pods)),
	}
	for i, p := range pods {
		m, err := p.Marshal()
		if err != nil {
			panic(err)
		}
		f.wire[i], f.namespaces[i], f.names[i] = m, p.Namespace, p.Name
	}
	return f
})

// BenchmarkCompactStore reads the 100k Pods of BenchmarkListerSelector
// (about 1.5 KB each) from a cache, client-go's (impl=upstream, full
// objects) beside ours (impl=typed), with a decoded store (store=decoded)
// and a compact one (store=compact, filled as a compact source lists:
// records of the Pods' protobuf, never decoded):
//   - op=get-miss: a Lister's Get of each Pod in turn, so that the compact
//     store never has the Pod in its cache of decoded objects and decodes
//     it;
//   - op=select/cache=warm: Select of the 100 Pods of benchSelector, again
//     and again: after the first round, the compact store's cache has them;
//   - op=select/cache=cold: Select of the 100 Pods of one of 20 groups in
//     turn, 2,000 Pods in all, more than the cache holds: the compact
//     store decodes most of them.
//
// Each case builds its cache from the fixture's protobuf and holds only
// that cache: what a read allocates costs a collection that marks the
// live heap, and the heap of a process with a compact store is mostly
// records, with no pointers to follow. (Until 2026-11-26 every case ran
// beside the decoded fixtures and client-go's cache, about 1 GB of
// pointers, which made up about half of a compact Get miss.)
//
// Each reports B/object, the heap the filled cache holds per Pod. The bars
// of the compact store (issue 25) are op=get-miss at most 3 µs, and Select
// at most 100x the decoded store's: the ratio of the two typed rows.
func BenchmarkCompactStore(b *testing.B) {
	fx := benchCompactPods()
	n := 0
	for _, store := range []string{"decoded", "compact"} {
		b.Run("store="+store, func(b *testing.B) {
			// measure runs read over a cache filled since the heap was
			// before, and reports the heap it holds per Pod.
			measure := func(b *testing.B, before int64, read func(i int)) {
				held := float64(heapAlloc()-before) / float64(len(fx.wire))
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					read(i)
					i++
				}
				b.ReportMetric(held, "B/object")
			}
			// leaf runs one case: impl=upstream reads with up over a
			// client-go cache of full objects, impl=typed with typed over
			// ours of the store, each cache built for it alone.
			leaf := func(b *testing.B, up func(corev1listers.PodLister, int), typed func(Lister[*corev1.Pod], int)) {
				b.Run("impl=upstream", func(b *testing.B) {
					before := heapAlloc()
					x := newBenchUpstreamFromWire(b, fx)
					l := corev1listers.NewPodLister(x)
					measure(b, before, func(i int) { up(l, i) })
					runtime.KeepAlive(x)
				})
				b.Run("impl=typed", func(b *testing.B) {
					before := heapAlloc()
					x := newBenchStore(b, store, fx)
					l := Lister[*corev1.Pod]{indexer: x, resource: corev1.Resource("pods")}
					measure(b, before, func(i int) { typed(l, i) })
					runtime.KeepAlive(x)
				})
			}
			b.Run("op=get-miss", func(b *testing.B) {
				leaf(b, func(l corev1listers.PodLister, i int) {
					j := i % len(fx.names)
					got, _ := l.Pods(fx.namespaces[j]).Get(fx.names[j])
					n += len(got.Name)
				}, func(l Lister[*corev1.Pod], i int) {
					j := i % len(fx.names)
					got, _ := l.ByNamespace(fx.namespaces[j]).Get(fx.names[j])
					n += len(got.Name)
				})
			})
			selects := func(b *testing.B, sel func(int) labels.Selector) {
				leaf(b, func(l corev1listers.PodLister, i int) {
					got, _ := l.List(sel(i))
					for _, p := range got {
						n += len(p.Name)
					}
				}, func(l Lister[*corev1.Pod], i int) {
					for p := range l.Select(sel(i)) {
						n += len(p.Name)
					}
				})
			}
			b.Run("op=select", func(b *testing.B) {
				b.Run("cache=warm", func(b *testing.B) {
					selects(b, func(int) labels.Selector { return benchSelector })
				})
				b.Run("cache=cold", func(b *testing.B) {
					sels := benchCompactSelectors()
					selects(b, func(i int) labels.Selector { return sels[i%len(sels)] })
				})
			})
		})
	}
	benchSink += n
}

// newBenchUpstreamFromWire returns client-go's cache of the fixture's
// Pods, each decoded by the generated decoder on its own, as client-go's
// informer holds them.
func newBenchUpstreamFromWire(b testing.TB, fx *benchCompactFixture) cache.Indexer {
	up := newUpstreamBenchIndexer()
	for _, m := range fx.wire {
		p := &corev1.Pod{}
		if err := p.Unmarshal(m); err != nil {
			b.Fatal(err)
		}
		if err := up.Add(p); err != nil {
			b.Fatal(err)
		}
	}
	return up
}

// newBenchStore returns an informer's cache of the fixture's Pods: decoded
// by package wire, each on its own, as an informer's cache holds them; or
// compact, filled with records of their protobuf as a compact source lists
// them.
func newBenchStore(b testing.TB, store string, fx *benchCompactFixture) *Indexer[*corev1.Pod] {
	x := newTypedBenchIndexer()
	dec, err := wire.NewDecoder[*corev1.Pod, *corev1.Pod](wire.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if store == "compact" {
		codec := wire.NewCompact(dec, wire.DecodedCacheSize)
		x.setCompact(codec, true)
		if err := x.addLabelIndex(MetaLabelsFunc[*corev1.Pod], true); err != nil {
			b.Fatal(err)
		}
		list := &encodedList[*corev1.Pod]{codec: codec}
		for i, m := range fx.wire {
			rec, err := codec.Protobuf(m)
			if err != nil {
				b.Fatal(err)
			}
			lbls, err := codec.ProtobufLabels(m)
			if err != nil {
				b.Fatal(err)
			}
			key := fx.names[i]
			if ns := fx.namespaces[i]; ns != "" {
				key = ns + "/" + key
			}
			list.items = append(list.items, encoded[*corev1.Pod]{key: key, rec: rec, labels: lbls})
		}
		if err := x.replaceEncoded(list, false); err != nil {
			b.Fatal(err)
		}
		return x
	}
	if err := x.AddLabelIndex(MetaLabelsFunc[*corev1.Pod]); err != nil {
		b.Fatal(err)
	}
	for _, m := range fx.wire {
		q, err := dec.Protobuf(m)
		if err != nil {
			b.Fatal(err)
		}
		if err := x.Add(q); err != nil {
			b.Fatal(err)
		}
	}
	return x
}

// heapAlloc returns the live heap after a full collection.
func heapAlloc() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
