package informer

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedkube/informer/internal/testobj"
)

// newCompactPodInformer is newPodInformer with a compact store, whose source
// lists records as a Factory's does.
func newCompactPodInformer(t *testing.T, src *fakeSource, opts SharedIndexInformerOptions[*corev1.Pod]) *SharedIndexInformer[*corev1.Pod] {
	t.Helper()
	opts.Reflector.WatchList = WatchListOff
	opts.Reflector.WatchErrorHandler = func(_ context.Context, err error) { t.Logf("watch error: %v", err) }
	var inf *SharedIndexInformer[*corev1.Pod]
	lw := newRecordListWatch(src.Typed(), func() *Indexer[*corev1.Pod] { return inf.GetIndexer() })
	opts.Compact, opts.codec = true, lw.codec
	inf, err := NewSharedIndexInformer[*corev1.Pod](lw, opts)
	if err != nil {
		t.Fatal(err)
	}
	return inf
}

// A compact informer delivers the initial list, changes with their old
// objects, deletions and a relist's implied deletions, in either queue
// mode, and its cache is what the source holds.
func TestCompactInformer(t *testing.T) {
	forEachQueue(t, func(t *testing.T, mode QueueMode) {
		synctest.Test(t, func(t *testing.T) {
			src := newFakeSource()
			src.Add(testobj.Pod("ns", "a", "", "app=x"))
			src.Add(testobj.Pod("ns", "b", "", "app=y"))
			inf := newCompactPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{Queue: mode})
			rec := &recorder{}
			if _, err := inf.AddEventHandler(rec); err != nil {
				t.Fatal(err)
			}
			startInformer(t, inf)
			synctest.Wait()
			checkCalls(t, rec, "add ns/a@2 initial", "add ns/b@3 initial")
			src.Modify(testobj.Pod("ns", "a", "", "app=z"))
			src.Delete(testobj.Pod("ns", "b", ""))
			synctest.Wait()
			checkCalls(t, rec, "update ns/a@2 -> ns/a@4", "delete ns/b@5")
			src.Offline()
			synctest.Wait()
			src.Add(testobj.Pod("ns", "c", ""))
			src.Delete(testobj.Pod("ns", "a", ""))
			src.Compact()
			src.Online()
			synctest.Wait()
			time.Sleep(time.Minute) // past the Reflector's backoff
			synctest.Wait()
			// In order: the deletions a relist implies first; a DeltaFIFO
			// queues them after the listed objects.
			if got := normalizeHandlerCalls(rec.take()); !slices.Equal(got, []string{"add ns/c@6", "delete ns/a@4 unknown"}) && !slices.Equal(got, []string{"delete ns/a@4 unknown", "add ns/c@6"}) {
				t.Errorf("after the relist: %q", got)
			}
			if got, want := podsString(inf.GetIndexer().List()), podsString(src.Pods()); got != want {
				t.Errorf("cache %s, source %s", got, want)
			}
			if ok, _ := inf.GetIndexer().Compact(); !ok {
				t.Error("the cache is not compact")
			}
		})
	})
}

// A compact informer with a transform caches the transform's output,
// encoded, whether its source lists records or objects.
func TestCompactInformerTransform(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		src.Add(testobj.Pod("ns", "a", "", "app=x"))
		inf := newCompactPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{
			Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
				q := p.DeepCopy()
				q.Labels = map[string]string{"seen": "yes"}
				return q, nil
			},
		})
		startInformer(t, inf)
		synctest.Wait()
		src.Add(testobj.Pod("ns", "b", "", "app=y"))
		synctest.Wait()
		for _, key := range []string{"ns/a", "ns/b"} {
			p, ok := inf.GetIndexer().GetByKey(key)
			if !ok || p.Labels["seen"] != "yes" || len(p.Labels) != 1 {
				t.Errorf("%s: %v, %v; want the transform's output", key, p, ok)
			}
		}
	})
}

// A handler added late to a compact informer gets the cache replayed,
// decoded; Lister reads and read-your-writes work.
func TestCompactInformerLateHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		src.Add(testobj.Pod("ns", "a", "", "app=x"))
		src.Add(testobj.Pod("ns", "b", "", "app=x"))
		inf := newCompactPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
		startInformer(t, inf)
		synctest.Wait()
		if n := compactCodec(t, inf).Cached(); n != 0 {
			t.Errorf("%d objects decoded by a sync without handlers", n)
		}
		rec := &recorder{}
		if _, err := inf.AddEventHandler(rec); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		checkCalls(t, rec, "add ns/a@2 initial", "add ns/b@3 initial")
		p := src.Modify(testobj.Pod("ns", "a", "", "app=y"))
		if err := inf.WaitForResourceVersion(t.Context(), p.ResourceVersion); err != nil {
			t.Fatal(err)
		}
		got, err := inf.Lister().ByNamespace("ns").Get("a")
		if err != nil || got.Labels["app"] != "y" {
			t.Errorf("Get(ns/a) after its update = %v, %v", got, err)
		}
		synctest.Wait()
		checkCalls(t, rec, "update ns/a@2 -> ns/a@4")
	})
}
