package controllerruntime

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/typedkube/informer/controllerruntime/typedcache"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// typedcache with WatchHTTP1 and WatchHTTP1IdleTimeout: a watch whose connection goes silent
// (it stays open, nothing comes) ends once it has waited the idle timeout for a byte, and the
// cache watches again from where it was, on a new connection: a ConfigMap created meanwhile is
// read from the cache, with no relist.
func TestCacheWatchHTTP1IdleTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	admin := adminClients(t)
	ns, err := kubetest.NewNamespace(ctx, admin.Kube, "idle")
	if err != nil {
		t.Fatal(err)
	}
	var dialer kubetest.StallingDialer
	defer dialer.CloseAll()
	cfg := srv.AdminConfig()
	cfg.Dial = dialer.Dial
	var log kubetest.RequestLog
	c, err := typedcache.NewWith(typedcache.Options{WatchHTTP1: true, WatchHTTP1IdleTimeout: 5 * time.Second})(
		log.Wrap(cfg), cache.Options{Scheme: newScheme(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(cctx) }()
	halt := sync.OnceValue(func() error { stop(); return <-done })
	defer halt()
	if _, err := c.GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	// The watch-list stream that synced the cache gives way to a plain watch; the connection
	// to silence is that watch's.
	if err := kubetest.WaitPlainWatch(ctx, &log, "configmaps"); err != nil {
		t.Fatal(err)
	}
	stalled := dialer.Stall()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "after-stall"}}
	if _, err := admin.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		return c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}) == nil, nil
	}); err != nil {
		t.Fatalf("the ConfigMap created after %d connections went silent is not in the cache: the silent watch did not end (%v)", stalled, err)
	}
	if err := halt(); err != nil {
		t.Errorf("the cache: %v", err)
	}
	lists := log.Count(func(r kubetest.Request) bool { return r.ListOf("configmaps") || r.WatchList() })
	if lists != 1 {
		t.Errorf("%d lists of the ConfigMaps, want the first alone: the watch was not started again from its resource version", lists)
	}
	t.Logf("%d connections made silent; %d watches, %d list", stalled, log.Count(kubetest.PlainWatchOf("configmaps")), lists)
}
