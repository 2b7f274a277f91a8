package informer

import (
	"fmt"
	"maps"
	"runtime"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1listers "k8s.io/client-go/listers/core/v1"
)

// benchSelectorPods are benchPods with a fourth label, group, of 1,000
// values: group=g-7 is on 100 Pods, all in namespace ns-7, which also all
// have app=app-7. So benchSelector matches 100 of the 100k Pods, in one
// namespace (1,000 Pods) or in all.
var benchSelectorPods = sync.OnceValue(func() []*corev1.Pod {
	out := make([]*corev1.Pod, len(benchPods()))
	for i, p := range benchPods() {
		q := *p
		q.Labels = maps.Clone(p.Labels)
		q.Labels["group"] = fmt.Sprintf("g-%d", i%1000)
		out[i] = &q
	}
	return out
})

// benchSelectorPodsUpdated are copies with a new resource version and the
// same labels, as a status update.
var benchSelectorPodsUpdated = sync.OnceValue(func() []*corev1.Pod {
	out := make([]*corev1.Pod, len(benchSelectorPods()))
	for i, p := range benchSelectorPods() {
		q := *p
		q.ResourceVersion += "1"
		out[i] = &q
	}
	return out
})

// benchSink keeps the compiler from dropping the benchmarks' reads.
var benchSink int

var benchSelector = labels.SelectorFromSet(labels.Set{"app": "app-7", "group": "g-7"})

const benchSelectorNamespace = "ns-7"

// BenchmarkListerSelector lists the 100 of 100k Pods that have two labels,
// in their namespace (scope=namespace) and in all (scope=all), with
// client-go's generated PodLister (impl=upstream) and ours, which reads
// the label index. api=slice is List; api=iterator is Select beside
// client-go's List and a loop. impl=typed reports the label index's memory
// per object per label (B/object/label).
//
// op=add|update|delete/labelindex=off|on are our writes to an indexer with
// a namespace and an app index, without and with the label index (as
// BenchmarkIndexerAdd, Update and Delete).
func BenchmarkListerSelector(b *testing.B) {
	pods := benchSelectorPods()
	up := newUpstreamBenchIndexer()
	ours := newTypedBenchIndexer()
	if err := ours.AddLabelIndex(MetaLabelsFunc[*corev1.Pod]); err != nil {
		b.Fatal(err)
	}
	for _, p := range pods {
		up.Add(p)
		ours.Add(p)
	}
	upLister := corev1listers.NewPodLister(up)
	lister := Lister[*corev1.Pod]{indexer: ours, resource: corev1.Resource("pods")}
	perLabel := labelIndexBytesPerLabel(b, pods)
	for _, scope := range []struct{ name, ns string }{{"namespace", benchSelectorNamespace}, {"all", ""}} {
		upNS, ourNS := upLister.Pods(scope.ns), lister.ByNamespace(scope.ns)
		if got, _ := ourNS.List(benchSelector); len(got) != 100 {
			b.Fatalf("scope=%s: the selector matches %d Pods, want 100", scope.name, len(got))
		}
		n := 0
		b.Run("scope="+scope.name, func(b *testing.B) {
			b.Run("api=slice", func(b *testing.B) {
				run(b, "impl=upstream", func() { got, _ := upNS.List(benchSelector); n += len(got) })
				runMetric(b, "impl=typed", perLabel, func() { got, _ := ourNS.List(benchSelector); n += len(got) })
			})
			b.Run("api=iterator", func(b *testing.B) {
				run(b, "impl=upstream", func() {
					got, _ := upNS.List(benchSelector)
					for _, p := range got {
						n += len(p.Name)
					}
				})
				runMetric(b, "impl=typed", perLabel, func() {
					for p := range ourNS.Select(benchSelector) {
						n += len(p.Name)
					}
				})
			})
		})
		benchSink += n
	}
	benchLabelIndexWrites(b, pods)
}

// runMetric is run, reporting the label index's bytes per object per
// label.
func runMetric(b *testing.B, name string, perLabel float64, f func()) {
	b.Run(name, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f()
		}
		b.ReportMetric(perLabel, "B/object/label")
	})
}

// labelIndexBytesPerLabel measures the heap a label index over pods takes,
// per object per label. The slot ids (arena.ids and slot.id, 16 bytes an
// object), which every Store pays, are counted as the index's.
func labelIndexBytesPerLabel(b *testing.B, pods []*corev1.Pod) float64 {
	x := newTypedBenchIndexer()
	for _, p := range pods {
		x.Add(p)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := x.AddLabelIndex(MetaLabelsFunc[*corev1.Pod]); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	nlabels := 0
	for _, p := range pods {
		nlabels += len(p.Labels)
	}
	runtime.KeepAlive(x)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)+16*int64(len(pods))) / float64(nlabels)
}

// benchLabelIndexWrites measures our writes without and with the label
// index, in the workloads of BenchmarkIndexerAdd, Update and Delete.
func benchLabelIndexWrites(b *testing.B, pods []*corev1.Pod) {
	updated := benchSelectorPodsUpdated()
	newStore := func(on bool) *Indexer[*corev1.Pod] {
		x := newTypedBenchIndexer()
		if on {
			if err := x.AddLabelIndex(MetaLabelsFunc[*corev1.Pod]); err != nil {
				b.Fatal(err)
			}
		}
		return x
	}
	fill := func(on bool) *Indexer[*corev1.Pod] {
		x := newStore(on)
		for _, p := range pods {
			x.Add(p)
		}
		return x
	}
	modes := []struct {
		name string
		on   bool
	}{{"labelindex=off", false}, {"labelindex=on", true}}
	b.Run("op=add", func(b *testing.B) {
		for _, m := range modes {
			b.Run(m.name, func(b *testing.B) {
				x := newStore(m.on)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if i == len(pods) {
						b.StopTimer()
						x, i = newStore(m.on), 0
						b.StartTimer()
					}
					x.Add(pods[i])
					i++
				}
			})
		}
	})
	b.Run("op=update", func(b *testing.B) {
		for _, m := range modes {
			b.Run(m.name, func(b *testing.B) {
				x := fill(m.on)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if i%2 == 0 {
						x.Update(updated[i/2%len(pods)])
					} else {
						x.Update(pods[i/2%len(pods)])
					}
					i++
				}
			})
		}
	})
	b.Run("op=delete", func(b *testing.B) {
		for _, m := range modes {
			b.Run(m.name, func(b *testing.B) {
				x := fill(m.on)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if i == len(pods) {
						b.StopTimer()
						x, i = fill(m.on), 0
						b.StartTimer()
					}
					x.Delete(pods[i])
					i++
				}
			})
		}
	})
}
