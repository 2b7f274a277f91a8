package informer

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// benchSelectorPods are benchPods with a fourth label, group, of 1,000
// values: group=g-7 is on 100 Pods, all in namespace ns-7, which also all
// have app=app-7. So benchSelector matches 100 of the 100k Pods, in one
// namespace (1,000 Pods) or in all.
var benchSelectorPods = sync.OnceValue(func() []*corev1.Pod { return withGroupLabel(benchPods()) })

// withGroupLabel returns copies of pods with the label group of
// benchSelectorPods added.
func withGroupLabel(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		q := *p
		q.Labels = maps.Clone(p.Labels)
		q.Labels["group"] = fmt.Sprintf("g-%d", i%1000)
		out[i] = &q
	}
	return out
}

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
// client-go's List and a loop.
//
// op=index builds a label index over the 100k Pods: ours (AddLabelIndex)
// and, for client-go, the index a client-go user adds to get the same
// queries (an Indexers func with one "key=value" value per label), each
// reporting its memory per object per label (B/object/label).
// op=index-unique does the same for 100k Pods with one label each, whose
// value no other Pod has; op=index-shared for the Pods of op=index less
// their group label, whose equal labels are one map (as decoded), listed
// by namespace and name.
//
// op=add|update|delete are writes to an indexer with a namespace and an
// app index (as BenchmarkIndexerAdd, Update and Delete), without a label
// index (labelindex=off) and with one (labelindex=on: ours, or client-go's
// with the "key=value" Indexers func). The cost of our label index on
// writes is the ratio of the two typed rows. op=add/labelindex=read adds an
// index func that only reads every label: the part of an add's cost that any
// label index pays, reading labels the store without one never touches.
// op=add/labelindex=hash adds one that also hashes every label's key and
// value, as any label index that looks them up in a hash table must: the
// floor of such an index's cost on an add.
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
	runtime.GC() // the fill's garbage is not the first queries' cost
	for _, scope := range []struct{ name, ns string }{{"namespace", benchSelectorNamespace}, {"all", ""}} {
		upNS, ourNS := upLister.Pods(scope.ns), lister.ByNamespace(scope.ns)
		if got, _ := ourNS.List(benchSelector); len(got) != 100 {
			b.Fatalf("scope=%s: the selector matches %d Pods, want 100", scope.name, len(got))
		}
		n := 0
		b.Run("scope="+scope.name, func(b *testing.B) {
			b.Run("api=slice", func(b *testing.B) {
				run(b, "impl=upstream", func() { got, _ := upNS.List(benchSelector); n += len(got) })
				run(b, "impl=typed", func() { got, _ := ourNS.List(benchSelector); n += len(got) })
			})
			b.Run("api=iterator", func(b *testing.B) {
				run(b, "impl=upstream", func() {
					got, _ := upNS.List(benchSelector)
					for _, p := range got {
						n += len(p.Name)
					}
				})
				run(b, "impl=typed", func() {
					for p := range ourNS.Select(benchSelector) {
						n += len(p.Name)
					}
				})
			})
		})
		benchSink += n
	}
	benchLabelIndexBuild(b, "op=index", pods)
	benchLabelIndexBuild(b, "op=index-unique", benchUniqueLabelPods())
	benchLabelIndexBuild(b, "op=index-shared", benchSharedLabelPods())
	benchLabelIndexWrites(b, pods)
}

// benchSharedLabelPods are benchPods whose equal labels are one map, as
// the wire decoder gives them (it shares a map among objects whose labels
// are the same bytes), in an informer's list order: by namespace and name.
var benchSharedLabelPods = sync.OnceValue(func() []*corev1.Pod {
	shared := map[string]map[string]string{}
	out := make([]*corev1.Pod, len(benchPods()))
	for i, p := range benchPods() {
		q := *p
		k := fmt.Sprint(q.Labels) // sorted by key
		if m, ok := shared[k]; ok {
			q.Labels = m
		} else {
			shared[k] = q.Labels
		}
		out[i] = &q
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
})

// benchUniqueLabelPods are benchSelectorPods with one label only, whose
// value is the Pod's name, as StatefulSet Pods have: every value is an
// entry of its own in a label index.
var benchUniqueLabelPods = sync.OnceValue(func() []*corev1.Pod {
	out := make([]*corev1.Pod, len(benchSelectorPods()))
	for i, p := range benchSelectorPods() {
		q := *p
		q.Labels = map[string]string{"statefulset.kubernetes.io/pod-name": p.Name}
		out[i] = &q
	}
	return out
})

// upstreamLabelIndex is the index a client-go user adds to answer label
// selectors from an index: one "key=value" value per label.
const upstreamLabelIndex = "labels"

func upstreamLabelIndexFunc(obj any) ([]string, error) {
	p := obj.(*corev1.Pod)
	out := make([]string, 0, len(p.Labels))
	for k, v := range p.Labels {
		out = append(out, k+"="+v)
	}
	return out, nil
}

// labelIndexed is one side's indexer for the label index benchmarks.
type labelIndexed struct {
	add, update, delete func(*corev1.Pod)
	addLabelIndex       func() error
	// addIndexFunc adds f as the index name: readLabelsIndexFunc or
	// hashLabelsIndexFunc.
	addIndexFunc func(name string, f func(*corev1.Pod) ([]string, error)) error
}

// readLabelsIndexFunc reads every label of p, as a label index must on each
// add, and indexes nothing: the store with it, against the store without,
// is what reading the labels costs a write, whatever is done with them.
func readLabelsIndexFunc(p *corev1.Pod) ([]string, error) {
	n := 0
	for k, v := range p.Labels {
		n += len(k) + len(v)
	}
	benchSink += n
	return nil, nil
}

// hashLabelsIndexFunc hashes the key and the value of every label of p,
// reading their bytes as a hash-based label index must on each add, and
// indexes nothing.
func hashLabelsIndexFunc(p *corev1.Pod) ([]string, error) {
	var h uint64
	for k, v := range p.Labels {
		h += maphash.String(benchHashSeed, k) ^ maphash.String(benchHashSeed, v)
	}
	benchSink += int(h & 1)
	return nil, nil
}

var benchHashSeed = maphash.MakeSeed()

func newLabelIndexed(impl string) labelIndexed {
	if impl == "impl=upstream" {
		x := newUpstreamBenchIndexer()
		return labelIndexed{
			add:    func(p *corev1.Pod) { x.Add(p) },
			update: func(p *corev1.Pod) { x.Update(p) },
			delete: func(p *corev1.Pod) { x.Delete(p) },
			addLabelIndex: func() error {
				return x.AddIndexers(cache.Indexers{upstreamLabelIndex: upstreamLabelIndexFunc})
			},
			addIndexFunc: func(name string, f func(*corev1.Pod) ([]string, error)) error {
				return x.AddIndexers(cache.Indexers{name: func(obj any) ([]string, error) { return f(obj.(*corev1.Pod)) }})
			},
		}
	}
	x := newTypedBenchIndexer()
	return labelIndexed{
		add:           func(p *corev1.Pod) { x.Add(p) },
		update:        func(p *corev1.Pod) { x.Update(p) },
		delete:        func(p *corev1.Pod) { x.Delete(p) },
		addLabelIndex: func() error { return x.AddLabelIndex(MetaLabelsFunc[*corev1.Pod]) },
		addIndexFunc: func(name string, f func(*corev1.Pod) ([]string, error)) error {
			return x.AddIndexers(Indexers[*corev1.Pod]{name: f})
		},
	}
}

var labelIndexImpls = []string{"impl=upstream", "impl=typed"}

// benchLabelIndexBuild builds each side's label index over pods, as the
// sub-benchmark name, reporting the heap it takes per object per label.
// Our slot ids (arena.ids and slot.id, 16 bytes an object), which every
// Store pays, are counted as the index's.
func benchLabelIndexBuild(b *testing.B, name string, pods []*corev1.Pod) {
	nlabels := 0
	for _, p := range pods {
		nlabels += len(p.Labels)
	}
	b.Run(name, func(b *testing.B) {
		for _, impl := range labelIndexImpls {
			b.Run(impl, func(b *testing.B) {
				fill := func() labelIndexed {
					x := newLabelIndexed(impl)
					for _, p := range pods {
						x.add(p)
					}
					return x
				}
				var before, after runtime.MemStats
				x := fill()
				runtime.GC()
				runtime.ReadMemStats(&before)
				if err := x.addLabelIndex(); err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(x)
				grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
				if impl == "impl=typed" {
					grown += 16 * int64(len(pods))
				}
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					x = fill()
					b.StartTimer()
					if err := x.addLabelIndex(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(grown)/float64(nlabels), "B/object/label")
			})
		}
	})
}

// benchLabelIndexWrites measures each side's writes without and with a
// label index, in the workloads of BenchmarkIndexerAdd, Update and Delete.
// Adds also run with labelindex=read: no label index, and an index func
// that reads every label and indexes nothing (readLabelsIndexFunc), and
// with labelindex=hash: one that hashes them (hashLabelsIndexFunc).
func benchLabelIndexWrites(b *testing.B, pods []*corev1.Pod) {
	updated := benchSelectorPodsUpdated()
	const off, on, read, hash = "labelindex=off", "labelindex=on", "labelindex=read", "labelindex=hash"
	newStore := func(impl, mode string) labelIndexed {
		x := newLabelIndexed(impl)
		var err error
		switch mode {
		case on:
			err = x.addLabelIndex()
		case read:
			err = x.addIndexFunc("read", readLabelsIndexFunc)
		case hash:
			err = x.addIndexFunc("hash", hashLabelsIndexFunc)
		}
		if err != nil {
			b.Fatal(err)
		}
		return x
	}
	fill := func(impl, mode string) labelIndexed {
		x := newStore(impl, mode)
		for _, p := range pods {
			x.add(p)
		}
		return x
	}
	each := func(b *testing.B, op string, modes []string, body func(b *testing.B, impl, mode string)) {
		b.Run(op, func(b *testing.B) {
			for _, mode := range modes {
				b.Run(mode, func(b *testing.B) {
					for _, impl := range labelIndexImpls {
						b.Run(impl, func(b *testing.B) { body(b, impl, mode) })
					}
				})
			}
		})
	}
	each(b, "op=add", []string{off, on, read, hash}, func(b *testing.B, impl, mode string) {
		x := newStore(impl, mode)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i == len(pods) {
				b.StopTimer()
				x, i = newStore(impl, mode), 0
				runtime.GC() // the old store's garbage is not the next adds' cost
				b.StartTimer()
			}
			x.add(pods[i])
			i++
		}
	})
	each(b, "op=update", []string{off, on}, func(b *testing.B, impl, mode string) {
		x := fill(impl, mode)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i%2 == 0 {
				x.update(updated[i/2%len(pods)])
			} else {
				x.update(pods[i/2%len(pods)])
			}
			i++
		}
	})
	each(b, "op=delete", []string{off, on}, func(b *testing.B, impl, mode string) {
		x := fill(impl, mode)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i == len(pods) {
				b.StopTimer()
				x, i = labelIndexed{}, 0 // the emptied store is garbage before the refill
				x = fill(impl, mode)
				runtime.GC() // the refill's garbage is not the deletes' cost
				b.StartTimer()
			}
			x.delete(pods[i])
			i++
		}
	})
}
