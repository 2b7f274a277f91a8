package informers

import (
	"testing"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
