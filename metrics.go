package informer

import "time"

// Metrics is told, per informer, what a read of its Stats cannot give: how
// long each list, watch and batch of processing took, one call each, for
// histograms. Counters and gauges (lists, relists, watches, decode errors,
// queue depth, handler backlog and lag, the applied resource version) are
// in Stats, read when a metrics system scrapes; nothing else counts them.
//
// An informer makes its calls from its own goroutines, one at a time per
// method but not in step between methods: an implementation that keeps
// state must guard it. Calls must return quickly, as they sit on the
// informer's paths; they are made holding no lock of the informer.
//
// A nil Metrics (the default) costs a nil check: the informer then reads
// no clock for it.
//
// The module github.com/typedkube/informer/examples/prometheus implements
// it with Prometheus histograms.
type Metrics interface {
	// ObserveList is called after each list of the informer's Reflector
	// (a LIST with all its pages, or a watch-list stream up to the end of
	// its initial events) with the number of objects it returned, how long
	// it took and the error that ended it, nil on success. A list at a
	// resource version the server calls expired (410) is observed with
	// that error, and the list from "" that follows is observed again. A
	// watch-list stream that closed early and is asked for again, and a
	// list cut short by the informer stopping, are not observed.
	ObserveList(items int, d time.Duration, err error)
	// ObserveWatch is called when a watch ends, or fails to start, with
	// the number of events it brought (bookmarks included, refused
	// objects not), how long it ran and the error that ended it: nil when
	// it closed normally (the server's timeout) or the informer stopped.
	// The watch that follows a watch-list stream's initial events is
	// timed from the stream's end.
	ObserveWatch(events int, d time.Duration, err error)
	// ObserveProcessing is called after each batch of changes popped from
	// the informer's queue has been applied to the cache and handed to
	// the handlers' buffers (not through their calls), with the number of
	// changes in it (a relist is one) and how long that took: client-go's
	// informer_processing_latency_seconds. In QueueDeltaFIFO mode a batch
	// is the Deltas of one key.
	ObserveProcessing(changes int, d time.Duration)
}
