package informer

import (
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
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
		x.setCompact(codec, true)
	}
	_ = x.addLabelIndex(MetaLabelsFunc[*corev1.Pod], true)
	return x
}

// TestStoreBytesMatchesHeap fills an informer's Indexer with decoded Pods,
// full and compact, and checks that storeBytes is within 5% of the heap it
// and its decoder hold, measured. The decoder's plans, which storeBytes
// does not count (about 175 KB for Pods, once per decoder), are in what is
// held: with 3,000 Pods they were 4% of a compact store's heap, and
// changes of a few bytes a Pod took the ratio across its bound; with
// 6,000, 2%.
func TestStoreBytesMatchesHeap(t *testing.T) {
	const n = 6000
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
		// decoded: objects decoded and added; compact: the same, kept as
		// records, with the decoded objects the codec caches; listed: a
		// compact store of listed records, every object then read, so
		// that the codec caches objects decoded from records, whose
		// strings are the records' memory.
		for _, mode := range []string{"decoded", "compact", "listed"} {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				before := heapAlloc()
				dec, err := wire.NewDecoder[*corev1.Pod, *corev1.Pod](wire.Options{})
				if err != nil {
					t.Fatal(err)
				}
				var codec *wire.Compact[*corev1.Pod]
				if mode != "decoded" {
					codec = wire.NewCompact(dec, wire.DecodedCacheSize)
				}
				x := informerIndexer(decoderSizer(dec), codec)
				if mode == "listed" {
					if err := x.replaceEncoded(listedRecords(t, codec, src), false); err != nil {
						t.Fatal(err)
					}
					for range x.All() { // decodes each record, the last ones cached
					}
				} else {
					for _, b := range encs {
						obj, err := dec.Protobuf(b)
						if err != nil {
							t.Fatal(err)
						}
						if err := x.Add(obj); err != nil {
							t.Fatal(err)
						}
					}
				}
				held := heapAlloc() - before
				got := x.storeBytes()
				runtime.KeepAlive(x)
				ratio := float64(got) / float64(held)
				t.Logf("held %.0f B/object, storeBytes %.0f B/object (%.3f)", float64(held)/n, float64(got)/n, ratio)
				// 5%, or 8% under the race detector, whose allocator pads
				// and aligns blocks in ways the estimate does not follow.
				tol := 0.05
				if raceEnabled {
					tol = 0.08
				}
				if ratio < 1-tol || ratio > 1+tol {
					t.Errorf("storeBytes %d is %.1f%% of the %d B held, want within %.0f%%", got, 100*ratio, held, 100*tol)
				}
			})
		}
	}
}

// plainBytes is the sum of what entrySize and the sizer count for objs,
// stored in x, a Store that is not compact: the reference the count must
// equal once sizeObjects has run.
func plainBytes(x *Indexer[*corev1.Pod], objs map[string]*corev1.Pod) int64 {
	var n int64
	width := x.idx.Load().len()
	for key, obj := range objs {
		n += int64(x.entrySize(key, width, len(obj.Labels))) + int64(x.sizer.size(obj))
	}
	return n
}

// slotBytes is the sum of what x's slots count, sized or not yet.
func slotBytes(x *Indexer[*corev1.Pod]) int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var n int64
	for _, sl := range x.items {
		n += int64(sl.size) + int64(sl.objSize)
	}
	return n
}

// TestStoreBytesFollowsChanges drives an informer's Indexer of Pods, with
// decoded objects and compact, through adds, updates, deletes, relists
// that rebuild it and relists that reuse its objects, checking the count
// of its entries against the sum of their sizes after each step (a Sizer
// that knows no sharing, so that sizes do not depend on when they are
// taken), and that it is back to its empty value once every object is
// deleted.
func TestStoreBytesFollowsChanges(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compact=%v", compact), func(t *testing.T) {
			var codec *wire.Compact[*corev1.Pod]
			if compact {
				codec = wire.NewCompact(podDecoder(), 0) // no decoded objects kept after the deletes
			}
			x := informerIndexer(plainSizer[*corev1.Pod](), codec)
			empty := x.storeBytes()
			model := map[string]*corev1.Pod{}
			rng := rand.New(rand.NewPCG(1, 2))
			pod := func(i, version int) *corev1.Pod {
				p := testobj.BenchPod(i, 3)
				p.ResourceVersion = fmt.Sprint(version)
				if version%2 == 1 {
					p.Labels["extra"] = strings.Repeat("v", version%40)
					p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers...)
				}
				return p
			}
			check := func(step string) {
				t.Helper()
				// Between reads, the count is what the slots hold, some
				// objects not counted yet; a read counts them all.
				if got, want := x.bytes.Load(), slotBytes(x); got != want {
					t.Fatalf("%s: before a read, the entries count %d bytes, want %d, the sum of their slots'", step, got, want)
				}
				if rng.IntN(3) != 0 {
					return
				}
				x.sizeObjects()
				want := plainBytes(x, model)
				if compact {
					// Records are counted apart (compactState.bytes); the
					// entries hold the Store's own bytes alone.
					want = 0
					var recs int64
					for key, obj := range model {
						want += int64(x.entrySize(key, x.idx.Load().len(), len(obj.Labels)))
						recs += int64(x.recordOf(key).Bytes())
					}
					if got := x.compact.bytes.Load(); got != recs {
						t.Fatalf("%s: the records count %d bytes, want %d", step, got, recs)
					}
				}
				if got := x.bytes.Load(); got != want {
					t.Fatalf("%s: the entries count %d bytes, want %d, the sum of their sizes", step, got, want)
				}
			}
			for step := range 400 {
				i, version := rng.IntN(60), step+1
				switch op := rng.IntN(10); {
				case op < 5:
					p := pod(i, version)
					if err := x.Add(p); err != nil {
						t.Fatal(err)
					}
					model[mustKey(p)] = p
				case op < 8:
					p := pod(i, version)
					if err := x.Delete(p); err != nil {
						t.Fatal(err)
					}
					delete(model, mustKey(p))
				case op == 8: // a relist: a new list, some objects again
					var list []*corev1.Pod
					next := map[string]*corev1.Pod{}
					for key, p := range model {
						if rng.IntN(3) > 0 {
							list = append(list, p)
							next[key] = p
						}
					}
					for range 5 {
						p := pod(60+rng.IntN(20), version)
						list = append(list, p)
						next[mustKey(p)] = p
					}
					if err := x.Replace(list, ""); err != nil {
						t.Fatal(err)
					}
					model = next
				default: // a relist that reuses the cached objects (a patch), one changed
					p := pod(i, version)
					if compact { // the compact store reuses records, not objects
						if err := x.Add(p); err != nil {
							t.Fatal(err)
						}
						model[mustKey(p)] = p
						break
					}
					for k := range model {
						delete(model, k) // one object no longer listed
						break
					}
					model[mustKey(p)] = p
					var list []*corev1.Pod
					var keys []string
					for key, p := range model {
						list, keys = append(list, p), append(keys, key)
					}
					if err := x.replace(list, keys, true); err != nil {
						t.Fatal(err)
					}
				}
				check(fmt.Sprintf("step %d", step))
			}
			for _, p := range model {
				if err := x.Delete(p); err != nil {
					t.Fatal(err)
				}
			}
			if got := x.bytes.Load(); got != 0 {
				t.Errorf("the entries count %d bytes once every object is deleted, want 0", got)
			}
			if compact {
				if got := x.compact.bytes.Load(); got != 0 {
					t.Errorf("the records count %d bytes once every object is deleted, want 0", got)
				}
				return // the runs the records shared stay in the codec's table until replaced
			}
			if got := x.storeBytes(); got != empty {
				t.Errorf("storeBytes is %d once every object is deleted, want %d, its value when empty", got, empty)
			}
		})
	}
}

// The Factory's informers decoded by package wire count with their
// decoder's Sizer: the label and annotation maps and strings their Pods
// share are not counted per object but once, with the decoder's tables.
func TestFactoryStoreBytesKnowsSharing(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	for i := range 40 {
		create(t, srv, richPod("a", fmt.Sprintf("web-%d", i), "node-1"))
	}
	f := newTestFactory(t, srv, FactoryOptions{})
	pods, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	x := pods.GetIndexer()
	plain := plainSizer[*corev1.Pod]()
	var unshared int64
	for key, p := range x.All() {
		unshared += int64(x.entrySize(key, x.idx.Load().len(), len(p.Labels))) + int64(plain.size(p))
	}
	x.sizeObjects()
	entries := x.bytes.Load()
	// Each Pod shares its labels, its annotations (50 bytes) and short strings.
	if saved := (unshared - entries) / 40; saved < 200 {
		t.Errorf("the entries count %d bytes, %d per Pod less than if nothing were shared (%d); want at least 200 less", entries, saved, unshared)
	}
	if st := pods.Stats(); st.StoreBytes <= entries {
		t.Errorf("StoreBytes = %d, want more than the entries' %d: the decoder's shared tables", st.StoreBytes, entries)
	}
}

// walker notes the records a compact Store gives its Compact's
// SharedBytesOf, as a Compact whose table has started over walks them.
type walker struct{ walked []*wire.Record }

// walk makes x's codec's SharedBytesOf note the records it is given in w.
func (w *walker) walk(x *Indexer[*corev1.Pod]) {
	codec := x.compact.codec
	x.compact.sharedBytesOf = func(records iter.Seq[*wire.Record]) int {
		w.walked = slices.Collect(records)
		return codec.SharedBytesOf(slices.Values(w.walked))
	}
}

// A compact Store's Compact gives its codec exactly the records it holds,
// once each, through adds, updates and deletes: the runs of those are
// what it counts once the codec's table has dropped some.
func TestStoreCompactWalksStoredRecords(t *testing.T) {
	dec, err := wire.NewDecoder[*corev1.Pod, *corev1.Pod](wire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := &walker{}
	x := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]})
	x.setCompact(wire.NewCompact(dec, 8), true)
	w.walk(x)
	pods := testobj.BenchPods(300, 10)
	for _, p := range pods {
		if err := x.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range pods {
		switch i % 3 {
		case 0:
			if err := x.Delete(p); err != nil {
				t.Fatal(err)
			}
		case 1:
			q := p.DeepCopy()
			q.ResourceVersion += "1"
			q.Labels = map[string]string{"moved": "yes"}
			if err := x.Update(q); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkWalked(t, x, w, 200)
	// A relist to the first 150, the updated ones as they are now.
	var relist []*corev1.Pod
	for _, key := range x.ListKeys() {
		if p, ok := x.GetByKey(key); ok && len(relist) < 150 {
			relist = append(relist, p)
		}
	}
	if err := x.Replace(relist, "7"); err != nil {
		t.Fatal(err)
	}
	checkWalked(t, x, w, 150)
}

func checkWalked(t *testing.T, x *Indexer[*corev1.Pod], w *walker, n int) {
	t.Helper()
	ok, bytes := x.Compact()
	if !ok || bytes <= 0 {
		t.Fatalf("Compact() = %v, %d", ok, bytes)
	}
	want := make(map[*wire.Record]bool)
	for _, key := range x.ListKeys() {
		rec := x.recordOf(key)
		if rec == nil {
			t.Fatalf("no record under %s", key)
		}
		want[rec] = true
	}
	got := make(map[*wire.Record]bool)
	for _, r := range w.walked {
		if got[r] {
			t.Errorf("record %p given twice", r)
		}
		got[r] = true
	}
	if len(want) != n || !maps.Equal(got, want) {
		t.Errorf("Compact gave the codec %d records, want the %d stored (%d)", len(got), len(want), n)
	}
}
