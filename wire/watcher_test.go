package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// scriptedStream hands out events, then err; Close makes a blocked next
// return io.ErrClosedPipe, as closing a response body does.
type scriptedStream struct {
	mu     sync.Mutex
	events []watch.Event
	err    error // after the events; nil blocks until Close
	closed chan struct{}
	once   sync.Once
}

func newScriptedStream(err error, events ...watch.Event) *scriptedStream {
	return &scriptedStream{events: events, err: err, closed: make(chan struct{})}
}

func (s *scriptedStream) next() (watch.Event, error) {
	s.mu.Lock()
	if len(s.events) > 0 {
		ev := s.events[0]
		s.events = s.events[1:]
		s.mu.Unlock()
		return ev, nil
	}
	s.mu.Unlock()
	if s.err != nil {
		return watch.Event{}, s.err
	}
	<-s.closed
	return watch.Event{}, io.ErrClosedPipe
}

func (s *scriptedStream) Close() { s.once.Do(func() { close(s.closed) }) }

func bookmark(rv string) watch.Event {
	return watch.Event{Type: watch.Bookmark, Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}}
}

// TestStreamWatcherNextEvent: pulled events come in order; the end of the
// stream ends it quietly, an undecodable stream with one ERROR event, Stop
// during a blocked read quietly; after ResultChan, NextEvent reads the
// channel, so a reader may switch once; no goroutine is started for a
// reader that only pulls.
func TestStreamWatcherNextEvent(t *testing.T) {
	s := newScriptedStream(io.EOF, bookmark("1"), bookmark("2"))
	w := newStreamWatcher(s.next, s)
	for _, want := range []string{"1", "2"} {
		ev, ok := w.NextEvent()
		if !ok || ev.Object.(*metav1.PartialObjectMetadata).ResourceVersion != want {
			t.Fatalf("NextEvent = %v, %v; want the bookmark at %s", ev, ok, want)
		}
	}
	if ev, ok := w.NextEvent(); ok {
		t.Errorf("after EOF: %v", ev)
	}
	if _, ok := w.NextEvent(); ok {
		t.Error("a second call after the end returned an event")
	}

	s = newScriptedStream(errors.New("bad frame"))
	w = newStreamWatcher(s.next, s)
	if ev, ok := w.NextEvent(); !ok || ev.Type != watch.Error {
		t.Errorf("undecodable: %v, %v; want one ERROR event", ev, ok)
	}
	if _, ok := w.NextEvent(); ok {
		t.Error("an event after the ERROR event")
	}

	s = newScriptedStream(nil)
	w = newStreamWatcher(s.next, s)
	go func() { time.Sleep(20 * time.Millisecond); w.Stop() }()
	if ev, ok := w.NextEvent(); ok {
		t.Errorf("Stop during a read: %v, want the end", ev)
	}

	s = newScriptedStream(nil, bookmark("1"), bookmark("2"))
	w = newStreamWatcher(s.next, s)
	if ev := <-w.ResultChan(); ev.Type != watch.Bookmark {
		t.Fatalf("ResultChan: %v", ev)
	}
	if ev, ok := w.NextEvent(); !ok || ev.Object.(*metav1.PartialObjectMetadata).ResourceVersion != "2" {
		t.Errorf("NextEvent after ResultChan = %v, %v; want the next from the channel", ev, ok)
	}
	w.Stop()
	if _, ok := w.NextEvent(); ok {
		t.Error("an event after Stop")
	}
}

// TestStreamWatcherHandoff: a reader that used ResultChan and then calls
// NextEvent gets every event once, in order, and the decoding goroutine
// hands the stream over instead of stopping it.
func TestStreamWatcherHandoff(t *testing.T) {
	var events []watch.Event
	for i := range 200 {
		events = append(events, bookmark(fmt.Sprint(i)))
	}
	s := newScriptedStream(io.EOF, events...)
	w := newStreamWatcher(s.next, s)
	got := []string{(<-w.ResultChan()).Object.(*metav1.PartialObjectMetadata).ResourceVersion}
	for {
		ev, ok := w.NextEvent()
		if !ok {
			break
		}
		got = append(got, ev.Object.(*metav1.PartialObjectMetadata).ResourceVersion)
	}
	if len(got) != 200 {
		t.Fatalf("%d events, want 200", len(got))
	}
	for i, rv := range got {
		if rv != fmt.Sprint(i) {
			t.Fatalf("event %d is %s: out of order", i, rv)
		}
	}
	if !w.handed.Load() {
		t.Error("the goroutine did not hand the stream over")
	}
}

// TestStreamWatcherMoreBuffered: a watch says whether the next event's
// bytes have already been received: after the first of three frames that
// came together, and the second, yes; after the third, no. The
// informer's Reflector applies an event in its own goroutine only when
// the answer is no.
func TestStreamWatcherMoreBuffered(t *testing.T) {
	var body []byte
	for _, name := range []string{"a", "b", "c"} {
		raw, err := (&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		ev, err := (&metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: envelope(t, "Pod", raw)}}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		body = append(binary.BigEndian.AppendUint32(body, uint32(len(ev))), ev...)
	}
	dec, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := newEventDecoder(NewSource(nil, "pods", "ns", dec, SourceOptions[*corev1.Pod]{Protobuf: true}), io.NopCloser(bytes.NewReader(body)))
	w := newStreamWatcher(func() (watch.Event, error) {
		typ, obj, err := d.Decode()
		return watch.Event{Type: typ, Object: obj}, err
	}, d)
	w.buffered = d.buffered
	defer w.Stop()
	for i, want := range []bool{true, true, false} {
		ev, ok := w.NextEvent()
		if !ok || ev.Type != watch.Added {
			t.Fatalf("event %d: %v, %v", i, ev, ok)
		}
		if got := w.MoreBuffered(); got != want {
			t.Errorf("after event %d (%s): MoreBuffered %v, want %v", i, ev.Object.(*corev1.Pod).Name, got, want)
		}
	}
	if w := newStreamWatcher(newScriptedStream(io.EOF).next, nopCloser{}); w.MoreBuffered() {
		t.Error("a watcher without a buffered decoder says more is buffered")
	}
}

type nopCloser struct{}

func (nopCloser) Close() {}
