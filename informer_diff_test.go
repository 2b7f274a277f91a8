package informer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/typedkube/informer/internal/testobj"
)

// upstreamRecorder is recorder for client-go's untyped handlers, writing the
// same lines.
type upstreamRecorder struct{ r recorder }

func (u *upstreamRecorder) OnAdd(obj any, initial bool) { u.r.OnAdd(obj.(*corev1.Pod), initial) }
func (u *upstreamRecorder) OnUpdate(old, new any) {
	u.r.OnUpdate(old.(*corev1.Pod), new.(*corev1.Pod))
}
func (u *upstreamRecorder) OnDelete(obj any) {
	switch o := obj.(type) {
	case *corev1.Pod:
		u.r.OnDelete(DeletedObject[*corev1.Pod]{Obj: o, Key: mustKey(o)})
	case cache.DeletedFinalStateUnknown:
		p, _ := o.Obj.(*corev1.Pod)
		u.r.OnDelete(DeletedObject[*corev1.Pod]{Obj: p, Key: o.Key, FinalStateUnknown: true})
	}
}

// normalizeHandlerCalls sorts the parts of a call sequence whose order client-go
// leaves to map iteration: the deletions a relist implies, and the cache
// replayed to a handler added late.
func normalizeHandlerCalls(calls []string) []string {
	calls = slices.Clone(calls)
	for i := 0; i < len(calls); {
		j := i
		for j < len(calls) && (strings.HasSuffix(calls[j], " unknown") == strings.HasSuffix(calls[i], " unknown")) &&
			(strings.HasSuffix(calls[i], " unknown") || strings.HasSuffix(calls[i], " initial") && strings.HasSuffix(calls[j], " initial")) {
			j++
		}
		if j > i+1 {
			slices.Sort(calls[i:j])
		} else {
			j = i + 1
		}
		i = j
	}
	return calls
}

// runInformerDiff runs our informer and client-go's SharedIndexInformer on
// one fake source, applies the changes encoded in data (bursts of watch
// events, pauses, relists after missed changes, resync periods passing,
// handlers added late) and compares, handler by handler, the calls each
// received. With compact set, our informer keeps a compact store, written
// as objects (compactObjects) or, from a source that lists records as a
// Factory's does, as records (compactRecords).
func runInformerDiff(t *testing.T, data []byte, compact compactMode) {
	synctest.Test(t, func(t *testing.T) {
		r := &opReader{data: data}
		src := newFakeSource()
		start := time.Now()
		var traceMu sync.Mutex
		var trace []string
		src.trace = func(format string, args ...any) {
			traceMu.Lock()
			defer traceMu.Unlock()
			trace = append(trace, fmt.Sprintf("%6v ", time.Since(start))+fmt.Sprintf(format, args...))
		}
		exists := map[string]bool{}
		names := []string{"ns-a/p0", "ns-a/p1", "ns-a/p2", "ns-b/p0", "ns-b/p1", "ns-b/p2"}
		mutate := func() {
			key := names[r.intn(len(names))]
			ns, name, _ := SplitMetaNamespaceKey(key)
			p := testobj.Pod(ns, name, "", "app="+fmt.Sprint(r.intn(3)))
			switch {
			case !exists[key]:
				src.Add(p)
				exists[key] = true
			case r.intn(3) == 0:
				src.Delete(p)
				delete(exists, key)
			default:
				src.Modify(p)
			}
		}
		for range r.intn(5) {
			mutate()
		}

		defaultResync := time.Duration(r.intn(2)) * 20 * time.Second
		var typed *SharedIndexInformer[*corev1.Pod]
		lw := src.Typed()
		if compact == compactRecords {
			lw = newRecordListWatch(lw, func() *Indexer[*corev1.Pod] { return typed.GetIndexer() })
		}
		typed, err := NewSharedIndexInformer(lw, SharedIndexInformerOptions[*corev1.Pod]{
			DefaultResyncPeriod: defaultResync,
			Reflector: ReflectorOptions{WatchList: WatchListOff, WatchErrorHandler: func(_ context.Context, err error) {
				src.tracef("typed error: %v", err)
			}},
			Compact: compact != notCompact,
			codec:   recordCodecOf(lw),
		})
		if err != nil {
			t.Fatal(err)
		}
		upstream := cache.NewSharedIndexInformer(src.Upstream(), &corev1.Pod{}, defaultResync, cache.Indexers{})
		upstream.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
			src.tracef("upstream error: %v", err)
		})
		type pair struct {
			typed    *recorder
			upstream *upstreamRecorder
		}
		var pairs []pair
		// addHandlers adds a handler to each informer; resync 0 means the
		// informer's default, as in both APIs.
		addHandlers := func(resync time.Duration) {
			p := pair{&recorder{}, &upstreamRecorder{}}
			if defaultResync == 0 && resync > 0 {
				// client-go ignores the period, with a warning; we refuse
				// it. Without it, the handler gets what client-go's gets.
				if _, err := typed.AddEventHandler(p.typed, HandlerOptions{ResyncPeriod: resync}); !errors.Is(err, ErrResyncUnsupported) {
					t.Fatalf("AddEventHandler with a resync on an informer without one: %v, want ErrResyncUnsupported", err)
				}
				if _, err := typed.AddEventHandler(p.typed); err != nil {
					t.Fatal(err)
				}
			} else if _, err := typed.AddEventHandler(p.typed, HandlerOptions{ResyncPeriod: resync}); err != nil {
				t.Fatal(err)
			}
			uopts := cache.HandlerOptions{}
			if resync != 0 {
				uopts.ResyncPeriod = &resync
			}
			if _, err := upstream.AddEventHandlerWithOptions(p.upstream, uopts); err != nil {
				t.Fatal(err)
			}
			pairs = append(pairs, p)
		}
		addHandlers(0)
		addHandlers(10 * time.Second)

		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			typed.Run(ctx)
		}()
		go upstream.RunWithContext(ctx)
		synctest.Wait()
		// settle lets both informers recover: a Reflector's backoff after a
		// failure can reach 30s plus up to 100% jitter.
		settle := func() {
			synctest.Wait()
			time.Sleep(2 * time.Minute)
			synctest.Wait()
		}

		for r.more() {
			switch r.intn(10) {
			case 0, 1, 2, 3, 4:
				mutate()
			case 5:
				synctest.Wait()
			case 6: // changes missed while the source is down, then a relist
				synctest.Wait()
				src.tracef("test: offline")
				src.Offline()
				synctest.Wait() // both Reflectors meet the outage and back off
				for range r.intn(4) {
					mutate()
				}
				src.Compact()
				src.Online()
				settle()
			case 7: // time passes: resyncs fall due
				synctest.Wait()
				time.Sleep(time.Duration(1+r.intn(20)) * time.Second)
				synctest.Wait()
			case 8:
				synctest.Wait()
				if len(pairs) < 4 {
					addHandlers(0)
					synctest.Wait()
				}
			case 9:
				synctest.Wait()
				src.tracef("test: drop watches")
				src.DropWatches() // both end the watch and list again
				settle()
			}
		}
		settle()
		cancel()
		<-done
		synctest.Wait() // client-go's informer stops in the background
		// Objects cached through the last settle (two minutes: several
		// resync periods, with no change) are resynced by both informers.
		cachedAtEnd := len(upstream.GetStore().List()) > 0
		for i, p := range pairs {
			got, want := p.typed.take(), p.upstream.r.take()
			if defaultResync > 0 {
				// How many resync rounds fit between two changes depends on
				// when each Reflector re-watched, after a backoff with random
				// jitter that client-go's informer does not let us turn off:
				// each restarts its resync ticks there, so a change can fall
				// between one side's tick and the other's, and one side's
				// resync of an object the other's misses is timing. So do the
				// unchanged objects a relist reports (they go to the handlers
				// whose resync was due at the last check). Compare the rest
				// exactly, and that both resynced what the last settle kept.
				var resyncs, uresyncs int
				got, resyncs = dropSameVersionUpdates(got)
				want, uresyncs = dropSameVersionUpdates(want)
				if cachedAtEnd && (resyncs == 0 || uresyncs == 0) {
					t.Fatalf("handler %d: %d resync updates, upstream %d, with objects cached through the last settle", i, resyncs, uresyncs)
				}
			}
			got, want = normalizeHandlerCalls(got), normalizeHandlerCalls(want)
			if !slices.Equal(got, want) {
				t.Log(strings.Join(trace, "\n"))
				t.Fatalf("handler %d:\n  typed    %q\n  upstream %q\n(last synced: typed %q, upstream %q; source at %d after %d lists, %d watches)",
					i, got, want, typed.LastSyncResourceVersion(), upstream.LastSyncResourceVersion(), src.rv, src.lists, src.watches)
			}
		}
		if got, want := podsString(typed.GetIndexer().List()), podsString(toPods(upstream.GetStore().List())); got != want {
			t.Fatalf("caches differ: typed %s, upstream %s", got, want)
		}
		if ok, _ := typed.GetIndexer().Compact(); ok != (compact != notCompact) {
			t.Fatalf("the cache is compact: %v, want %v", ok, compact != notCompact)
		}
		src.DropWatches()
	})
}

// dropSameVersionUpdates removes the updates whose old and new objects
// have the same resource version, and counts them.
func dropSameVersionUpdates(calls []string) ([]string, int) {
	var out []string
	n := 0
	for _, c := range calls {
		if old, new, ok := strings.Cut(strings.TrimPrefix(c, "update "), " -> "); ok && strings.HasPrefix(c, "update ") && old == new {
			n++
			continue
		}
		out = append(out, c)
	}
	return out, n
}

func TestInformerDifferential(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	runRandomSequences(t, 2000, func(tb testing.TB, data []byte) { runInformerDiff(tb.(*testing.T), data, notCompact) })
}

func FuzzInformerDifferential(f *testing.F) {
	clientfeaturestesting.SetFeatureDuringTest(f, clientfeatures.WatchListClient, false)
	f.Add([]byte{0, 0, 0, 6, 1, 1, 1, 5, 7, 9, 8, 0, 0, 6, 2, 2})
	f.Fuzz(func(t *testing.T, data []byte) { runInformerDiff(t, data, notCompact) })
}

// TestInformerDifferentialCompact is TestInformerDifferential for an
// informer with a compact store, written as objects and as records.
func TestInformerDifferentialCompact(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	for _, mode := range []compactMode{compactObjects, compactRecords} {
		t.Run(mode.String(), func(t *testing.T) {
			runRandomSequences(t, 500, func(tb testing.TB, data []byte) { runInformerDiff(tb.(*testing.T), data, mode) })
		})
	}
}

func FuzzInformerDifferentialCompact(f *testing.F) {
	clientfeaturestesting.SetFeatureDuringTest(f, clientfeatures.WatchListClient, false)
	f.Add([]byte{0, 0, 0, 6, 1, 1, 1, 5, 7, 9, 8, 0, 0, 6, 2, 2}, false)
	f.Fuzz(func(t *testing.T, data []byte, records bool) {
		mode := compactObjects
		if records {
			mode = compactRecords
		}
		runInformerDiff(t, data, mode)
	})
}
