package informer

import (
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// convertingWatch passes the events of a watch through conv. Unlike
// apimachinery's watch.Filter, whose goroutine stays blocked on its send
// when the reader stops reading and calls Stop, its goroutine ends on Stop
// whether or not an event is waiting to be read.
type convertingWatch struct {
	in   watch.Interface
	out  chan watch.Event
	done chan struct{}
	stop sync.Once
}

func newConvertingWatch(in watch.Interface, conv func(watch.Event) watch.Event) *convertingWatch {
	w := &convertingWatch{in: in, out: make(chan watch.Event), done: make(chan struct{})}
	go w.run(conv)
	return w
}

func (w *convertingWatch) run(conv func(watch.Event) watch.Event) {
	defer close(w.out)
	for ev := range w.in.ResultChan() {
		select {
		case w.out <- conv(ev):
		case <-w.done:
			return
		}
	}
}

// ResultChan returns the converted events; it closes when the watch ends.
func (w *convertingWatch) ResultChan() <-chan watch.Event { return w.out }

// Stop stops the underlying watch and ends the goroutine, also while an
// event waits to be read.
func (w *convertingWatch) Stop() {
	w.stop.Do(func() {
		close(w.done)
		w.in.Stop()
	})
}
