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
//	informer_store_bytes                bytes the cache holds, estimated (see informer.Stats.StoreBytes)
//	informer_synced                     1 once synced
//	informer_lists_total                LISTs and watch-list streams
//	informer_relists_total              lists after the first (after a 410 Gone)
//	informer_list_errors_total          failed lists
//	informer_watches_total              watches started
//	informer_errors_total               errors the reflector reported
//	informer_decode_errors_total        objects the informer could not use
//	informer_shared_maps_written_total  maps cached objects share found written to (a bug of the program's)
//	informer_handler_pending            a handler's backlog of notifications
//	informer_handler_lag_seconds        how long its oldest undelivered notification has waited
//	informer_handler_panics_total       its calls that panicked
//
// Three histograms come from the informer's informer.Metrics, which
// Collector.Metrics makes (SharedIndexInformerOptions.Metrics, or
// InformerOptions.Metrics of a factory, which takes the method itself):
//
//	informer_processing_latency_seconds  applying a batch of changes to the cache and handing it to handlers (client-go's name)
//	informer_list_duration_seconds       a list, all pages or a watch-list stream's initial events
//	informer_watch_duration_seconds      a watch, from its request to its end
package prometheus

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/typedkube/informer"
)

// StatsSource is what the Collector reads: every
// *informer.SharedIndexInformer[T] is one, whatever its T.
type StatsSource interface {
	Stats() informer.Stats
}

// Collector is a prometheus.Collector of the Stats of informers, and of
// the durations their Metrics observe.
type Collector struct {
	mu      sync.Mutex // guards sources
	sources []StatsSource

	processing, list, watch *prometheus.HistogramVec
}

// NewCollector returns a Collector of sources; Add adds more.
func NewCollector(sources ...StatsSource) *Collector {
	histogram := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: durationBuckets}, informerLabels)
	}
	return &Collector{
		sources:    sources,
		processing: histogram("informer_processing_latency_seconds", "Time taken to apply a batch of changes popped from the queue to the cache and hand it to the handlers."),
		list:       histogram("informer_list_duration_seconds", "Time taken by a list: a LIST with all its pages, or a watch-list stream's initial events."),
		watch:      histogram("informer_watch_duration_seconds", "How long a watch ran, from its request to its end."),
	}
}

// durationBuckets span 1 ms to about 17 min, by factors of 4: processing
// takes milliseconds, a list seconds, a watch minutes.
var durationBuckets = prometheus.ExponentialBuckets(0.001, 4, 11)

// Metrics returns the informer.Metrics of the informer name, which feed
// the Collector's histograms. Its signature is that of
// informer.InformerOptions.Metrics, so a factory takes c.Metrics as it is.
func (c *Collector) Metrics(name string) informer.Metrics {
	return observer{
		processing: c.processing.WithLabelValues(name),
		list:       c.list.WithLabelValues(name),
		watch:      c.watch.WithLabelValues(name),
	}
}

// observer is the informer.Metrics of one informer.
type observer struct{ processing, list, watch prometheus.Observer }

func (o observer) ObserveList(_ int, d time.Duration, _ error)  { o.list.Observe(d.Seconds()) }
func (o observer) ObserveWatch(_ int, d time.Duration, _ error) { o.watch.Observe(d.Seconds()) }
func (o observer) ObserveProcessing(_ int, d time.Duration)     { o.processing.Observe(d.Seconds()) }

// Add adds informers to the collector, as a factory makes them.
func (c *Collector) Add(sources ...StatsSource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sources = append(c.sources, sources...)
}

// Remove stops collecting source, such as an informer removed from its
// factory, and drops the histograms of its name.
func (c *Collector) Remove(source StatsSource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.sources {
		if s == source {
			c.sources = append(c.sources[:i:i], c.sources[i+1:]...)
			name := source.Stats().Name
			for _, h := range []*prometheus.HistogramVec{c.processing, c.list, c.watch} {
				h.DeleteLabelValues(name)
			}
			return
		}
	}
}

var (
	informerLabels = []string{"name"}
	handlerLabels  = []string{"name", "handler"}

	queuedItems     = prometheus.NewDesc("informer_queued_items", "Changes received from the API server and not yet applied to the cache.", informerLabels, nil)
	resourceVersion = prometheus.NewDesc("informer_store_resource_version", "The 15 least significant digits of the resource version the cache has applied, when it is a number.", informerLabels, nil)
	objects         = prometheus.NewDesc("informer_objects", "Objects in the cache.", informerLabels, nil)
	storeBytes      = prometheus.NewDesc("informer_store_bytes", "Heap bytes the cache holds, estimated: its objects, their keys and indexes, and what they share, once.", informerLabels, nil)
	synced          = prometheus.NewDesc("informer_synced", "1 once the informer has synced, 0 before.", informerLabels, nil)
	lists           = prometheus.NewDesc("informer_lists_total", "LISTs and watch-list streams.", informerLabels, nil)
	relists         = prometheus.NewDesc("informer_relists_total", "Lists after the first, as after a 410 Gone.", informerLabels, nil)
	listErrors      = prometheus.NewDesc("informer_list_errors_total", "Lists that failed.", informerLabels, nil)
	watches         = prometheus.NewDesc("informer_watches_total", "Watches started.", informerLabels, nil)
	errorsTotal     = prometheus.NewDesc("informer_errors_total", "Errors the informer's reflector reported.", informerLabels, nil)
	decodeErrors    = prometheus.NewDesc("informer_decode_errors_total", "Objects the informer could not use: undecodable, of the wrong type, or refused by a transform.", informerLabels, nil)
	mapsWritten     = prometheus.NewDesc("informer_shared_maps_written_total", "Maps cached objects share that were found written to, which objects handed out must never be: a bug in the program (see informer.Stats.SharedMapsWritten).", informerLabels, nil)
	handlerPending  = prometheus.NewDesc("informer_handler_pending", "Notifications queued for a handler, not yet delivered.", handlerLabels, nil)
	handlerLag      = prometheus.NewDesc("informer_handler_lag_seconds", "How long a handler's oldest undelivered notification has waited.", handlerLabels, nil)
	handlerPanics   = prometheus.NewDesc("informer_handler_panics_total", "Calls of a handler that panicked.", handlerLabels, nil)
)

// Describe sends the descriptors of every metric.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{queuedItems, resourceVersion, objects, storeBytes, synced, lists, relists, listErrors,
		watches, errorsTotal, decodeErrors, mapsWritten, handlerPending, handlerLag, handlerPanics} {
		ch <- d
	}
	c.processing.Describe(ch)
	c.list.Describe(ch)
	c.watch.Describe(ch)
}

// Collect reads every informer's Stats and sends its metrics, then the
// histograms. Names that repeat (two informers of one name, or two handlers
// of one informer with the default name, their type) are told apart by a
// suffix in the order they come, "#2", "#3": one series each, where
// duplicates would fail the whole scrape. The histograms of informers of
// one name share their series.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.processing.Collect(ch)
	c.list.Collect(ch)
	c.watch.Collect(ch)
	c.mu.Lock()
	sources := append([]StatsSource(nil), c.sources...)
	c.mu.Unlock()
	informers := distinct{}
	for _, src := range sources {
		st := src.Stats()
		st.Name = informers.name(st.Name)
		handlers := distinct{}
		gauge := func(d *prometheus.Desc, v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
		}
		counter := func(d *prometheus.Desc, v uint64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), st.Name)
		}
		gauge(queuedItems, float64(st.QueueDepth), st.Name)
		if rv, ok := resourceVersionValue(st.ResourceVersion); ok {
			gauge(resourceVersion, rv, st.Name)
		}
		gauge(objects, float64(st.Objects), st.Name)
		gauge(storeBytes, float64(st.StoreBytes), st.Name)
		gauge(synced, boolValue(st.Synced), st.Name)
		counter(lists, st.Lists)
		counter(relists, st.Relists)
		counter(listErrors, st.ListErrors)
		counter(watches, st.Watches)
		counter(errorsTotal, st.Errors)
		counter(decodeErrors, st.DecodeErrors)
		counter(mapsWritten, st.SharedMapsWritten)
		for _, h := range st.Handlers {
			h.Name = handlers.name(h.Name)
			gauge(handlerPending, float64(h.Pending), st.Name, h.Name)
			gauge(handlerLag, h.Lag.Seconds(), st.Name, h.Name)
			ch <- prometheus.MustNewConstMetric(handlerPanics, prometheus.CounterValue, float64(h.Panics), st.Name, h.Name)
		}
	}
}

// distinct makes label values unique in the order they come.
type distinct map[string]bool

// name returns n the first time, then n#2, n#3 and so on: the first of
// them not given yet.
func (d distinct) name(n string) string {
	out := n
	for k := 2; d[out]; k++ {
		out = n + "#" + strconv.Itoa(k)
	}
	d[out] = true
	return out
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// resourceVersionValue returns the number that the 15 least significant
// digits of rv make, as client-go's informer_store_resource_version does,
// which a float64 holds exactly; false if rv is not a decimal number.
func resourceVersionValue(rv string) (float64, bool) {
	if rv == "" {
		return 0, false
	}
	for _, c := range []byte(rv) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	rv = rv[max(0, len(rv)-15):]
	n, err := strconv.ParseUint(rv, 10, 64)
	return float64(n), err == nil
}
