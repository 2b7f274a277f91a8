package wire

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
)

// watchBuffer is how many decoded events a watcher holds for its reader,
// so that decoding runs ahead instead of handing over each event.
const watchBuffer = 64

// streamWatcher is a watch.Interface over an event decoder: one goroutine
// decodes events into a buffered channel until the stream ends or Stop.
type streamWatcher struct {
	dec    interface{ Close() }
	result chan watch.Event
	done   chan struct{}
	stop   sync.Once
}

// newStreamWatcher starts decoding with next, which returns the next event
// and closes nothing; close ends the stream.
func newStreamWatcher(next func() (watch.Event, error), close interface{ Close() }) *streamWatcher {
	w := &streamWatcher{dec: close, result: make(chan watch.Event, watchBuffer), done: make(chan struct{})}
	go w.receive(next)
	return w
}

func (w *streamWatcher) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the stream; the channel closes once the goroutine has ended.
func (w *streamWatcher) Stop() {
	w.stop.Do(func() {
		close(w.done)
		w.dec.Close()
	})
}

var decodeErrors = apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding")

func (w *streamWatcher) receive(next func() (watch.Event, error)) {
	defer close(w.result)
	defer w.Stop()
	for {
		ev, err := next()
		if err != nil {
			// The end of the stream, a connection closed or timed out: the
			// channel closes and the reader watches again. Anything else is
			// reported as an ERROR event first.
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err) {
				return
			}
			select {
			case <-w.done:
			case w.result <- watch.Event{Type: watch.Error, Object: decodeErrors.AsObject(fmt.Errorf("unable to decode an event from the watch stream: %w", err))}:
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
