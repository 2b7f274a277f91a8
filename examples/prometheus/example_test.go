package prometheus_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedkube/informer"
	informerprom "github.com/typedkube/informer/examples/prometheus"
	"github.com/typedkube/informer/informertest"
)

// An informer's metrics served on /metrics.
func Example() {
	src := informertest.NewSource(pod("web-1"))
	pods, _ := informer.NewSharedIndexInformer[*corev1.Pod](src, informer.SharedIndexInformerOptions[*corev1.Pod]{Name: "v1/pods"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = pods.Run(ctx) }()
	_ = informer.WaitForCacheSync(ctx, pods)

	registry := prometheus.NewRegistry()
	registry.MustRegister(informerprom.NewCollector(pods))
	srv := httptest.NewServer(promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	srv.Close()
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "informer_objects") || strings.HasPrefix(line, "informer_synced") {
			fmt.Println(line)
		}
	}
	cancel()
	<-done
	// Output:
	// informer_objects{name="v1/pods"} 1
	// informer_synced{name="v1/pods"} 1
}
