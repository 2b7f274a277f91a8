package informer

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// listCounter is a Metrics that counts the successful lists.
type listCounter struct{ lists atomic.Int64 }

func (c *listCounter) ObserveList(_ int, _ time.Duration, err error) {
	if err == nil {
		c.lists.Add(1)
	}
}
func (c *listCounter) ObserveWatch(int, time.Duration, error) {}
func (c *listCounter) ObserveProcessing(int, time.Duration)   {}

// A factory asks InformerOptions.Metrics for each informer's Metrics, by
// the informer's name, and the informer uses them.
func TestFactoryMetrics(t *testing.T) {
	srv := newFakeAPI(t, podsResource, configMapsResource)
	var mu sync.Mutex
	made := map[string]*listCounter{}
	f := newTestFactory(t, srv, FactoryOptions{Informer: InformerOptions{Metrics: func(name string) Metrics {
		mu.Lock()
		defer mu.Unlock()
		if name == "v1/configmaps" {
			return nil // no metrics for this one
		}
		c := &listCounter{}
		made[name] = c
		return c
	}}})
	pods, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	cms, err := For[*corev1.ConfigMap](f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := For[*corev1.Pod](f); err != nil { // the same informer: not asked again
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	mu.Lock()
	defer mu.Unlock()
	if len(made) != 1 || made["v1/pods"] == nil {
		t.Fatalf("Metrics made for %v, want v1/pods only", made)
	}
	if n := made["v1/pods"].lists.Load(); n != 1 {
		t.Errorf("pods: %d lists observed, want 1", n)
	}
	if pods.opts.Metrics != made["v1/pods"] || cms.opts.Metrics != nil {
		t.Errorf("informers' Metrics %v and %v, want the pods' counter and nil", pods.opts.Metrics, cms.opts.Metrics)
	}
}
