package informer

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

var (
	fuzzEventTypes = []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error, "", "SURPRISE"}
	fuzzNames      = []string{"a", "b", "c", ""}
	fuzzRVs        = []string{"", "7", "18446744073709551616", "-3", "not-a-number", "0"}
)

// fuzzEvent decodes one watch event from three bytes: its type, the kind
// of object, and a detail (name, resource version, status code).
func fuzzEvent(r *opReader, n int) watch.Event {
	typ := fuzzEventTypes[r.intn(len(fuzzEventTypes))]
	kind, detail := r.intn(12), r.intn(256)
	rv := fuzzRVs[detail%len(fuzzRVs)]
	if detail%len(fuzzRVs) == 1 {
		rv = "1" + strings.Repeat("0", n%5) // a growing number
	}
	pod := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fuzzNames[detail%len(fuzzNames)], ResourceVersion: rv}}
	}
	var obj runtime.Object
	switch kind {
	case 0, 1, 2, 3:
		obj = pod()
	case 4: // the end of the initial events of a watch-list stream
		p := pod()
		p.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
		obj = p
	case 5:
		obj = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", ResourceVersion: rv}}
	case 6: // no object
	case 7:
		obj = (*corev1.Pod)(nil)
	case 8:
		codes := []int32{410, 429, 500, 403, 0}
		obj = &metav1.Status{Status: metav1.StatusFailure, Code: codes[detail%len(codes)], Reason: metav1.StatusReason([]string{"Expired", "TooManyRequests", "InternalError", "Forbidden", ""}[detail%5])}
	case 9:
		obj = &unstructured.Unstructured{Object: map[string]any{"kind": "Status", "apiVersion": "v1", "code": int64(410), "reason": "Gone"}}
	case 10:
		obj = &unstructured.Unstructured{Object: map[string]any{"kind": "Pod", "apiVersion": "v1", "metadata": "garbage"}}
	case 11:
		obj = (*metav1.Status)(nil)
	}
	return watch.Event{Type: typ, Object: obj}
}

// fuzzModel is what the store and resource version must be after the
// events, and which errors must be reported: the reference the Reflector is
// checked against.
type fuzzModel struct {
	store      map[string]string // name -> resource version
	rv         string
	bad        int  // events that must be reported as *EventError and skipped
	ended      bool // an ERROR event ended the watch
	listed     bool // the store was replaced (always with a list; with a stream once it completes)
	pastAdded  bool
	collecting bool // in a watch-list stream, before its end bookmark
	collected  map[string]string
}

func (m *fuzzModel) apply(ev watch.Event) {
	if m.ended {
		return
	}
	if ev.Type == watch.Error {
		m.ended = true
		return
	}
	p, ok := ev.Object.(*corev1.Pod)
	if !ok || p == nil {
		m.bad++
		return
	}
	target := m.store
	if m.collecting {
		target = m.collected
	}
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
		if ev.Type != watch.Added {
			m.pastAdded = true
		}
		if p.Name == "" {
			m.bad++ // the store cannot key it
		} else if ev.Type == watch.Deleted {
			delete(target, p.Name)
		} else {
			target[p.Name] = p.ResourceVersion
		}
	case watch.Bookmark:
		if p.ResourceVersion == "" {
			m.bad++
			return
		}
		m.pastAdded = true
		if m.collecting && p.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
			m.collecting = false
			m.listed = true
			m.store = maps.Clone(m.collected)
		}
	default:
		m.bad++
		return
	}
	if m.pastAdded && p.ResourceVersion != "" {
		m.rv = p.ResourceVersion
	}
}

// FuzzReflectorWatchEvents feeds a Reflector one watch of malformed and
// wrong-typed events (wrong Go types, nil objects, ERROR events with and
// without a Status, bookmarks without a resource version, odd resource
// versions, objects without a name), after a list or in a watch-list
// stream. It must not panic, must report each bad event as an *EventError
// and step over it, must end the watch at an ERROR event, and must leave
// the store and resource version as a plain model says.
func FuzzReflectorWatchEvents(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 9})
	f.Add([]byte{1, 0, 0, 0, 3, 4, 7, 6, 6, 0, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &opReader{data: data}
		streaming := r.intn(2) == 1
		var events []watch.Event
		for i := 0; r.more() && i < 64; i++ {
			events = append(events, fuzzEvent(r, i))
		}
		m := &fuzzModel{store: map[string]string{}, rv: "1", pastAdded: true, collected: map[string]string{}}
		if streaming {
			m.rv, m.pastAdded, m.collecting = "", false, true
		} else {
			m.listed = true
		}
		for _, ev := range events {
			m.apply(ev)
		}
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logr.Discard()))
			defer cancel()
			calls := 0
			lw := funcLW{
				ListFunc: func(ctx context.Context, _ metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
					if calls++; calls > 1 {
						cancel()
						return nil, ctx.Err()
					}
					page := &ListPage[*corev1.Pod]{}
					page.ResourceVersion = "1"
					return page, nil
				},
				WatchFunc: func(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
					if calls++; calls > 2 || streaming && calls > 1 {
						cancel()
						return nil, ctx.Err()
					}
					w := watch.NewFakeWithChanSize(len(events), false)
					for _, ev := range events {
						w.Action(ev.Type, ev.Object)
					}
					w.Stop() // closes the channel after the events
					return w, nil
				},
			}
			mode := WatchListOff
			if streaming {
				mode = WatchListOn
			}
			var reported []error
			store := NewStore(MetaNamespaceKeyFunc[*corev1.Pod])
			refl, err := NewReflector(lw, store, ReflectorOptions{WatchList: mode,
				WatchErrorHandler: func(_ context.Context, err error) { reported = append(reported, err) }})
			if err != nil {
				t.Fatal(err)
			}
			if err := refl.Run(ctx); err != nil {
				t.Fatalf("Run returned %v", err)
			}
			checkFuzzRun(t, m, store, refl.LastSyncResourceVersion(), reported)
		})
	})
}

func checkFuzzRun(t *testing.T, m *fuzzModel, store *Store[*corev1.Pod], rv string, reported []error) {
	t.Helper()
	got := map[string]string{}
	for _, p := range store.List() {
		got[p.Name] = p.ResourceVersion
	}
	want := m.store
	if !m.listed {
		want = map[string]string{}
	}
	if !maps.Equal(got, want) {
		t.Errorf("store %v, want %v", got, want)
	}
	// A stream that never completed set no resource version.
	if wantRV := m.rv; m.listed && rv != wantRV {
		t.Errorf("last sync resource version %q, want %q", rv, wantRV)
	}
	bad, ending := 0, 0
	for _, err := range reported {
		var ee *EventError
		switch {
		case errors.As(err, &ee) && !strings.HasPrefix(err.Error(), "informer: watch"):
			bad++
			if !errors.Is(err, ErrUnexpectedObject) && !errors.Is(err, ErrUnknownEventType) &&
				!errors.Is(err, ErrNoResourceVersion) && !errors.Is(err, ErrEmptyKey) && !errors.Is(err, errNoKey) {
				t.Errorf("event error with an unexpected cause: %v", err)
			}
		default:
			ending++
		}
	}
	if bad != m.bad {
		t.Errorf("%d bad events reported, want %d: %v", bad, m.bad, reported)
	}
	if m.ended && ending == 0 {
		t.Errorf("an ERROR event ended the watch and nothing was reported: %v", reported)
	}
	for _, err := range reported {
		var status apierrors.APIStatus
		var ee *EventError
		if errors.As(err, &status) && errors.As(err, &ee) {
			t.Errorf("an error is both an API error and an *EventError: %v", err)
		}
	}
}
