package informertest

import (
	"context"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedkube/informer/internal/watchqueue"
)

// sourceWatch is one watch of a Source. It never blocks the Source: events
// wait in an unbounded queue that a goroutine of its own moves to the
// result channel, until Stop or the end of the watch's context.
//
// With selectors, it sends what the API server sends: a change that makes
// an object match is an ADDED event, one that makes it stop matching a
// DELETED event carrying the last state that matched, stamped with the
// change's resource version (checked against kube-apiserver v1.37 by
// e2e/informers TestInformertestSourceMatchesServer).
type sourceWatch struct {
	ls        labels.Selector
	fs        fields.Selector
	bookmarks bool
	visible   map[string]runtime.Object // the last state the watcher was sent of each object it knows; guarded by the Source's lock
	q         *watchqueue.Watch
	onStop    func() // set by the Source under its lock; removes the watch from it
	// unregister undoes the Source's context.AfterFunc that stops the
	// watch when its context ends.
	unregister atomic.Pointer[func() bool]
}

func newSourceWatch(ctx context.Context, ls labels.Selector, fs fields.Selector, bookmarks bool) *sourceWatch {
	w := &sourceWatch{
		ls: ls, fs: fs, bookmarks: bookmarks,
		visible: map[string]runtime.Object{},
		q:       watchqueue.New(ctx),
	}
	return w
}

// seen records a change the watcher is past: it only updates what the
// watcher's selectors saw.
func (w *sourceWatch) seen(ev watch.Event) { w.filter(ev) }

// send queues ev as the watcher's selectors make it appear.
func (w *sourceWatch) send(ev watch.Event) {
	if ev, ok := w.filter(ev); ok {
		w.push(ev)
	}
}

// sendBookmark queues a bookmark whatever the watcher asked: the end of a
// watch-list's initial events is always sent.
func (w *sourceWatch) sendBookmark(ev watch.Event) { w.push(ev) }

func (w *sourceWatch) filter(ev watch.Event) (watch.Event, bool) {
	if ev.Type == watch.Bookmark {
		return ev, w.bookmarks
	}
	obj := ev.Object.(object)
	key := keyOf(obj)
	last, was := w.visible[key]
	is := ev.Type != watch.Deleted && matches(obj, w.ls, w.fs)
	if is {
		w.visible[key] = ev.Object
	} else {
		delete(w.visible, key)
	}
	switch {
	case was && is:
		return watch.Event{Type: watch.Modified, Object: ev.Object}, true
	case is:
		return watch.Event{Type: watch.Added, Object: ev.Object}, true
	case was && ev.Type == watch.Deleted:
		return ev, true
	case was: // no longer selected: the last state seen, at this version
		gone := last.DeepCopyObject()
		if m, err := meta.Accessor(gone); err == nil {
			m.SetResourceVersion(obj.(metav1.Object).GetResourceVersion())
		}
		return watch.Event{Type: watch.Deleted, Object: gone}, true
	}
	return ev, false
}

func (w *sourceWatch) push(ev watch.Event) { w.q.Send(ev) }

func (w *sourceWatch) stop() { w.q.Stop() }

// Stop ends the watch: its result channel closes.
func (w *sourceWatch) Stop() {
	w.stop()
	if w.onStop != nil {
		w.onStop()
	}
	if f := w.unregister.Load(); f != nil {
		(*f)()
	}
}

// ResultChan returns the events; it closes when the watch ends.
func (w *sourceWatch) ResultChan() <-chan watch.Event { return w.q.ResultChan() }
