package informer

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/typedkube/informer/internal/testobj"
)

// The benchmarks of the typed core. Each workload runs twice in one
// process, as sub-benchmarks impl=upstream (client-go v0.37) and impl=typed,
// on the same pre-built Pods of about 1.5 KB, so that tools pair them by
// name (see bench/cmd/benchreport).

const benchNamespaces = 100 // so a namespace holds 1% of the Pods

var benchPods = sync.OnceValue(func() []*corev1.Pod { return testobj.BenchPods(100_000, benchNamespaces) })

// benchPodsUpdated are copies of benchPods with a new resource version and
// the same index values.
var benchPodsUpdated = sync.OnceValue(func() []*corev1.Pod {
	out := make([]*corev1.Pod, len(benchPods()))
	for i, p := range benchPods() {
		q := *p
		q.ResourceVersion += "1"
		out[i] = &q
	}
	return out
})

func benchAppIndex(p *corev1.Pod) ([]string, error) { return []string{p.Labels["app"]}, nil }

func newTypedBenchIndexer() *Indexer[*corev1.Pod] {
	return NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{
		NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod],
		"app":          benchAppIndex,
	})
}

func newUpstreamBenchIndexer() cache.Indexer {
	return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"app":                func(obj any) ([]string, error) { return benchAppIndex(obj.(*corev1.Pod)) },
	})
}

// storeOps is the part of both indexers the write benchmarks use.
type storeOps struct {
	add, update, delete func(*corev1.Pod)
}

func benchImpls(b *testing.B, run func(b *testing.B, newStore func() storeOps)) {
	b.Run("impl=upstream", func(b *testing.B) {
		run(b, func() storeOps {
			x := newUpstreamBenchIndexer()
			return storeOps{
				add:    func(p *corev1.Pod) { x.Add(p) },
				update: func(p *corev1.Pod) { x.Update(p) },
				delete: func(p *corev1.Pod) { x.Delete(p) },
			}
		})
	})
	b.Run("impl=typed", func(b *testing.B) {
		run(b, func() storeOps {
			x := newTypedBenchIndexer()
			return storeOps{
				add:    func(p *corev1.Pod) { x.Add(p) },
				update: func(p *corev1.Pod) { x.Update(p) },
				delete: func(p *corev1.Pod) { x.Delete(p) },
			}
		})
	})
}

// BenchmarkIndexerAdd adds Pods to an indexer with a namespace and a label
// index, growing it to 100k and then starting over with an empty one.
func BenchmarkIndexerAdd(b *testing.B) {
	pods := benchPods()
	benchImpls(b, func(b *testing.B, newStore func() storeOps) {
		s := newStore()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i == len(pods) {
				b.StopTimer()
				s, i = newStore(), 0
				b.StartTimer()
			}
			s.add(pods[i])
			i++
		}
	})
}

// BenchmarkIndexerUpdate updates Pods of a 100k indexer with new objects
// whose index values are unchanged.
func BenchmarkIndexerUpdate(b *testing.B) {
	pods, updated := benchPods(), benchPodsUpdated()
	benchImpls(b, func(b *testing.B, newStore func() storeOps) {
		s := newStore()
		for _, p := range pods {
			s.add(p)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i%2 == 0 {
				s.update(updated[i/2%len(pods)])
			} else {
				s.update(pods[i/2%len(pods)])
			}
			i++
		}
	})
}

// BenchmarkIndexerDelete deletes Pods from a 100k indexer, refilling it
// when it is empty.
func BenchmarkIndexerDelete(b *testing.B) {
	pods := benchPods()
	benchImpls(b, func(b *testing.B, newStore func() storeOps) {
		fill := func() storeOps {
			s := newStore()
			for _, p := range pods {
				s.add(p)
			}
			return s
		}
		s := fill()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i == len(pods) {
				b.StopTimer()
				s, i = fill(), 0
				b.StartTimer()
			}
			s.delete(pods[i])
			i++
		}
	})
}

// BenchmarkIndexerByIndex reads one namespace, 1% of a 100k indexer.
// api=typed-slice compares ByIndex with client-go's typed facade
// (TypedIndexer.ByTypedIndex), api=untyped-slice with its []interface{}
// ByIndex, and api=iterator ByIndexSeq with ByTypedIndex plus a loop.
func BenchmarkIndexerByIndex(b *testing.B) {
	pods := benchPods()
	up := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Pod{}, 0, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
	})
	typedUp := cache.NewTypedSharedIndexInformer[*corev1.Pod](up).GetTypedIndexer()
	ours := newTypedBenchIndexer()
	for _, p := range pods {
		up.GetIndexer().Add(p)
		ours.Add(p)
	}
	const ns = "ns-42"
	n := 0
	b.Run("api=typed-slice", func(b *testing.B) {
		run(b, "impl=upstream", func() { got, _ := typedUp.ByTypedIndex(cache.NamespaceIndex, ns); n += len(got) })
		run(b, "impl=typed", func() { got, _ := ours.ByIndex(NamespaceIndex, ns); n += len(got) })
	})
	b.Run("api=untyped-slice", func(b *testing.B) {
		run(b, "impl=upstream", func() { got, _ := up.GetIndexer().ByIndex(cache.NamespaceIndex, ns); n += len(got) })
		run(b, "impl=typed", func() { got, _ := ours.ByIndex(NamespaceIndex, ns); n += len(got) })
	})
	b.Run("api=iterator", func(b *testing.B) {
		run(b, "impl=upstream", func() {
			got, _ := typedUp.ByTypedIndex(cache.NamespaceIndex, ns)
			for _, p := range got {
				n += len(p.Name)
			}
		})
		run(b, "impl=typed", func() {
			for _, p := range ours.ByIndexSeq(NamespaceIndex, ns) {
				n += len(p.Name)
			}
		})
	})
	if n == 0 {
		b.Fatal("read nothing")
	}
}

// BenchmarkStoreList reads all of a 100k store, as a slice and by
// iteration (client-go has no iterator: List and a loop).
func BenchmarkStoreList(b *testing.B) {
	pods := benchPods()
	up := cache.NewStore(cache.MetaNamespaceKeyFunc)
	ours := NewStore(MetaNamespaceKeyFunc[*corev1.Pod])
	for _, p := range pods {
		up.Add(p)
		ours.Add(p)
	}
	n := 0
	b.Run("api=slice", func(b *testing.B) {
		run(b, "impl=upstream", func() { n += len(up.List()) })
		run(b, "impl=typed", func() { n += len(ours.List()) })
	})
	b.Run("api=iterator", func(b *testing.B) {
		run(b, "impl=upstream", func() {
			for _, o := range up.List() {
				n += len(o.(*corev1.Pod).Name)
			}
		})
		run(b, "impl=typed", func() {
			for _, p := range ours.All() {
				n += len(p.Name)
			}
		})
	})
}

// BenchmarkDeltaFIFOAddPop adds n distinct Pods to a DeltaFIFO, then pops
// them all. ops/s counts Add+Pop pairs.
func BenchmarkDeltaFIFOAddPop(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		pods := benchPods()[:n]
		b.Run(fmt.Sprintf("keys=%s", count(n)), func(b *testing.B) {
			b.Run("impl=upstream", func(b *testing.B) {
				q := cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{KeyFunction: cache.MetaNamespaceKeyFunc})
				process := func(any, bool) error { return nil }
				b.ReportAllocs()
				for b.Loop() {
					for _, p := range pods {
						q.Add(p)
					}
					for range pods {
						q.Pop(process)
					}
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "ops/s")
			})
			b.Run("impl=typed", func(b *testing.B) {
				q := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{KeyFunction: MetaNamespaceKeyFunc[*corev1.Pod]})
				b.ReportAllocs()
				for b.Loop() {
					for _, p := range pods {
						q.Add(p)
					}
					for range pods {
						q.Pop(nil)
					}
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "ops/s")
			})
		})
	}
}

// BenchmarkDeltaFIFOReplace replaces 100k known Pods with a list in which
// churn% were deleted and as many are new, then pops everything (the
// Replace deltas and the tombstones).
func BenchmarkDeltaFIFOReplace(b *testing.B) {
	pods := benchPods()
	for _, churn := range []int{0, 10} {
		gone := len(pods) * churn / 100
		list := append(pods[gone:len(pods):len(pods)], testobj.BenchPods(len(pods)+gone, benchNamespaces)[len(pods):]...)
		b.Run(fmt.Sprintf("churn=%d%%", churn), func(b *testing.B) {
			b.Run("impl=upstream", func(b *testing.B) {
				known := newUpstreamBenchIndexer()
				for _, p := range pods {
					known.Add(p)
				}
				anyList := toAny(list)
				q := cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{
					KeyFunction: cache.MetaNamespaceKeyFunc, KnownObjects: known, EmitDeltaTypeReplaced: true,
				})
				process := func(any, bool) error { return nil }
				b.ReportAllocs()
				for b.Loop() {
					q.Replace(anyList, "1")
					for range len(list) + gone {
						q.Pop(process)
					}
				}
			})
			b.Run("impl=typed", func(b *testing.B) {
				known := newTypedBenchIndexer()
				for _, p := range pods {
					known.Add(p)
				}
				q := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{
					KeyFunction: MetaNamespaceKeyFunc[*corev1.Pod], KnownObjects: known, EmitDeltaTypeReplaced: true,
				})
				b.ReportAllocs()
				for b.Loop() {
					q.Replace(list, "1")
					for range len(list) + gone {
						q.Pop(nil)
					}
				}
			})
		})
	}
}

// run runs f as the sub-benchmark name of b.
func run(b *testing.B, name string, f func()) {
	b.Run(name, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f()
		}
	})
}

func count(n int) string {
	if n%1000 == 0 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
