package informers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var podTemplatesGVR = corev1.SchemeGroupVersion.WithResource("podtemplates")

// TestPagedList lists 2,000 PodTemplates in pages of 500. The harness serves PodTemplates from
// etcd, not from the watch cache, so the first list (at resource version "0", which the watch
// cache would answer whole) comes back in pages, as from a server without a watch cache.
func TestPagedList(t *testing.T) {
	const n, pageSize = 2000, 500
	verifyNoGoroutinesLeft(t)
	ctx := testContext(t, 2*time.Minute)
	var log kubetest.RequestLog
	cl := clientsFor(t, log.Wrap(srv.AdminConfig()))
	check := adminClients(t)
	ns := newNamespace(t, check)
	start := time.Now()
	if err := kubetest.Parallel(ctx, n, 8, func(ctx context.Context, i int) error {
		_, err := check.Kube.CoreV1().PodTemplates(ns).Create(ctx, &corev1.PodTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("tmpl-%04d", i)},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Image: podImage}},
			}},
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("created %d PodTemplates in %v", n, time.Since(start).Round(time.Millisecond))

	inf, err := informer.NewSharedIndexInformer(
		informer.ListWatchFromClient[corev1.PodTemplate](cl.Kube.CoreV1().PodTemplates(ns), nil),
		informer.SharedIndexInformerOptions[*corev1.PodTemplate]{
			Reflector: informer.ReflectorOptions{WatchList: informer.WatchListOff},
		})
	if err != nil {
		t.Fatal(err)
	}
	stop := kubetest.Start(ctx, inf)
	defer func() {
		if err := stop(30 * time.Second); err != nil {
			t.Error(err)
		}
	}()
	if err := informer.WaitForCacheSync(testContext(t, 30*time.Second), inf); err != nil {
		t.Fatal(err)
	}

	lists := log.Requests(func(r kubetest.Request) bool { return r.ListOf("podtemplates") })
	if len(lists) != n/pageSize {
		t.Fatalf("%d LIST requests, want %d pages of %d:\n%v", len(lists), n/pageSize, pageSize, lists)
	}
	for i, r := range lists {
		if got := r.Query.Get("limit"); got != fmt.Sprint(pageSize) {
			t.Errorf("page %d: limit=%q, want %d", i, got, pageSize)
		}
		if hasContinue := r.Query.Get("continue") != ""; hasContinue != (i > 0) {
			t.Errorf("page %d: continue token %t, want %t", i, hasContinue, i > 0)
		}
		if i == 0 && r.Query.Get("resourceVersion") != "0" {
			t.Errorf("first page at resourceVersion %q, want 0", r.Query.Get("resourceVersion"))
		}
	}
	if got := inf.GetIndexer().Len(); got != n {
		t.Errorf("cache holds %d PodTemplates, want %d", got, n)
	}
	if _, err := kubetest.WaitConverged(ctx, 30*time.Second, kubetest.MetadataLister(check.Metadata, ns),
		kubetest.Cache{Name: "cache", GVR: podTemplatesGVR, State: func() kubetest.State { return kubetest.CacheState(inf) }},
	); err != nil {
		t.Fatal(err)
	}
}
