package informers

import (
	"context"
	"testing"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// With FactoryOptions.WatchHTTP1, the factory's watches go over HTTP/1.1 and its other requests
// over HTTP/2, and the informer works as over one HTTP/2 connection: it syncs, sees an update,
// and leaves no goroutine behind when the factory shuts down.
func TestFactoryWatchHTTP1(t *testing.T) {
	verifyNoGoroutinesLeft(t)
	ctx := testContext(t, 2*time.Minute)
	admin := adminClients(t)
	ns := newNamespace(t, admin)
	createConfigMaps(t, ctx, admin, ns, 5)

	var log kubetest.RequestLog
	f := newFactory(t, log.Wrap(srv.AdminConfig()), ns, informer.FactoryOptions{WatchHTTP1: true})
	t.Cleanup(f.Shutdown)
	cms, err := informer.For[*corev1.ConfigMap](f)
	if err != nil {
		t.Fatal(err)
	}
	updated := make(chan string, 16)
	if _, err := cms.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.ConfigMap]{
		UpdateFunc: func(_, cm *corev1.ConfigMap) { updated <- cm.Name + "=" + cm.Data["i"] },
	}); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx)
	if synced, err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatalf("WaitForCacheSync: %v (%v)", err, synced)
	}
	if n := cms.GetIndexer().Len(); n != 5 {
		t.Errorf("ConfigMaps cached: %d, want 5", n)
	}
	cm, err := admin.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "cm-0002", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["i"] = "changed"
	if _, err := admin.Kube.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-updated:
		if got != "cm-0002=changed" {
			t.Errorf("update %q, want cm-0002=changed", got)
		}
	case <-ctx.Done():
		t.Fatalf("no update of cm-0002 came: %v", ctx.Err())
	}
	f.Shutdown()

	reqs := log.Requests(nil)
	watches, wrong := kubetest.WatchesOverHTTP1(reqs)
	if watches == 0 {
		t.Fatal("no watch request recorded")
	}
	for _, w := range wrong {
		t.Error(w)
	}
	t.Logf("%d watches over HTTP/1.1, %d other requests over HTTP/2", watches, len(reqs)-watches)
}

// With WatchHTTP1, a watch whose connection goes silent (a partition, a server that hangs: the
// connection stays open and nothing comes) ends once its reader has waited
// WatchHTTP1IdleTimeout for a byte, and the informer watches again on a new connection from the
// resource version it had: it sees what was written meanwhile, with no relist. Without the idle
// timeout nothing would end that watch (its connection answers TCP keep-alive) until the
// watch's own timeout, minutes later.
func TestFactoryWatchHTTP1IdleTimeout(t *testing.T) {
	verifyNoGoroutinesLeft(t)
	ctx := testContext(t, 2*time.Minute)
	admin := adminClients(t)
	ns := newNamespace(t, admin)
	createConfigMaps(t, ctx, admin, ns, 3)

	var dialer kubetest.StallingDialer
	t.Cleanup(dialer.CloseAll)
	cfg := srv.AdminConfig()
	cfg.Dial = dialer.Dial
	var log kubetest.RequestLog
	f := newFactory(t, log.Wrap(cfg), ns, informer.FactoryOptions{WatchHTTP1: true, WatchHTTP1IdleTimeout: 5 * time.Second})
	t.Cleanup(f.Shutdown)
	cms, err := informer.For[*corev1.ConfigMap](f)
	if err != nil {
		t.Fatal(err)
	}
	added := make(chan string, 16)
	if _, err := cms.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.ConfigMap]{
		AddFunc: func(cm *corev1.ConfigMap, initial bool) {
			if !initial {
				added <- cm.Name
			}
		},
	}); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx)
	if synced, err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatalf("WaitForCacheSync: %v (%v)", err, synced)
	}
	// The watch-list stream that synced the cache gives way to a plain watch (see the
	// reflector); the connection to silence is that watch's.
	if err := kubetest.WaitPlainWatch(ctx, &log, "configmaps"); err != nil {
		t.Fatal(err)
	}
	stalled := dialer.Stall()
	if _, err := admin.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "after-stall"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case name := <-added:
		if name != "after-stall" {
			t.Errorf("added %q, want after-stall", name)
		}
	case <-ctx.Done():
		t.Fatalf("the ConfigMap created after %d connections went silent was not seen: the silent watch did not end (%v)", stalled, ctx.Err())
	}
	f.Shutdown()

	reqs := log.Requests(nil)
	var lists, watches int
	for _, r := range reqs {
		switch {
		case r.ListOf("configmaps") || r.WatchList():
			lists++
		case r.WatchOf("configmaps"):
			watches++
		}
	}
	if lists != 1 {
		t.Errorf("%d lists of the ConfigMaps, want the first alone: the watch was not started again from its resource version", lists)
	}
	t.Logf("%d connections made silent; %d watches, %d list", stalled, watches, lists)
}

// With WatchHTTP1, a watch request on a connection whose server completes the TLS handshake and
// then answers nothing is canceled once it has waited WatchHTTP1IdleTimeout for its response (no
// TLS handshake timeout covers it, and TCP keep-alive is answered), and the informer lists and
// watches again: it sees what was written meanwhile. Without that timeout the request would wait
// for ever.
func TestFactoryWatchHTTP1RequestTimeout(t *testing.T) {
	verifyNoGoroutinesLeft(t)
	ctx := testContext(t, 3*time.Minute)
	admin := adminClients(t)
	ns := newNamespace(t, admin)
	createConfigMaps(t, ctx, admin, ns, 3)

	var dialer kubetest.StallingDialer
	t.Cleanup(dialer.CloseAll)
	cfg := srv.AdminConfig()
	cfg.Dial = dialer.Dial
	var log kubetest.RequestLog
	f := newFactory(t, log.Wrap(cfg), ns, informer.FactoryOptions{WatchHTTP1: true, WatchHTTP1IdleTimeout: 5 * time.Second})
	t.Cleanup(f.Shutdown)
	cms, err := informer.For[*corev1.ConfigMap](f)
	if err != nil {
		t.Fatal(err)
	}
	added := make(chan string, 16)
	if _, err := cms.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.ConfigMap]{
		AddFunc: func(cm *corev1.ConfigMap, _ bool) { added <- cm.Name },
	}); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx)
	if synced, err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatalf("WaitForCacheSync: %v (%v)", err, synced)
	}
	if err := kubetest.WaitPlainWatch(ctx, &log, "configmaps"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		<-added // the listed ones
	}
	// The watch's connection goes silent, so its idle timeout ends it; the next watch request
	// goes over a new connection, which stalls once its handshake is done.
	dialer.StallAfterHandshake(true)
	stalled := dialer.Stall()
	failed := func(r kubetest.Request) bool { return r.WatchOf("configmaps") && r.Err != nil }
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return log.Count(failed) > 0, nil
	}); err != nil {
		t.Fatalf("no watch request failed after %d connections went silent: a request that got no response was not canceled (%v)", stalled, err)
	}
	dialer.StallAfterHandshake(false)
	if _, err := admin.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "after-stall"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case name := <-added:
			if name == "after-stall" {
				t.Logf("%d connections made silent; %d watch requests failed", stalled, log.Count(failed))
				return
			}
		case <-ctx.Done():
			t.Fatalf("the ConfigMap created after the canceled watch request was not seen: %v", ctx.Err())
		}
	}
}
