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

// timeoutFixture is what the tests of WatchHTTP1's timeouts share: a namespace with 3
// ConfigMaps; a factory with WatchHTTP1 and a 5 s idle timeout whose connections a
// StallingDialer makes and whose requests a RequestLog records; its ConfigMap informer, synced
// and on the plain watch that follows its watch-list (the connection to silence is that
// watch's); and the names of the ConfigMaps it adds after the listed ones.
type timeoutFixture struct {
	admin  *kubetest.Clients
	ns     string
	f      *informer.Factory
	dialer kubetest.StallingDialer
	log    kubetest.RequestLog
	added  chan string
}

func newTimeoutFixture(t *testing.T, ctx context.Context) *timeoutFixture {
	t.Helper()
	x := &timeoutFixture{admin: adminClients(t), added: make(chan string, 16)}
	x.ns = newNamespace(t, x.admin)
	createConfigMaps(t, ctx, x.admin, x.ns, 3)
	t.Cleanup(x.dialer.CloseAll)
	cfg := srv.AdminConfig()
	cfg.Dial = x.dialer.Dial
	x.f = newFactory(t, x.log.Wrap(cfg), x.ns, informer.FactoryOptions{WatchHTTP1: true, WatchHTTP1IdleTimeout: 5 * time.Second})
	t.Cleanup(x.f.Shutdown)
	cms, err := informer.For[*corev1.ConfigMap](x.f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.ConfigMap]{
		AddFunc: func(cm *corev1.ConfigMap, initial bool) {
			if !initial {
				x.added <- cm.Name
			}
		},
	}); err != nil {
		t.Fatal(err)
	}
	x.f.Start(ctx)
	if synced, err := x.f.WaitForCacheSync(ctx); err != nil {
		t.Fatalf("WaitForCacheSync: %v (%v)", err, synced)
	}
	if err := kubetest.WaitPlainWatch(ctx, &x.log, "configmaps"); err != nil {
		t.Fatal(err)
	}
	return x
}

// createAfterStall creates the ConfigMap after-stall.
func (x *timeoutFixture) createAfterStall(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := x.admin.Kube.CoreV1().ConfigMaps(x.ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "after-stall"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
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
	x := newTimeoutFixture(t, ctx)
	stalled := x.dialer.Stall()
	x.createAfterStall(t, ctx)
	select {
	case name := <-x.added:
		if name != "after-stall" {
			t.Errorf("added %q, want after-stall", name)
		}
	case <-ctx.Done():
		t.Fatalf("the ConfigMap created after %d connections went silent was not seen: the silent watch did not end (%v)", stalled, ctx.Err())
	}
	x.f.Shutdown()

	reqs := x.log.Requests(nil)
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
	x := newTimeoutFixture(t, ctx)
	// The watch's connection goes silent, so its idle timeout ends it; the next watch request
	// goes over a new connection, which stalls once its handshake is done.
	x.dialer.StallAfterHandshake(true)
	stalled := x.dialer.Stall()
	failed := func(r kubetest.Request) bool { return r.WatchOf("configmaps") && r.Err != nil }
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return x.log.Count(failed) > 0, nil
	}); err != nil {
		t.Fatalf("no watch request failed after %d connections went silent: a request that got no response was not canceled (%v)", stalled, err)
	}
	x.dialer.StallAfterHandshake(false)
	x.createAfterStall(t, ctx)
	for {
		select {
		case name := <-x.added:
			if name == "after-stall" {
				t.Logf("%d connections made silent; %d watch requests failed", stalled, x.log.Count(failed))
				return
			}
		case <-ctx.Done():
			t.Fatalf("the ConfigMap created after the canceled watch request was not seen: %v", ctx.Err())
		}
	}
}
