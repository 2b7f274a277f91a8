// Package prometheus exports the Stats of informers to Prometheus: a
// Collector that reads each informer's Stats when it is scraped, with no
// globals and nothing on the informers' paths.
//
//	c := prometheus.NewCollector(pods, nodes) // *informer.SharedIndexInformer[T] of any T
//	registry.MustRegister(c)
//
// The metrics, labelled by the informer's name (and the handler's):
//
//	informer_queued_items               changes received, not yet applied (client-go's name)
//	informer_store_resource_version     the resource version the cache has applied (client-go's name)
//	informer_objects                    cached objects
//	informer_synced                     1 once synced
//	informer_lists_total                LISTs and watch-list streams
//	informer_relists_total              lists after the first (after a 410 Gone)
//	informer_list_errors_total          failed lists
//	informer_watches_total              watches started
//	informer_errors_total               errors the reflector reported
//	informer_decode_errors_total        objects the informer could not use
//	informer_handler_pending            a handler's backlog of notifications
//	informer_handler_lag_seconds        how long its oldest undelivered notification has waited
//	informer_handler_panics_total       its calls that panicked
package prometheus

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/typedkube/informer"
)

// StatsSource is what the Collector reads: every
// *informer.SharedIndexInformer[T] is one, whatever its T.
type StatsSource interface {
	Stats() informer.Stats
}

// Collector is a prometheus.Collector of the Stats of informers.
type Collector struct {
	mu      sync.Mutex
	sources []StatsSource
}

// NewCollector returns a Collector of sources; Add adds more.
func NewCollector(sources ...StatsSource) *Collector {
	return &Collector{sources: sources}
}

// Add adds informers to the collector, as a factory makes them.
func (c *Collector) Add(sources ...StatsSource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sources = append(c.sources, sources...)
}

// Remove stops collecting source, such as an informer removed from its
// factory.
func (c *Collector) Remove(source StatsSource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.sources {
		if s == source {
			c.sources = append(c.sources[:i:i], c.sources[i+1:]...)
			return
		}
	}
}

var (
	informerLabels = []string{"name"}
	handlerLabels  = []string{"name", "handler"}

	queuedItems     = prometheus.NewDesc("informer_queued_items", "Changes received from the API server and not yet applied to the cache.", informerLabels, nil)
	resourceVersion = prometheus.NewDesc("informer_store_resource_version", "The resource version the cache has applied, when it is a number.", informerLabels, nil)
	objects         = prometheus.NewDesc("informer_objects", "Objects in the cache.", informerLabels, nil)
	synced          = prometheus.NewDesc("informer_synced", "1 once the informer has synced, 0 before.", informerLabels, nil)
	lists           = prometheus.NewDesc("informer_lists_total", "LISTs and watch-list streams.", informerLabels, nil)
	relists         = prometheus.NewDesc("informer_relists_total", "Lists after the first, as after a 410 Gone.", informerLabels, nil)
	listErrors      = prometheus.NewDesc("informer_list_errors_total", "Lists that failed.", informerLabels, nil)
	watches         = prometheus.NewDesc("informer_watches_total", "Watches started.", informerLabels, nil)
	errorsTotal     = prometheus.NewDesc("informer_errors_total", "Errors the informer's reflector reported.", informerLabels, nil)
	decodeErrors    = prometheus.NewDesc("informer_decode_errors_total", "Objects the informer could not use: undecodable, of the wrong type, or refused by a transform or index.", informerLabels, nil)
	handlerPending  = prometheus.NewDesc("informer_handler_pending", "Notifications queued for a handler, not yet delivered.", handlerLabels, nil)
	handlerLag      = prometheus.NewDesc("informer_handler_lag_seconds", "How long a handler's oldest undelivered notification has waited.", handlerLabels, nil)
	handlerPanics   = prometheus.NewDesc("informer_handler_panics_total", "Calls of a handler that panicked.", handlerLabels, nil)
)

// Describe sends the descriptors of every metric.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{queuedItems, resourceVersion, objects, synced, lists, relists, listErrors,
		watches, errorsTotal, decodeErrors, handlerPending, handlerLag, handlerPanics} {
		ch <- d
	}
}

// Collect reads every informer's Stats and sends its metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	sources := append([]StatsSource(nil), c.sources...)
	c.mu.Unlock()
	for _, src := range sources {
		st := src.Stats()
		gauge := func(d *prometheus.Desc, v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
		}
		counter := func(d *prometheus.Desc, v uint64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), st.Name)
		}
		gauge(queuedItems, float64(st.QueueDepth), st.Name)
		if rv, err := strconv.ParseUint(st.ResourceVersion, 10, 64); err == nil {
			gauge(resourceVersion, float64(rv), st.Name)
		}
		gauge(objects, float64(st.Objects), st.Name)
		gauge(synced, boolValue(st.Synced), st.Name)
		counter(lists, st.Lists)
		counter(relists, st.Relists)
		counter(listErrors, st.ListErrors)
		counter(watches, st.Watches)
		counter(errorsTotal, st.Errors)
		counter(decodeErrors, st.DecodeErrors)
		for _, h := range st.Handlers {
			gauge(handlerPending, float64(h.Pending), st.Name, h.Name)
			gauge(handlerLag, h.Lag.Seconds(), st.Name, h.Name)
			ch <- prometheus.MustNewConstMetric(handlerPanics, prometheus.CounterValue, float64(h.Panics), st.Name, h.Name)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
