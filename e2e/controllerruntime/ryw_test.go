package controllerruntime

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/typedkube/informer/controllerruntime/typedcache"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// slowWatches delays every read of a watch response by 2 ms, so that a cache lags its
// writer's writes as it would on a busy server.
type slowWatches struct{ rt http.RoundTripper }

func (s slowWatches) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.rt.RoundTrip(r)
	if err == nil && r.URL.Query().Get("watch") == "true" {
		resp.Body = slowBody{resp.Body}
	}
	return resp, err
}

type slowBody struct{ io.ReadCloser }

func (b slowBody) Read(p []byte) (int, error) {
	time.Sleep(2 * time.Millisecond) // the lag being injected, not a wait of the test
	return b.ReadCloser.Read(p)
}

// TestReadYourWrites reconciles parents the way a controller ensures a child: list the
// parent's children from the cache, create one (with a generated name) if there is none, and
// do it again at once, while the cache's watch lags. With read-your-writes, the second pass
// sees the first one's child: no parent gets two. It also reads an update and a delete back at
// once. It runs with typedcache.NewClient (waiting on the informers' applied resource version)
// and with controller-runtime's own consistent client over our cache (client.New, which
// registers an event handler per kind), and, for comparison only, without read-your-writes.
func TestReadYourWrites(t *testing.T) {
	ryw := func(c cache.Cache) client.CacheOptions {
		return client.CacheOptions{Reader: c, EnableReadYourWritesConsistency: ptr.To(true)}
	}
	for _, tc := range []struct {
		name      string
		newClient client.NewClientFunc
		opts      func(cache.Cache) client.CacheOptions
		strict    bool
	}{
		{"typedcache.NewClient", typedcache.NewClient, ryw, true},
		{"controller-runtime's consistent client", client.New, ryw, true},
		{"without read-your-writes", client.New, func(c cache.Cache) client.CacheOptions { return client.CacheOptions{Reader: c} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			admin := adminClients(t)
			ns, err := kubetest.NewNamespace(ctx, admin.Kube, "ryw")
			if err != nil {
				t.Fatal(err)
			}
			cfg := srv.AdminConfig()
			cfg.Host = srv.APIServerURL()
			slow := rest.CopyConfig(cfg)
			slow.Wrap(func(rt http.RoundTripper) http.RoundTripper { return slowWatches{rt} })
			scheme := newScheme()
			c, err := typedcache.New(slow, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
			if err != nil {
				t.Fatal(err)
			}
			cctx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- c.Start(cctx) }()
			defer func() { stop(); <-done }()
			co := tc.opts(c)
			cl, err := tc.newClient(cfg, client.Options{Scheme: scheme, Cache: &co})
			if err != nil {
				t.Fatal(err)
			}
			if err := cl.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)); err != nil {
				t.Fatal(err) // the informer, synced
			}
			var creates atomic.Int64
			ensure := func(parent int) error {
				var children corev1.ConfigMapList
				if err := cl.List(ctx, &children, client.InNamespace(ns), client.MatchingLabels{"parent": fmt.Sprint(parent)}); err != nil {
					return err
				}
				if len(children.Items) > 0 {
					return nil
				}
				creates.Add(1)
				return cl.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
					Namespace: ns, GenerateName: fmt.Sprintf("child-%d-", parent), Labels: map[string]string{"parent": fmt.Sprint(parent)},
				}})
			}
			const parents = 100
			for p := range parents {
				for range 2 {
					if err := ensure(p); err != nil {
						t.Fatal(err)
					}
				}
			}
			dups := creates.Load() - parents
			t.Logf("%d creates for %d parents: %d duplicates", creates.Load(), parents, dups)
			if !tc.strict {
				return
			}
			if dups != 0 {
				t.Errorf("%d duplicate children", dups)
			}
			// An update read back at once, then a delete.
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "readback"}, Data: map[string]string{"v": "0"}}
			if err := cl.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 20; i++ {
				cm.Data = map[string]string{"v": fmt.Sprint(i)}
				if err := cl.Update(ctx, cm); err != nil {
					t.Fatal(err)
				}
				var got corev1.ConfigMap
				if err := cl.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
					t.Fatal(err)
				}
				if got.Data["v"] != fmt.Sprint(i) {
					t.Fatalf("Get after update %d read %q", i, got.Data["v"])
				}
			}
			if err := cl.Delete(ctx, cm); err != nil {
				t.Fatal(err)
			}
			if err := cl.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
				t.Errorf("Get after delete = %v, want NotFound", err)
			}
		})
	}
}
