package informer

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/typedkube/informer/wire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1listers "k8s.io/client-go/listers/core/v1"
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
// Each reports B/object, the heap the filled cache holds per Pod. The bars
// of the compact store (issue 25) are op=get-miss at most 3 µs, and Select
// at most 100x the decoded store's: the ratio of the two typed rows.
func BenchmarkCompactStore(b *testing.B) {
	pods := benchSelectorPods()
	// client-go's cache, of Pods decoded by the generated decoder, each on
	// its own, as its informer holds them.
	before := heapAlloc()
	up := newUpstreamBenchIndexer()
	for _, p := range pods {
		m, err := p.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		q := &corev1.Pod{}
		if err := q.Unmarshal(m); err != nil {
			b.Fatal(err)
		}
		up.Add(q)
	}
	upHeld := float64(heapAlloc()-before) / float64(len(pods))
	upLister := corev1listers.NewPodLister(up)
	for _, store := range []string{"decoded", "compact"} {
		b.Run("store="+store, func(b *testing.B) {
			before := heapAlloc()
			ours := newBenchStore(b, store, pods)
			held := float64(heapAlloc()-before) / float64(len(pods))
			lister := Lister[*corev1.Pod]{indexer: ours, resource: corev1.Resource("pods")}
			n := 0
			report := func(b *testing.B, f func()) {
				b.ReportAllocs()
				for b.Loop() {
					f()
				}
				if strings.HasSuffix(b.Name(), "impl=upstream") {
					b.ReportMetric(upHeld, "B/object")
				} else {
					b.ReportMetric(held, "B/object")
				}
			}
			b.Run("op=get-miss", func(b *testing.B) {
				b.Run("impl=upstream", func(b *testing.B) {
					i := 0
					report(b, func() {
						p := pods[i%len(pods)]
						got, _ := upLister.Pods(p.Namespace).Get(p.Name)
						n += len(got.Name)
						i++
					})
				})
				b.Run("impl=typed", func(b *testing.B) {
					i := 0
					report(b, func() {
						p := pods[i%len(pods)]
						got, _ := lister.ByNamespace(p.Namespace).Get(p.Name)
						n += len(got.Name)
						i++
					})
				})
			})
			b.Run("op=select", func(b *testing.B) {
				b.Run("cache=warm", func(b *testing.B) {
					benchCompactSelect(b, upLister, lister, func(int) labels.Selector { return benchSelector }, report, &n)
				})
				b.Run("cache=cold", func(b *testing.B) {
					sels := benchCompactSelectors()
					benchCompactSelect(b, upLister, lister, func(i int) labels.Selector { return sels[i%len(sels)] }, report, &n)
				})
			})
			runtime.KeepAlive(ours)
			benchSink += n
		})
	}
	runtime.KeepAlive(up)
}

// benchCompactSelect runs one select workload of BenchmarkCompactStore: the
// i-th query selects sel(i).
func benchCompactSelect(b *testing.B, upLister corev1listers.PodLister, lister Lister[*corev1.Pod], sel func(int) labels.Selector, report func(*testing.B, func()), n *int) {
	b.Run("impl=upstream", func(b *testing.B) {
		i := 0
		report(b, func() {
			got, _ := upLister.List(sel(i))
			for _, p := range got {
				*n += len(p.Name)
			}
			i++
		})
	})
	b.Run("impl=typed", func(b *testing.B) {
		i := 0
		report(b, func() {
			for p := range lister.Select(sel(i)) {
				*n += len(p.Name)
			}
			i++
		})
	})
}

// newBenchStore returns an informer's cache of pods: decoded, or compact,
// filled with records of their protobuf as a compact source lists them.
func newBenchStore(b testing.TB, store string, pods []*corev1.Pod) *Indexer[*corev1.Pod] {
	x := newTypedBenchIndexer()
	if store == "compact" {
		dec, err := wire.NewDecoder[*corev1.Pod, *corev1.Pod](wire.Options{})
		if err != nil {
			b.Fatal(err)
		}
		codec := wire.NewCompact(dec, wire.DecodedCacheSize)
		x.setCompact(codec, true, true)
		if err := x.AddLabelIndex(MetaLabelsFunc[*corev1.Pod]); err != nil {
			b.Fatal(err)
		}
		list := &encodedList[*corev1.Pod]{codec: codec}
		for _, p := range pods {
			m, err := p.Marshal()
			if err != nil {
				b.Fatal(err)
			}
			rec, err := codec.Protobuf(m)
			if err != nil {
				b.Fatal(err)
			}
			lbls, err := codec.ProtobufLabels(m)
			if err != nil {
				b.Fatal(err)
			}
			key, _ := MetaNamespaceKeyFunc(p)
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
	// As an informer's cache holds them: decoded from protobuf by package
	// wire, each on its own, not the test's shared Pods.
	dec, err := wire.NewDecoder[*corev1.Pod, *corev1.Pod](wire.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range pods {
		m, err := p.Marshal()
		if err != nil {
			b.Fatal(err)
		}
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
