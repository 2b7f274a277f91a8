package informer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// tracer collects the lines of a run, each stamped with the time since the
// run started (fake time, under testing/synctest).
type tracer struct {
	start time.Time
	mu    sync.Mutex
	lines []string
}

func newTracer() *tracer { return &tracer{start: time.Now()} }

func (tr *tracer) logf(format string, args ...any) {
	d := time.Since(tr.start).Round(time.Millisecond)
	line := fmt.Sprintf("%-9s %s", d, fmt.Sprintf(format, args...))
	tr.mu.Lock()
	tr.lines = append(tr.lines, line)
	tr.mu.Unlock()
}

func (tr *tracer) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return strings.Join(tr.lines, "\n") + "\n"
}

// call is one List or Watch call the fake received.
type call struct {
	Kind string // list or watch
	Opts metav1.ListOptions
}

// fakeLW is a ListerWatcher[*corev1.Pod] that answers from a script and
// records every call. It also serves client-go's Reflector (upstreamLW).
// Its methods are called from one goroutine at a time.
type fakeLW struct {
	sc     *script
	tr     *tracer
	cancel context.CancelFunc // ends the run

	mu       sync.Mutex // guards the fields below
	next     int        // the next step of sc
	calls    []call
	watchers []*fakeWatcher
}

func newFakeLW(sc *script, tr *tracer, cancel context.CancelFunc) *fakeLW {
	return &fakeLW{sc: sc, tr: tr, cancel: cancel}
}

func (f *fakeLW) List(ctx context.Context, opts metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
	st, err := f.take(ctx, "list", opts)
	if err != nil {
		return nil, err
	}
	if st.kind == "list-error" {
		err, _ := scriptError(st.err)
		return nil, err
	}
	page := &ListPage[*corev1.Pod]{ListMeta: *st.page.ListMeta.DeepCopy()}
	for _, p := range st.page.Items {
		page.Items = append(page.Items, p.DeepCopy())
	}
	return page, nil
}

func (f *fakeLW) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	st, err := f.take(ctx, "watch", opts)
	if err != nil {
		return nil, err
	}
	if st.kind == "watch-error" {
		err, _ := scriptError(st.err)
		return nil, err
	}
	f.mu.Lock()
	w := &fakeWatcher{
		id:   len(f.watchers) + 1,
		ch:   make(chan watch.Event),
		stop: make(chan struct{}),
		tr:   f.tr,
	}
	f.watchers = append(f.watchers, w)
	f.mu.Unlock()
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	go w.run(ctx, f, st.events, timeout)
	return w, nil
}

// take records a call and returns the step that answers it.
func (f *fakeLW) take(ctx context.Context, kind string, opts metav1.ListOptions) (step, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{Kind: kind, Opts: opts})
	f.tr.logf("%s %s", kind, formatOptions(opts))
	if f.next == len(f.sc.steps) {
		f.tr.logf("end of script")
		f.cancel()
		return step{}, ctx.Err()
	}
	st := f.sc.steps[f.next]
	if st.kind != kind && st.kind != kind+"-error" {
		f.tr.logf("UNEXPECTED %s: line %d answers a %s", kind, st.line, st.kind)
		f.cancel()
		return step{}, errors.New("unexpected call")
	}
	f.next++
	return st, nil
}

// unstopped returns the watchers the Reflector did not stop.
func (f *fakeLW) unstopped() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []int
	for _, w := range f.watchers {
		select {
		case <-w.stop:
		default:
			ids = append(ids, w.id)
		}
	}
	return ids
}

// formatOptions prints the options a reflector sets, in a fixed order.
func formatOptions(o metav1.ListOptions) string {
	parts := []string{fmt.Sprintf("rv=%q", o.ResourceVersion)}
	if o.ResourceVersionMatch != "" {
		parts = append(parts, "match="+string(o.ResourceVersionMatch))
	}
	if o.Limit != 0 {
		parts = append(parts, fmt.Sprintf("limit=%d", o.Limit))
	}
	if o.Continue != "" {
		parts = append(parts, "continue="+o.Continue)
	}
	if o.SendInitialEvents != nil {
		parts = append(parts, fmt.Sprintf("sendInitialEvents=%t", *o.SendInitialEvents))
	}
	if o.AllowWatchBookmarks {
		parts = append(parts, "bookmarks")
	}
	if o.TimeoutSeconds != nil {
		parts = append(parts, fmt.Sprintf("timeout=%ds", *o.TimeoutSeconds))
	}
	if o.Watch || o.LabelSelector != "" || o.FieldSelector != "" {
		parts = append(parts, fmt.Sprintf("other=%+v", o))
	}
	return strings.Join(parts, " ")
}

// fakeWatcher plays the events of a watch step.
type fakeWatcher struct {
	id   int
	ch   chan watch.Event
	stop chan struct{}
	once sync.Once
	tr   *tracer
}

func (w *fakeWatcher) ResultChan() <-chan watch.Event { return w.ch }

func (w *fakeWatcher) Stop() {
	w.once.Do(func() {
		w.tr.logf("stop watch#%d", w.id)
		close(w.stop)
	})
}

// run sends the events, then closes the result channel: at once for close,
// after the timeout for timeout, and otherwise once the watcher is
// stopped or ctx ends.
func (w *fakeWatcher) run(ctx context.Context, f *fakeLW, events []scriptEvent, timeout time.Duration) {
	defer close(w.ch)
	start := time.Now()
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-w.stop:
		case <-ctx.Done():
		}
		return false
	}
	for _, e := range events {
		switch e.op {
		case "sleep":
			d, _ := time.ParseDuration(e.args[0])
			if !wait(d) {
				return
			}
			continue
		case "close":
			return
		case "timeout":
			wait(timeout - time.Since(start))
			return
		case "cancel":
			synctest.Wait()
			f.tr.logf("cancel")
			f.cancel()
			continue
		}
		ev := scriptWatchEvent(e)
		select {
		case w.ch <- ev:
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		}
	}
	select {
	case <-w.stop:
	case <-ctx.Done():
	}
}

// scriptWatchEvent builds the event of an event line. parseScript has
// checked nothing here, so a bad line panics the test.
func scriptWatchEvent(e scriptEvent) watch.Event {
	pod := func() *corev1.Pod {
		p, err := parsePod(e.args[0])
		if err != nil {
			panic(fmt.Sprintf("line %d: %v", e.line, err))
		}
		return p
	}
	switch e.op {
	case "added":
		return watch.Event{Type: watch.Added, Object: pod()}
	case "modified":
		return watch.Event{Type: watch.Modified, Object: pod()}
	case "deleted":
		return watch.Event{Type: watch.Deleted, Object: pod()}
	case "bookmark":
		p := &corev1.Pod{}
		for _, a := range e.args {
			switch a {
			case "end":
				p.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
			case "end=false":
				p.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "false"}
			default:
				p.ResourceVersion = a
			}
		}
		return watch.Event{Type: watch.Bookmark, Object: p}
	case "error":
		return watch.Event{Type: watch.Error, Object: statusOf(e.args[0])}
	case "error-object":
		return watch.Event{Type: watch.Error, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "odd"}}}
	case "error-nil":
		return watch.Event{Type: watch.Error}
	case "wrongtype":
		p := pod()
		return watch.Event{Type: watch.Modified, Object: &corev1.Service{ObjectMeta: p.ObjectMeta}}
	case "nilobject":
		return watch.Event{Type: watch.Added}
	case "typednil":
		return watch.Event{Type: watch.Added, Object: (*corev1.Pod)(nil)}
	case "unknown":
		return watch.Event{Type: "UNKNOWN", Object: pod()}
	}
	panic(fmt.Sprintf("line %d: unknown event %q", e.line, e.op))
}

// podRef prints a Pod as NAME@RV.
func podRef(p *corev1.Pod) string {
	if p == nil {
		return "<nil>"
	}
	return p.Name + "@" + p.ResourceVersion
}

// storeContents prints objects as sorted NAME@RV.
func storeContents[T runtime.Object](objs []T) string {
	refs := make([]string, 0, len(objs))
	for _, o := range objs {
		m := any(o).(metav1.Object)
		refs = append(refs, m.GetName()+"@"+m.GetResourceVersion())
	}
	slices.Sort(refs)
	return strings.Join(refs, " ")
}

// recordingStore is a Store[*corev1.Pod] that traces every write, with a
// Resync and a Bookmark method that trace their calls.
type recordingStore struct {
	*Store[*corev1.Pod]
	tr *tracer
}

func (s *recordingStore) Add(p *corev1.Pod) error {
	s.tr.logf("store add %s", podRef(p))
	return s.Store.Add(p)
}

func (s *recordingStore) Update(p *corev1.Pod) error {
	s.tr.logf("store update %s", podRef(p))
	return s.Store.Update(p)
}

func (s *recordingStore) Delete(p *corev1.Pod) error {
	s.tr.logf("store delete %s", podRef(p))
	return s.Store.Delete(p)
}

func (s *recordingStore) Replace(list []*corev1.Pod, rv string) error {
	refs := make([]string, len(list))
	for i, p := range list {
		refs[i] = podRef(p)
	}
	s.tr.logf("store replace rv=%q [%s]", rv, strings.Join(refs, " "))
	return s.Store.Replace(list, rv)
}

func (s *recordingStore) Resync() error {
	s.tr.logf("store resync")
	return nil
}

func (s *recordingStore) Bookmark(rv string) {
	s.tr.logf("store bookmark %q", rv)
}
