package informer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// scriptResult is what a run of a script produced.
type scriptResult struct {
	trace string
	calls []call
	store string // sorted NAME@RV
	rv    string
}

// runScript runs our Reflector against the script sc, in a synctest
// bubble, until the script ends, and returns its trace.
func runScript(t *testing.T, sc *script) scriptResult {
	t.Helper()
	var res scriptResult
	synctest.Test(t, func(t *testing.T) {
		tr := newTracer()
		ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logr.Discard()))
		defer cancel()
		fake := newFakeLW(sc, tr, cancel)
		var lw ListerWatcher[*corev1.Pod] = fake
		if sc.opts.unsupported {
			lw = WithoutWatchList(lw)
		}
		store := &recordingStore{Store: NewStore(MetaNamespaceKeyFunc[*corev1.Pod]), tr: tr}
		opts := ReflectorOptions{
			ResyncPeriod:       sc.opts.resync,
			MinWatchTimeout:    sc.opts.minWatch,
			PageSize:           sc.opts.pageSize,
			WatchList:          sc.opts.watchList,
			InternalErrorRetry: sc.opts.internalRetry,
			Backoff:            Backoff{Initial: sc.opts.backoff},
			WatchErrorHandler: func(_ context.Context, err error) {
				tr.logf("error: %v", err)
			},
		}
		if sc.opts.noShouldResync {
			opts.ShouldResync = func() bool {
				tr.logf("should resync? no")
				return false
			}
		}
		r, err := NewReflector(lw, store, opts)
		if err != nil {
			t.Fatal(err)
		}
		r.random = rand.New(rand.NewPCG(1, 2)).Float64
		err = r.Run(ctx)
		tr.logf("run returned %v", err)
		if ids := fake.unstopped(); len(ids) > 0 {
			t.Errorf("watchers %v were not stopped", ids)
		}
		res = scriptResult{
			trace: tr.String(),
			calls: fake.calls,
			store: storeContents(store.List()),
			rv:    r.LastSyncResourceVersion(),
		}
		res.trace += fmt.Sprintf("store: %s\nlast sync rv: %q\n", res.store, res.rv)
	})
	return res
}

func scriptFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/reflector/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	return files
}

// TestReflectorScripts runs every script and compares the trace with the
// one recorded in the script (rewritten with -update).
func TestReflectorScripts(t *testing.T) {
	for _, path := range scriptFiles(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".txt")
		t.Run(name, func(t *testing.T) {
			sc := parseScript(t, path)
			got := runScript(t, sc).trace
			if *update {
				if err := os.WriteFile(path, []byte(sc.body+wantMarker+got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(sc.want, got); diff != "" {
				t.Errorf("trace differs from %s (-want +got); run with -update to accept:\n%s", path, diff)
			}
		})
	}
}
