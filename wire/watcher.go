package wire

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
)

// watchBuffer is how many decoded events a watcher holds for its reader,
// so that decoding runs ahead instead of handing over each event.
const watchBuffer = 64

// streamWatcher is a watch.Interface over an event decoder. A reader that
// calls ResultChan gets events from a goroutine that decodes into a
// buffered channel until the stream ends or Stop; a reader that calls
// NextEvent instead (the informer's Reflector does) decodes each event in
// its own goroutine, and no goroutine is started. A reader uses one or the
// other.
type streamWatcher struct {
	dec     interface{ Close() }
	next    func() (watch.Event, error)
	result  chan watch.Event
	done    chan struct{}
	stop    sync.Once
	started sync.Once
	channed atomic.Bool // ResultChan was called: NextEvent reads the channel
	handoff atomic.Bool // NextEvent asks the goroutine to hand the stream over
	handed  atomic.Bool // the goroutine ended for the handoff, the stream open
	ended   bool        // NextEvent: the stream has ended
	// compressed: the server compressed the stream (see RecordEncoding);
	// http2: over HTTP/2.
	compressed, http2 bool
	// largeInitial, if set, reports whether the stream's initial events
	// were large objects (see ReplaceAfterInitialEvents).
	largeInitial func() bool
	// buffered, if set, reports whether the decoder holds received bytes
	// it has not decoded yet (see MoreBuffered).
	buffered func() bool
}

// MoreBuffered reports whether the next event has (at least in part)
// already been received, so that NextEvent would not wait for the
// network: the watch is in a burst. The informer's Reflector applies an
// event in its own goroutine only when it is not.
func (w *streamWatcher) MoreBuffered() bool {
	if w.channed.Load() {
		return len(w.result) > 0
	}
	return w.buffered != nil && w.buffered()
}

// ReplaceAfterInitialEvents reports whether the stream, once its initial
// events have come, is better replaced by a plain watch from the resource
// version they reached: the informer's Reflector then replaces it. The
// apiserver compresses a watch-list response, one event at a time (a gzip
// member each), when the client accepts gzip, and never a plain watch.
// Inflating a member costs the client about 5 µs however small the event;
// what it saves is the system calls of the bytes it does not receive, which
// over HTTP/2 are a flow-control write and a read or two for each 4 KiB.
// So a compressed stream is replaced, unless it came over HTTP/2 and its
// initial events' objects averaged largeObject bytes or more (protobuf;
// a JSON stream is replaced). Against a real apiserver, a realistic Pod's
// status update cost the client 9% less CPU on the compressed stream, a
// small ConfigMap's update 21% more, and over HTTP/1.1, where no
// flow-control writes are saved, a Pod's update no less (docs/benchmarks.md).
// The saving lasts as long as the stream: a reflector's later watches are
// plain ones, as client-go's are. It is false unless the request went
// through RecordEncoding, and before the initial events have ended it
// answers as for small objects.
func (w *streamWatcher) ReplaceAfterInitialEvents() bool {
	return w.compressed && !(w.http2 && w.largeInitial != nil && w.largeInitial())
}

// largeObject is the mean size, in bytes of protobuf, of the initial
// events' objects from which a compressed HTTP/2 stream is kept: the
// HTTP/2 server's writes and the client's flow-control refresh are both of
// 4 KiB, so a smaller event gains at most one system call from being
// compressed.
const largeObject = 4 << 10

// newStreamWatcher returns a watcher decoding with next, which returns the
// next event and closes nothing; close ends the stream.
func newStreamWatcher(next func() (watch.Event, error), close interface{ Close() }) *streamWatcher {
	return &streamWatcher{dec: close, next: next, result: make(chan watch.Event, watchBuffer), done: make(chan struct{})}
}

// ResultChan starts the decoding goroutine, once, and returns its channel.
func (w *streamWatcher) ResultChan() <-chan watch.Event {
	w.started.Do(func() {
		w.channed.Store(true)
		go w.receive()
	})
	return w.result
}

// NextEvent decodes the next event in the caller's goroutine. It returns
// false once the stream has ended or Stop was called; a stream that cannot
// be decoded ends with an ERROR event. After ResultChan (a reader that
// switched, such as the Reflector after a watch-list stream's initial
// events), it receives from the channel.
func (w *streamWatcher) NextEvent() (watch.Event, bool) {
	if w.channed.Load() {
		// Take the stream over: the goroutine ends before its next read,
		// after the events it has decoded, which come first.
		w.handoff.Store(true)
		if ev, ok := <-w.result; ok {
			return ev, true
		}
		if !w.handed.Load() {
			return watch.Event{}, false // the stream ended, or Stop
		}
		w.channed.Store(false)
	}
	if w.ended {
		return watch.Event{}, false
	}
	ev, err := w.next()
	if err == nil {
		return ev, true
	}
	w.ended = true
	select {
	case <-w.done: // Stop ended the read
		return watch.Event{}, false
	default:
	}
	w.Stop()
	if w.stopped(err) {
		return watch.Event{}, false
	}
	return w.errorEvent(err), true
}

// stopped reports whether err is the end of the stream (or of a
// connection), which ends a watch without an ERROR event.
func (w *streamWatcher) stopped(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err)
}

// errorEvent is the ERROR event reporting an undecodable stream.
func (w *streamWatcher) errorEvent(err error) watch.Event {
	return watch.Event{Type: watch.Error, Object: decodeErrors.AsObject(fmt.Errorf("unable to decode an event from the watch stream: %w", err))}
}

// Stop ends the stream; the channel closes once the goroutine has ended.
func (w *streamWatcher) Stop() {
	w.stop.Do(func() {
		close(w.done)
		w.dec.Close()
	})
}

var decodeErrors = apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding")

func (w *streamWatcher) receive() {
	defer close(w.result)
	for {
		if w.handoff.Load() {
			w.handed.Store(true) // NextEvent reads on; the stream stays open
			return
		}
		ev, err := w.next()
		select {
		case <-w.done: // stopped: nothing more, not even what was decoded
			return
		default:
		}
		if err != nil {
			// The end of the stream, a connection closed or timed out: the
			// channel closes and the reader watches again. Anything else is
			// reported as an ERROR event first.
			defer w.Stop()
			if w.stopped(err) {
				return
			}
			select {
			case <-w.done:
			case w.result <- w.errorEvent(err):
			}
			return
		}
		select {
		case <-w.done:
			return
		case w.result <- ev:
		}
	}
}
