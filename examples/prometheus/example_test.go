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
	collector := informerprom.NewCollector()
	src := informertest.NewSource(pod("web-1"))
	pods, _ := informer.NewSharedIndexInformer[*corev1.Pod](src, informer.SharedIndexInformerOptions[*corev1.Pod]{
		Name:    "v1/pods",
		Metrics: collector.Metrics("v1/pods"), // the histograms; a factory takes collector.Metrics
	})
	collector.Add(pods) // the Stats
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = pods.Run(ctx) }()
	_ = informer.WaitForCacheSync(ctx, pods)

	registry := prometheus.NewRegistry()
	registry.MustRegister(collector)
	srv := httptest.NewServer(promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	srv.Close()
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "informer_objects") || strings.HasPrefix(line, "informer_synced") ||
			strings.HasPrefix(line, "informer_list_duration_seconds_count") {
			fmt.Println(line)
		}
	}
	cancel()
	<-done
	// Output:
	// informer_list_duration_seconds_count{name="v1/pods"} 1
	// informer_objects{name="v1/pods"} 1
	// informer_synced{name="v1/pods"} 1
}
