package informer

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// upstreamLW serves a fakeLW to client-go's Reflector.
type upstreamLW struct {
	*fakeLW
	unsupported bool
}

func (u upstreamLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return u.ListWithContext(context.Background(), opts)
}

func (u upstreamLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return u.WatchWithContext(context.Background(), opts)
}

func (u upstreamLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	page, err := u.fakeLW.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	list := &corev1.PodList{ListMeta: page.ListMeta}
	for _, p := range page.Items {
		list.Items = append(list.Items, *p)
	}
	return list, nil
}

func (u upstreamLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return u.fakeLW.Watch(ctx, opts)
}

func (u upstreamLW) IsWatchListSemanticsUnSupported() bool { return u.unsupported }

// runUpstream runs client-go's Reflector against sc, into a cache.Store.
// Its WatchListClient feature gate is set for the test to match the
// script's watch-list mode, and restored after it.
func runUpstream(t *testing.T, sc *script) scriptResult {
	t.Helper()
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, sc.opts.watchList == WatchListAuto)
	var res scriptResult
	synctest.Test(t, func(t *testing.T) {
		tr := newTracer()
		ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logr.Discard()))
		defer cancel()
		fake := newFakeLW(sc, tr, cancel)
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		opts := cache.ReflectorOptions{
			Name:            "upstream",
			ResyncPeriod:    sc.opts.resync,
			MinWatchTimeout: sc.opts.minWatch,
		}
		if sc.opts.backoff != 0 {
			opts.Backoff = &wait.Backoff{
				Duration: sc.opts.backoff,
				Cap:      30 * time.Second,
				Steps:    int(math.Ceil(float64(30*time.Second) / float64(sc.opts.backoff))),
				Factor:   2,
				Jitter:   1,
			}
		}
		r := cache.NewReflectorWithOptions(upstreamLW{fake, sc.opts.unsupported}, &corev1.Pod{}, store, opts)
		r.WatchListPageSize = sc.opts.pageSize
		r.MaxInternalErrorRetryDuration = sc.opts.internalRetry
		if sc.opts.noShouldResync {
			r.ShouldResync = func() bool { return false }
		}
		r.RunWithContext(ctx)
		if ids := fake.unstopped(); len(ids) > 0 {
			t.Errorf("upstream: watchers %v were not stopped", ids)
		}
		var pods []*corev1.Pod
		for _, o := range store.List() {
			pods = append(pods, o.(*corev1.Pod))
		}
		res = scriptResult{trace: tr.String(), calls: fake.calls, store: storeContents(pods), rv: r.LastSyncResourceVersion()}
	})
	return res
}

// normalizeCalls checks that every watch timeout is in [min, 2×min] and
// drops it, since both reflectors pick it at random.
func normalizeCalls(t *testing.T, calls []call, minWatch time.Duration) []call {
	t.Helper()
	out := make([]call, len(calls))
	for i, c := range calls {
		if s := c.Opts.TimeoutSeconds; s != nil {
			if d := time.Duration(*s) * time.Second; d < minWatch || d > 2*minWatch {
				t.Errorf("call %d: watch timeout %v is outside [%v, %v]", i, d, minWatch, 2*minWatch)
			}
			c.Opts.TimeoutSeconds = nil
		}
		out[i] = c
	}
	return out
}

// TestReflectorScriptsMatchUpstream feeds every script to client-go's
// Reflector and ours, and compares the list and watch requests (with their
// options) and the final store contents.
//
// What is not compared, by design: the times of the requests (both add
// random jitter to backoff, and ours resets its backoff after a quiet
// period where client-go resets it every two minutes), the watch timeouts
// (random, checked to be in range instead), the errors reported (client-go
// logs most of them; ours reports each to the WatchErrorHandler), and
// scripts marked "upstream skip:", which use what client-go does not have.
func TestReflectorScriptsMatchUpstream(t *testing.T) {
	for _, path := range scriptFiles(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".txt")
		t.Run(name, func(t *testing.T) {
			sc := parseScript(t, path)
			if sc.upstream != "" {
				t.Skip(sc.upstream)
			}
			minWatch := max(sc.opts.minWatch, defaultMinWatchTimeout)
			ours := runScript(t, sc)
			theirs := runUpstream(t, sc)
			if diff := cmp.Diff(normalizeCalls(t, theirs.calls, minWatch), normalizeCalls(t, ours.calls, minWatch)); diff != "" {
				t.Errorf("requests differ (-upstream +ours):\n%s\nupstream trace:\n%s\nour trace:\n%s", diff, theirs.trace, ours.trace)
			}
			if theirs.store != ours.store {
				t.Errorf("store: upstream has %q, ours %q", theirs.store, ours.store)
			}
			if theirs.rv != ours.rv {
				t.Errorf("last sync resource version: upstream %q, ours %q", theirs.rv, ours.rv)
			}
		})
	}
}
