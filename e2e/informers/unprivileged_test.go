package informers

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestUnprivileged runs a Pod informer as an identity without RBAC rights. Every list and
// watch is Forbidden: the watch error handler is told so, the Reflector backs off between tries
// instead of looping, WaitForCacheSync returns at once with the Forbidden sync failure naming
// the informer, and Run returns when asked, without a panic or a goroutine left behind.
func TestUnprivileged(t *testing.T) {
	const observe = 10 * time.Second
	verifyNoGoroutinesLeft(t)
	ctx := testContext(t, time.Minute)
	ns := newNamespace(t, adminClients(t))
	var log kubetest.RequestLog
	cl := clientsFor(t, log.Wrap(srv.UnprivilegedConfig()))

	var mu sync.Mutex
	var watchErrs []error
	inf, err := informer.NewSharedIndexInformer(
		informer.ListWatchFromClient[corev1.Pod](cl.Kube.CoreV1().Pods(ns), nil),
		informer.SharedIndexInformerOptions[*corev1.Pod]{Name: "unprivileged-pods"})
	if err != nil {
		t.Fatal(err)
	}
	if err := inf.SetWatchErrorHandler(func(_ context.Context, err error) {
		mu.Lock()
		watchErrs = append(watchErrs, err)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	reg, err := inf.AddEventHandler(kubetest.NewMirror[*corev1.Pod]())
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	stop := kubetest.Start(ctx, inf)
	waitCtx, cancel := context.WithTimeout(ctx, observe)
	defer cancel()
	// WaitForCacheSync returns the informer's known sync failure at once, as
	// Factory.WaitForCacheSync does, rather than wait for its context.
	err = informer.WaitForCacheSync(waitCtx, inf, reg)
	waited := time.Since(start)
	switch {
	case err == nil:
		t.Fatal("WaitForCacheSync succeeded without the right to list pods")
	case !apierrors.IsForbidden(err) || !errors.Is(err, informer.ErrNotSynced):
		t.Errorf("WaitForCacheSync: %v, want an error wrapping informer.ErrNotSynced and Forbidden", err)
	case waitCtx.Err() != nil:
		t.Errorf("WaitForCacheSync returned after its context ended (%v), not when the list was forbidden", waited)
	case !strings.Contains(err.Error(), "unprivileged-pods"):
		t.Errorf("WaitForCacheSync: %q does not name the informer", err)
	}
	t.Logf("WaitForCacheSync after %v: %v", waited.Round(time.Millisecond), err)
	// The informer goes on retrying; watch its requests for the rest of the window.
	<-waitCtx.Done()
	elapsed := time.Since(start)
	if err := stop(30 * time.Second); err != nil {
		t.Error(err)
	}
	if inf.HasSynced() || reg.HasSynced() {
		t.Errorf("HasSynced: informer %t, handler %t; want false", inf.HasSynced(), reg.HasSynced())
	}

	mu.Lock()
	forbidden := 0
	for _, err := range watchErrs {
		if apierrors.IsForbidden(err) {
			forbidden++
		}
	}
	t.Logf("watch error handler: %d errors, %d Forbidden; first: %v", len(watchErrs), forbidden, watchErrs[0])
	mu.Unlock()
	if forbidden == 0 {
		t.Errorf("the watch error handler saw no Forbidden error")
	}

	// Backoff, not a hot loop: client-go's delays (800 ms, doubling, with up to 100% jitter)
	// allow a handful of rounds in 10 s, each a watch-list stream and its fallback LIST.
	reqs := log.Requests(func(r kubetest.Request) bool { return r.Resource() == "pods" })
	lists := log.Requests(func(r kubetest.Request) bool { return r.ListOf("pods") })
	for _, r := range reqs {
		if r.Status != 403 {
			t.Errorf("request %v, want 403 Forbidden", r)
		}
	}
	if len(lists) < 2 || len(reqs) > 12 {
		t.Errorf("%d requests (%d LISTs) in %v, want 2 to 12 LISTs and watches", len(reqs), len(lists), elapsed)
	}
	var gaps []time.Duration
	for i := 1; i < len(lists); i++ {
		gap := lists[i].Time.Sub(lists[i-1].Time)
		gaps = append(gaps, gap.Round(time.Millisecond))
		if gap < 700*time.Millisecond {
			t.Errorf("LIST %d came %v after the previous one, want a backoff of at least 800 ms", i, gap)
		}
	}
	t.Logf("%d requests, %d LISTs in %v; gaps between LISTs %v", len(reqs), len(lists), elapsed.Round(time.Millisecond), gaps)
}

// TestUnprivilegedFactory checks the Factory's side of it: WaitForCacheSync returns as soon as
// the server says Forbidden, long before its context ends, with an error wrapping
// informer.ErrNotSynced, informer.ErrSyncFailed and the Forbidden error, naming the informer;
// and Shutdown returns.
func TestUnprivilegedFactory(t *testing.T) {
	verifyNoGoroutinesLeft(t)
	ctx := testContext(t, time.Minute)
	ns := newNamespace(t, adminClients(t))
	f := newFactory(t, srv.UnprivilegedConfig(), ns, informer.FactoryOptions{})
	defer f.Shutdown()
	if _, err := informer.For[*corev1.Pod](f); err != nil {
		t.Fatal(err) // discovery is allowed to every authenticated user
	}
	f.Start(ctx)
	// Only the Forbidden answer can end this wait before the test's own deadline.
	synced, err := f.WaitForCacheSync(ctx)
	if !errors.Is(err, informer.ErrNotSynced) || !errors.Is(err, informer.ErrSyncFailed) || !apierrors.IsForbidden(err) ||
		errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "v1/pods") {
		t.Errorf("WaitForCacheSync: %v, want ErrNotSynced naming v1/pods, wrapping ErrSyncFailed and Forbidden, before the deadline", err)
	}
	if synced["v1/pods"] {
		t.Errorf("synced = %v", synced)
	}
	t.Logf("WaitForCacheSync: %v", err)
}
