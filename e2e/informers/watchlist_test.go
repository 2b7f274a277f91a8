package informers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/harness"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// createConfigMaps creates n small ConfigMaps in ns, 8 at a time.
func createConfigMaps(t *testing.T, ctx context.Context, c *kubetest.Clients, ns string, n int) {
	t.Helper()
	createConfigMapsOf(t, ctx, c, ns, n, func(i int) map[string]string { return map[string]string{"i": fmt.Sprint(i)} })
}

// createConfigMapsOf creates n ConfigMaps in ns, the i-th with data(i), 8 at a time.
func createConfigMapsOf(t *testing.T, ctx context.Context, c *kubetest.Clients, ns string, n int, data func(i int) map[string]string) {
	t.Helper()
	start := time.Now()
	if err := kubetest.Parallel(ctx, n, 8, func(ctx context.Context, i int) error {
		_, err := c.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i)},
			Data:       data(i),
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("created %d ConfigMaps in %v", n, time.Since(start).Round(time.Millisecond))
}

// syncObserved starts an informer of the ConfigMaps of ns over c through a Tap, with the given
// watch-list mode, waits until it has synced and checks its cache against a fresh LIST made with
// check. It
// returns the tap and the informer's watch errors; the informer is stopped when the test ends.
func syncObserved(t *testing.T, ctx context.Context, c, check *kubetest.Clients, ns string, mode informer.WatchListMode) (*kubetest.Tap[*corev1.ConfigMap], func() []error) {
	t.Helper()
	tap := &kubetest.Tap[*corev1.ConfigMap]{
		LW: informer.ListWatchFromClient[corev1.ConfigMap](c.Kube.CoreV1().ConfigMaps(ns), nil),
	}
	var mu sync.Mutex
	var watchErrs []error
	inf, err := informer.NewSharedIndexInformer(tap, informer.SharedIndexInformerOptions[*corev1.ConfigMap]{
		Reflector: informer.ReflectorOptions{
			WatchList: mode,
			WatchErrorHandler: func(_ context.Context, err error) {
				mu.Lock()
				watchErrs = append(watchErrs, err)
				mu.Unlock()
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := kubetest.Start(ctx, inf)
	t.Cleanup(func() {
		if err := stop(30 * time.Second); err != nil {
			t.Error(err)
		}
	})
	if err := informer.WaitForCacheSync(testContext(t, 30*time.Second), inf); err != nil {
		t.Fatal(err)
	}
	if _, err := kubetest.WaitConverged(ctx, 30*time.Second, kubetest.MetadataLister(check.Metadata, ns),
		kubetest.Cache{Name: "cache", GVR: configMapsGVR, State: func() kubetest.State { return kubetest.CacheState(inf) }},
	); err != nil {
		t.Fatal(err)
	}
	return tap, func() []error {
		mu.Lock()
		defer mu.Unlock()
		return append([]error(nil), watchErrs...)
	}
}

// TestWatchList checks that the informer's default gets its initial state from a watch-list
// stream: no LIST request, one watch with sendInitialEvents=true, ended by the
// k8s.io/initial-events-end bookmark; and that with WatchListOff it lists and watches instead.
func TestWatchList(t *testing.T) {
	const n = 2000
	verifyNoGoroutinesLeft(t)
	ctx := testContext(t, 2*time.Minute)
	var log kubetest.RequestLog
	cl := clientsFor(t, log.Wrap(srv.AdminConfig()))
	check := adminClients(t)
	ns := newNamespace(t, check)
	createConfigMaps(t, ctx, check, ns, n)

	t.Run("default", func(t *testing.T) {
		log.Reset()
		tap, _ := syncObserved(t, ctx, cl, check, ns, informer.WatchListAuto)
		if lists := log.Requests(func(r kubetest.Request) bool { return r.ListOf("configmaps") }); len(lists) != 0 {
			t.Errorf("LIST requests: %v, want none", lists)
		}
		watches := log.Requests(func(r kubetest.Request) bool { return r.WatchOf("configmaps") })
		if len(watches) != 1 || !watches[0].WatchList() {
			t.Fatalf("watch requests %v, want one watch-list stream (sendInitialEvents=true)", watches)
		}
		ends := tap.InitialEventsEnd()
		if len(ends) != 1 {
			t.Fatalf("initial-events-end bookmarks at %v, want one", ends)
		}
		if len(tap.Lists()) != 0 {
			t.Errorf("the ListerWatcher was asked for %d lists, want none", len(tap.Lists()))
		}
		t.Logf("synced %d ConfigMaps from one watch-list stream, ended by the bookmark at resourceVersion %s", n, ends[0])
	})

	t.Run("WatchListOff", func(t *testing.T) {
		log.Reset()
		tap, _ := syncObserved(t, ctx, cl, check, ns, informer.WatchListOff)
		if got := log.Count(func(r kubetest.Request) bool { return r.WatchList() }); got != 0 {
			t.Errorf("%d watch-list requests, want none", got)
		}
		lists := tap.Lists()
		if len(lists) != 1 || lists[0].ResourceVersion != "0" {
			// The watch cache answers a list at "0" whole, though it is asked for pages of 500.
			t.Errorf("lists %+v, want one at resourceVersion 0", lists)
		}
		if len(tap.InitialEventsEnd()) != 0 {
			t.Errorf("initial-events-end bookmarks seen without watch-list")
		}
		if w := tap.Watches(); len(w) == 0 || w[0].SendInitialEvents != nil {
			t.Errorf("watches %+v, want a plain watch", w)
		}
	})
}

// TestWatchListFallback runs a second API server with the WatchList feature gate off: it refuses
// sendInitialEvents, and the informer's default (WatchListAuto) falls back to LIST and watch.
func TestWatchListFallback(t *testing.T) {
	verifyNoGoroutinesLeft(t)
	ctx := testContext(t, 2*time.Minute)
	old, err := harness.Start(ctx, harness.Options{
		APIServerArgs: []string{"--feature-gates=WatchList=false"},
		Output:        testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := old.Stop(); err != nil {
			t.Error(err)
		}
	})
	var log kubetest.RequestLog
	cl, err := kubetest.NewClients(log.Wrap(old.AdminConfig()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	check, err := kubetest.NewClients(old.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(check.Close)
	ns, err := kubetest.NewNamespace(ctx, check.Kube, "fallback")
	if err != nil {
		t.Fatal(err)
	}
	createConfigMaps(t, ctx, check, ns, 100)

	tap, watchErrs := syncObserved(t, ctx, cl, check, ns, informer.WatchListAuto)
	var reqs []string
	for _, r := range log.Requests(func(r kubetest.Request) bool { return r.Resource() == "configmaps" }) {
		reqs = append(reqs, r.String())
	}
	streams := log.Requests(func(r kubetest.Request) bool { return r.WatchList() })
	if len(streams) == 0 || streams[0].Status < 400 {
		t.Fatalf("watch-list requests %v, want the first refused by the server; requests:\n%v", streams, reqs)
	}
	if len(tap.Lists()) == 0 {
		t.Fatalf("no LIST after the refused stream; requests:\n%v", reqs)
	}
	fellBack := false
	for _, err := range watchErrs() {
		fellBack = fellBack || errors.Is(err, informer.ErrWatchListFallback)
	}
	if !fellBack {
		t.Errorf("watch errors %v, want one wrapping ErrWatchListFallback", watchErrs())
	}
	t.Logf("stream refused with %d; then %d list(s) and %d watch(es)", streams[0].Status, len(tap.Lists()), len(tap.Watches())-1)
}

// testWriter sends the harness's progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", p)
	return len(p), nil
}

// TestFactoryWatchListCompressed: the Factory's informer starts with a watch-list stream, which
// the apiserver compresses for a client that accepts gzip (client-go's default). Of small objects
// (ConfigMaps of a few bytes), a compressed stream is replaced, once its initial events have come,
// by a plain watch from the version they reached, which the apiserver does not compress; of large
// ones (ConfigMaps of 8 KiB each) over HTTP/2, it is read on. An uncompressed stream is read on
// either way. Objects created after the sync arrive in every case.
func TestFactoryWatchListCompressed(t *testing.T) {
	const n = 200
	verifyNoGoroutinesLeft(t)
	ctx := testContext(t, 2*time.Minute)
	check := adminClients(t)
	small := newNamespace(t, check)
	createConfigMaps(t, ctx, check, small, n)
	large := newNamespace(t, check)
	createConfigMapsOf(t, ctx, check, large, n, func(i int) map[string]string {
		return map[string]string{"data": strings.Repeat(fmt.Sprint(i%10), 8<<10)}
	})
	for _, tc := range []struct {
		large, compression, wantReplaced bool
	}{
		{compression: true, wantReplaced: true},
		{compression: false},
		{large: true, compression: true},
		{large: true, compression: false},
	} {
		t.Run(fmt.Sprintf("large=%v/compression=%v", tc.large, tc.compression), func(t *testing.T) {
			ns := small
			if tc.large {
				ns = large
			}
			var log kubetest.RequestLog
			cfg := log.Wrap(srv.AdminConfig())
			cfg.DisableCompression = !tc.compression
			f, err := informer.NewFactory(cfg, informer.FactoryOptions{Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			inf, err := informer.For[*corev1.ConfigMap](f)
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("after-%v", tc.compression)
			added := make(chan struct{})
			if _, err := inf.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.ConfigMap]{AddFunc: func(cm *corev1.ConfigMap, _ bool) {
				if cm.Name == name {
					close(added)
				}
			}}); err != nil {
				t.Fatal(err)
			}
			f.Start(ctx)
			defer f.Shutdown()
			if err := informer.WaitForCacheSync(testContext(t, 30*time.Second), inf); err != nil {
				t.Fatal(err)
			}
			// The informer can report synced, its queue having applied the initial
			// events, a moment before the reflector has recorded their version.
			var synced string
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				if synced = inf.LastSyncResourceVersion(); synced != "" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("synced, but no LastSyncResourceVersion after 10s")
				}
			}
			if _, err := check.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-added:
			case <-time.After(30 * time.Second):
				t.Fatal("the ConfigMap created after the sync did not arrive within 30s")
			}
			list, err := check.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(inf.GetIndexer().List()); got != len(list.Items) {
				t.Errorf("the cache holds %d ConfigMaps, the server %d", got, len(list.Items))
			}
			watches := log.Requests(func(r kubetest.Request) bool { return r.WatchOf("configmaps") })
			if len(watches) == 0 || !watches[0].WatchList() || watches[0].Compressed != tc.compression {
				t.Fatalf("watches %v, want a watch-list stream first, compressed=%v", watches, tc.compression)
			}
			if !tc.wantReplaced {
				if len(watches) != 1 {
					t.Errorf("watches %v, want the one stream read on", watches)
				}
				return
			}
			if len(watches) != 2 {
				t.Fatalf("watches %v, want the compressed stream and one plain watch", watches)
			}
			w := watches[1]
			if w.WatchList() || w.Compressed || w.Query.Get("resourceVersion") != synced {
				t.Errorf("second watch %v (compressed=%v), want a plain, uncompressed watch from the synced version %s", w, w.Compressed, synced)
			}
			t.Logf("watch-list stream compressed; replaced by a plain watch from %s after the sync", synced)
		})
	}
}
