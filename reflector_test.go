package informer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/typedkube/informer/internal/testobj"
)

func podStore() *Store[*corev1.Pod] { return NewStore(MetaNamespaceKeyFunc[*corev1.Pod]) }

// funcLW is a ListerWatcher[*corev1.Pod] made of functions.
type funcLW = ListWatchFuncs[*corev1.Pod]

func TestNewReflectorOptions(t *testing.T) {
	lw := funcLW{}
	for name, tc := range map[string]struct {
		lw    ListerWatcher[*corev1.Pod]
		store ReflectorStore[*corev1.Pod]
		opts  ReflectorOptions
	}{
		"nil ListerWatcher":          {lw: nil, store: podStore()},
		"nil pointer ListerWatcher":  {lw: (*fakeLW)(nil), store: podStore()},
		"nil store":                  {lw: lw, store: nil},
		"nil pointer store":          {lw: lw, store: (*Store[*corev1.Pod])(nil)},
		"negative resync":            {lw: lw, store: NewFIFO(MetaNamespaceKeyFunc[*corev1.Pod]), opts: ReflectorOptions{ResyncPeriod: -time.Second}},
		"resync without Resync":      {lw: lw, store: podStore(), opts: ReflectorOptions{ResyncPeriod: time.Minute}},
		"watch timeout under 1s":     {lw: lw, store: podStore(), opts: ReflectorOptions{MinWatchTimeout: time.Millisecond}},
		"negative internal retry":    {lw: lw, store: podStore(), opts: ReflectorOptions{InternalErrorRetry: -1}},
		"negative events timeout":    {lw: lw, store: podStore(), opts: ReflectorOptions{InitialEventsTimeout: -1}},
		"unknown watch-list mode":    {lw: lw, store: podStore(), opts: ReflectorOptions{WatchList: WatchListOff + 1}},
		"negative backoff":           {lw: lw, store: podStore(), opts: ReflectorOptions{Backoff: Backoff{Initial: -1}}},
		"backoff max under initial":  {lw: lw, store: podStore(), opts: ReflectorOptions{Backoff: Backoff{Initial: time.Minute, Max: time.Second}}},
		"backoff factor under 1":     {lw: lw, store: podStore(), opts: ReflectorOptions{Backoff: Backoff{Factor: 0.5}}},
		"watch-list on, unsupported": {lw: WithoutWatchList[*corev1.Pod](lw), store: podStore(), opts: ReflectorOptions{WatchList: WatchListOn}},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := NewReflector(tc.lw, tc.store, tc.opts)
			if !errors.Is(err, ErrInvalidOptions) || r != nil {
				t.Errorf("got %v, %v; want ErrInvalidOptions", r, err)
			}
		})
	}
}

func TestNewReflectorDefaults(t *testing.T) {
	r, err := NewReflector[*corev1.Pod](funcLW{}, podStore(), ReflectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := Backoff{Initial: 800 * time.Millisecond, Max: 30 * time.Second, Factor: 2, Jitter: 1, ResetAfter: 2 * time.Minute}
	if diff := cmp.Diff(want, r.backoff.Backoff); diff != "" {
		t.Errorf("backoff (-want +got):\n%s", diff)
	}
	if r.name != "*v1.Pod" || r.minWatch != 5*time.Minute || r.watchList != WatchListAuto || r.pageSize != 0 {
		t.Errorf("name %q, min watch timeout %v, watch-list %v, page size %d", r.name, r.minWatch, r.watchList, r.pageSize)
	}
	if r.pageLimit("0") != 500 || r.pageLimit("") != 500 || r.pageLimit("12") != 0 {
		t.Errorf("page limits at 0, \"\", 12: %d %d %d; want 500 500 0", r.pageLimit("0"), r.pageLimit(""), r.pageLimit("12"))
	}
}

func TestBackoff(t *testing.T) {
	b, err := Backoff{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	bo := backoff{Backoff: b}
	now := time.Unix(0, 0)
	next := func(random float64) time.Duration {
		d := bo.next(now, func() float64 { return random })
		now = now.Add(d) // the next failure comes right after the delay
		return d
	}
	var got []time.Duration
	for range 8 {
		got = append(got, next(0))
	}
	ms := time.Millisecond
	want := []time.Duration{800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 12800 * ms, 25600 * ms, 30000 * ms, 30000 * ms}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delays without jitter (-want +got):\n%s", diff)
	}
	if d := next(0.5); d != 45*time.Second {
		t.Errorf("a capped delay with jitter 0.5 is %v, want 45s", d)
	}
	// A quiet period: the next failure comes ResetAfter after the last
	// delay ended, and the sequence starts again.
	now = now.Add(2*time.Minute + time.Nanosecond)
	if d := next(0); d != 800*ms {
		t.Errorf("after a quiet period the delay is %v, want 800ms", d)
	}
	now = now.Add(2 * time.Minute)
	if d := next(0); d != 1600*ms {
		t.Errorf("after exactly ResetAfter the delay is %v, want 1.6s (no reset)", d)
	}
	noJitter, _ := Backoff{Jitter: -1}.withDefaults()
	bo = backoff{Backoff: noJitter}
	if d := bo.next(now, func() float64 { return 0.9 }); d != 800*ms {
		t.Errorf("with jitter off the delay is %v, want 800ms", d)
	}
}

func TestWatchTimeout(t *testing.T) {
	for _, min := range []time.Duration{0, time.Minute, 7 * time.Minute} {
		r, err := NewReflector[*corev1.Pod](funcLW{}, podStore(), ReflectorOptions{MinWatchTimeout: min})
		if err != nil {
			t.Fatal(err)
		}
		if min == 0 {
			min = 5 * time.Minute
		}
		lo, hi := int64(min/time.Second), int64(2*min/time.Second)
		r.random = func() float64 { return 0 }
		if got := *r.watchTimeout(); got != lo {
			t.Errorf("min %v: lowest timeout %ds, want %ds", min, got, lo)
		}
		r.random = func() float64 { return 0.9999999 }
		if got := *r.watchTimeout(); got != hi-1 && got != hi {
			t.Errorf("min %v: highest timeout %ds, want about %ds", min, got, hi)
		}
	}
}

// TestReflectorRunStopsPromptly cancels a running Reflector in each place
// it can wait, and checks that Run returns nil at once (no fake time
// passes) and that every goroutine it started has ended (synctest.Test
// fails otherwise).
func TestReflectorRunStopsPromptly(t *testing.T) {
	block := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	page := &ListPage[*corev1.Pod]{Items: []*corev1.Pod{testobj.Pod("ns", "a", "1")}}
	page.ResourceVersion = "1"
	listOK := func(context.Context, metav1.ListOptions) (*ListPage[*corev1.Pod], error) { return page, nil }
	hang := func(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil }
	for name, tc := range map[string]struct {
		lw   funcLW
		opts ReflectorOptions
	}{
		"in List": {lw: funcLW{
			ListFunc: func(ctx context.Context, _ metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
				return nil, block(ctx)
			},
		}, opts: ReflectorOptions{WatchList: WatchListOff}},
		"in the backoff after a failed list": {lw: funcLW{
			ListFunc: func(context.Context, metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
				return nil, errors.New("no")
			},
		}, opts: ReflectorOptions{WatchList: WatchListOff}},
		"in Watch": {lw: funcLW{ListFunc: listOK,
			WatchFunc: func(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) { return nil, block(ctx) },
		}, opts: ReflectorOptions{WatchList: WatchListOff}},
		"in the backoff after a 429": {lw: funcLW{ListFunc: listOK,
			WatchFunc: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
				return nil, apierrors.NewTooManyRequests("slow down", 1)
			},
		}, opts: ReflectorOptions{WatchList: WatchListOff}},
		"watching, with a resync timer": {lw: funcLW{ListFunc: listOK, WatchFunc: hang},
			opts: ReflectorOptions{WatchList: WatchListOff, ResyncPeriod: time.Hour}},
		"collecting a watch-list stream": {lw: funcLW{WatchFunc: hang}, opts: ReflectorOptions{WatchList: WatchListOn}},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logr.Discard()))
				r, err := NewReflector(tc.lw, NewFIFO(MetaNamespaceKeyFunc[*corev1.Pod]), tc.opts)
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error)
				go func() { done <- r.Run(ctx) }()
				time.Sleep(time.Second) // fake time: let it reach its wait
				synctest.Wait()
				start := time.Now()
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run returned %v", err)
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("Run took %v to return", d)
				}
			})
		})
	}
}

func TestReflectorAlreadyRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := funcLW{ListFunc: func(ctx context.Context, _ metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}
		r, stop := runReflector(t, lw, podStore(), ReflectorOptions{WatchList: WatchListOff})
		if err := r.Run(t.Context()); !errors.Is(err, ErrAlreadyRunning) {
			t.Errorf("a second Run returned %v, want ErrAlreadyRunning", err)
		}
		stop()
		// Once stopped, it can run again.
		if err := startReflector(t, r)(); err != nil {
			t.Errorf("Run after Run returned %v", err)
		}
	})
}

// flakyStore is a Store whose writes fail for the objects named in fail.
type flakyStore struct {
	*Store[*corev1.Pod]
	fail      map[string]error
	resyncErr error
}

func (s *flakyStore) Add(p *corev1.Pod) error {
	if err := s.fail[p.Name]; err != nil {
		return err
	}
	return s.Store.Add(p)
}

func (s *flakyStore) Replace(list []*corev1.Pod, rv string) error {
	for _, p := range list {
		if err := s.fail[p.Name]; err != nil {
			return err
		}
	}
	return s.Store.Replace(list, rv)
}

func (s *flakyStore) Resync() error { return s.resyncErr }

// oneWatch is a ListerWatcher that lists page and then serves one watch
// with events; later watches hang.
func oneWatch(page *ListPage[*corev1.Pod], events ...watch.Event) (funcLW, *atomic.Int32) {
	var lists atomic.Int32
	var watches atomic.Int32
	return funcLW{
		ListFunc: func(context.Context, metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
			lists.Add(1)
			return page, nil
		},
		WatchFunc: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			w := watch.NewFakeWithChanSize(len(events), false)
			if watches.Add(1) == 1 {
				for _, ev := range events {
					w.Action(ev.Type, ev.Object)
				}
			}
			return w, nil
		},
	}, &lists
}

func TestReflectorStoreErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		page := &ListPage[*corev1.Pod]{}
		page.ResourceVersion = "1"
		lw, _ := oneWatch(page,
			watch.Event{Type: watch.Added, Object: testobj.Pod("ns", "bad", "2")},
			watch.Event{Type: watch.Added, Object: testobj.Pod("ns", "good", "3")},
		)
		store := &flakyStore{Store: podStore(), fail: map[string]error{"bad": errors.New("disk full")}}
		var reported []error
		r, stop := runReflector(t, lw, store, ReflectorOptions{WatchList: WatchListOff,
			WatchErrorHandler: func(_ context.Context, err error) { reported = append(reported, err) }})
		stop()
		var ee *EventError
		if len(reported) != 1 || !errors.As(reported[0], &ee) || ee.Type != watch.Added || ee.Err.Error() != "disk full" {
			t.Errorf("reported %v, want one *EventError for the ADDED bad", reported)
		}
		if got := storeContents(store.List()); got != "good@3" {
			t.Errorf("store holds %q, want good@3: the watch goes on past a failed write", got)
		}
		if rv := r.LastSyncResourceVersion(); rv != "3" {
			t.Errorf("last sync resource version %q, want 3", rv)
		}
	})
}

// TestReflectorStoreClosed checks that Run returns, with the error, when
// the store says it is closed, from a watch event or from a list.
func TestReflectorStoreClosed(t *testing.T) {
	closed := fmt.Errorf("the consumer left: %w", ErrClosed)
	for name, page := range map[string]*ListPage[*corev1.Pod]{
		"list":  {Items: []*corev1.Pod{testobj.Pod("ns", "closed", "1")}},
		"watch": {},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lw, _ := oneWatch(page, watch.Event{Type: watch.Added, Object: testobj.Pod("ns", "closed", "2")})
				store := &flakyStore{Store: podStore(), fail: map[string]error{"closed": closed}}
				r, err := NewReflector(lw, store, ReflectorOptions{WatchList: WatchListOff})
				if err != nil {
					t.Fatal(err)
				}
				if err := r.Run(t.Context()); !errors.Is(err, ErrClosed) {
					t.Errorf("Run returned %v, want ErrClosed", err)
				}
			})
		})
	}
}

func TestReflectorResyncError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw, lists := oneWatch(&ListPage[*corev1.Pod]{})
		store := &flakyStore{Store: podStore(), resyncErr: errors.New("cannot resync")}
		var reported []string
		r, err := NewReflector(lw, store, ReflectorOptions{WatchList: WatchListOff, ResyncPeriod: time.Minute,
			WatchErrorHandler: func(_ context.Context, err error) { reported = append(reported, err.Error()) }})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- r.Run(ctx) }()
		time.Sleep(time.Minute + 5*time.Second)
		synctest.Wait()
		cancel()
		<-done
		if want := []string{"informer: resync: cannot resync"}; !slices.Equal(reported, want) {
			t.Errorf("reported %q, want %q", reported, want)
		}
		if n := lists.Load(); n != 2 {
			t.Errorf("%d lists, want 2: a failed resync ends the round", n)
		}
	})
}

func TestErrorClassification(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("informer: watch: %w", err) }
	for _, kind := range []string{"expired", "gone", "toolarge", "toolarge-old", "429", "refused", "internal", "invalid", "forbidden", "eof", "other"} {
		err, _ := scriptError(kind)
		got := []bool{isExpiredError(wrap(err)), isTooLargeResourceVersionError(wrap(err)), isRetriableWatchError(wrap(err))}
		want := []bool{kind == "expired" || kind == "gone", strings.HasPrefix(kind, "toolarge"), kind == "429" || kind == "refused"}
		if !slices.Equal(got, want) {
			t.Errorf("%s: expired, too large, retriable = %v, want %v", kind, got, want)
		}
	}
}

func TestDefaultWatchErrorHandler(t *testing.T) {
	expired, _ := scriptError("expired")
	tooMany, _ := scriptError("429")
	for _, tc := range []struct {
		err  error
		want string // the start of the log line, "" for none
	}{
		{io.EOF, ""},
		{fmt.Errorf("informer: watch: %w", expired), `"level"=4 "msg"="Watch closed"`},
		{fmt.Errorf("%w: %w", ErrWatchListFallback, errors.New("x")), `"level"=4 "msg"="Watch closed"`},
		{fmt.Errorf("%w: %w", ErrContinueExpired, expired), `"level"=4 "msg"="Watch closed"`},
		{fmt.Errorf("informer: watch: %w", tooMany), `"level"=2 "msg"="Watch refused, backing off"`},
		{fmt.Errorf("informer: watch: %w", io.ErrUnexpectedEOF), `"level"=1 "msg"="Watch closed with unexpected EOF"`},
		{errors.New("boom"), `"msg"="Failed to watch" "error"="boom"`},
		{&EventError{Type: watch.Added, Err: ErrUnexpectedObject}, `"msg"="Skipped a watch event"`},
		{fmt.Errorf("informer: watch: %w", &EventError{Type: watch.Error, Err: ErrUnexpectedObject}), `"msg"="Failed to watch"`},
	} {
		var buf bytes.Buffer
		logger := funcr.New(func(prefix, args string) { fmt.Fprintln(&buf, args) }, funcr.Options{Verbosity: 10, LogInfoLevel: ptrTo("level")})
		DefaultWatchErrorHandler(klog.NewContext(t.Context(), logger), tc.err)
		got := buf.String()
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%v: logged %q, want %q", tc.err, got, tc.want)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestReflectorRunWaitsForResync checks that Run does not return while a
// goroutine it started, here the resync timer's inside ShouldResync, is
// still running.
func TestReflectorRunWaitsForResync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw, _ := oneWatch(&ListPage[*corev1.Pod]{})
		entered, release := make(chan struct{}), make(chan struct{})
		r, err := NewReflector(lw, NewFIFO(MetaNamespaceKeyFunc[*corev1.Pod]), ReflectorOptions{
			WatchList: WatchListOff, ResyncPeriod: time.Minute,
			ShouldResync: func() bool { close(entered); <-release; return false },
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- r.Run(ctx) }()
		<-entered
		cancel()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Run returned while ShouldResync was running")
		default:
		}
		close(release)
		if err := <-done; err != nil {
			t.Errorf("Run returned %v", err)
		}
	})
}

// TestReflectorClockOption checks that the Reflector measures time with the
// Clock it is given: its backoff waits for that clock.
func TestReflectorClockOption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testingclock.NewFakeClock(time.Now())
		var lists atomic.Int32
		lw := funcLW{ListFunc: func(context.Context, metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
			lists.Add(1)
			return nil, errors.New("no")
		}}
		r, err := NewReflector(lw, podStore(), ReflectorOptions{WatchList: WatchListOff, Clock: clk,
			WatchErrorHandler: func(context.Context, error) {}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- r.Run(ctx) }()
		time.Sleep(time.Hour) // real (bubble) time does not move the reflector
		synctest.Wait()
		if n := lists.Load(); n != 1 {
			t.Fatalf("%d lists before the fake clock moved, want 1", n)
		}
		clk.Step(2 * time.Second) // past the first backoff, at most 1.6s
		synctest.Wait()
		if n := lists.Load(); n != 2 {
			t.Errorf("%d lists after the fake clock moved, want 2", n)
		}
		cancel()
		<-done
	})
}

// TestWatchListWithoutEndBookmark: a source that accepts a watch-list request
// but never ends its initial events (it ignores sendInitialEvents) is given
// up on within twice InitialEventsTimeout: the error handler is told
// ErrNoInitialEventsEnd, and in Auto mode the Reflector lists, syncs, and
// never asks for a stream again. Before, it waited silently for ever.
func TestWatchListWithoutEndBookmark(t *testing.T) {
	for _, pull := range []bool{false, true} {
		t.Run(pullName(pull), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var streams, lists int
				lw := funcLW{
					ListFunc: func(context.Context, metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
						lists++
						return &ListPage[*corev1.Pod]{Items: []*corev1.Pod{testobj.Pod("ns", "a", "1")}, ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
					},
					WatchFunc: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
						if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
							streams++
						}
						w := watch.NewFakeWithChanSize(1, false)
						w.Add(testobj.Pod("ns", "a", "1")) // one initial event, then silence
						return pulledIf(pull, w), nil
					},
				}
				var reported []error
				store := podStore()
				r, err := NewReflector(lw, store, ReflectorOptions{
					WatchErrorHandler: func(_ context.Context, err error) { reported = append(reported, err) },
				})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error)
				go func() { done <- r.Run(ctx) }()
				time.Sleep(2*defaultInitialEventsTimeout + time.Second)
				synctest.Wait()
				if lists != 1 || store.Len() != 1 {
					t.Errorf("%d lists, %d objects stored; want the fallback list of 1 object", lists, store.Len())
				}
				if len(reported) == 0 || !errors.Is(reported[0], ErrNoInitialEventsEnd) || !errors.Is(reported[0], ErrWatchListFallback) {
					t.Errorf("reported %v; want ErrNoInitialEventsEnd with ErrWatchListFallback", reported)
				}
				time.Sleep(time.Hour) // many more watch rounds
				cancel()
				<-done
				if streams != 1 {
					t.Errorf("%d watch-list requests; want 1, then lists and watches only", streams)
				}
			})
		})
	}
}

// stopRecorder is a watch.Interface that counts Stop calls.
type stopRecorder struct {
	*watch.FakeWatcher
	stops *int
}

func (w stopRecorder) Stop() { *w.stops++; w.FakeWatcher.Stop() }

// pulled is a watch the Reflector reads through NextEvent, as it reads
// package wire's streams: w's events, received from w's channel in the
// reader's goroutine, which Stop closes.
type pulled struct{ watch.Interface }

func (p pulled) NextEvent() (watch.Event, bool) {
	ev, ok := <-p.Interface.ResultChan()
	return ev, ok
}

func (p pulled) ResultChan() <-chan watch.Event {
	panic("a pulled watch is not read through its channel")
}

// pulledIf is w, read through NextEvent if pull.
func pulledIf(pull bool, w watch.Interface) watch.Interface {
	if pull {
		return pulled{w}
	}
	return w
}

func pullName(pull bool) string { return map[bool]string{false: "channel", true: "pull"}[pull] }

// TestWatchListStreamStoppedWhenRunEnds: a watch-list stream whose initial
// state completes as Run's context ends is stopped, not leaked (with a real
// client, its goroutine and HTTP stream stayed open for ever).
func TestWatchListStreamStoppedWhenRunEnds(t *testing.T) {
	for _, pull := range []bool{false, true} {
		t.Run(pullName(pull), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				stops := 0
				lw := funcLW{WatchFunc: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
					w := watch.NewFakeWithChanSize(2, false)
					w.Add(testobj.Pod("ns", "a", "1"))
					end := testobj.Pod("", "", "2")
					end.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
					w.Action(watch.Bookmark, end)
					return pulledIf(pull, stopRecorder{w, &stops}), nil
				}}
				// The store's Replace ends the context: the state is complete just
				// as Run is told to stop.
				store := &cancelOnReplace{Store: podStore(), cancel: cancel}
				r, err := NewReflector(lw, store, ReflectorOptions{WatchList: WatchListOn})
				if err != nil {
					t.Fatal(err)
				}
				if err := r.Run(ctx); err != nil {
					t.Fatal(err)
				}
				if stops == 0 {
					t.Error("the watch-list stream was not stopped when Run returned")
				}
			})
		})
	}
}

type cancelOnReplace struct {
	*Store[*corev1.Pod]
	cancel context.CancelFunc
}

func (s *cancelOnReplace) Replace(list []*corev1.Pod, rv string) error {
	s.cancel()
	return s.Store.Replace(list, rv)
}

// relistWatch is a watch whose Err says it ended to ask for a relist.
type relistWatch struct{ *watch.FakeWatcher }

func (relistWatch) Err() error { return fmt.Errorf("scope changed: %w", ErrRelist) }

// TestReflectorRelistOnRequest: a Watch that answers ErrRelist, and a watch
// that closes with Err() wrapping it, make the Reflector list again at once (the fake clock never moves, so a backoff
// would hold it), without telling the WatchErrorHandler; the next watch
// starts from the new list's resource version.
func TestReflectorRelistOnRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testingclock.NewFakeClock(time.Now())
		var lists, watches atomic.Int32
		var reported atomic.Int32
		watchFrom := make(chan string, 4)
		lw := funcLW{
			ListFunc: func(context.Context, metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
				n := lists.Add(1)
				return &ListPage[*corev1.Pod]{ListMeta: metav1.ListMeta{ResourceVersion: fmt.Sprint(10 * n)}}, nil
			},
			WatchFunc: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				watchFrom <- opts.ResourceVersion
				switch watches.Add(1) {
				case 1:
					return nil, fmt.Errorf("ranges moved: %w", ErrRelist)
				case 2: // a watch that ends at once, saying why
					w := &relistWatch{FakeWatcher: watch.NewFake()}
					w.Stop()
					return w, nil
				}
				return watch.NewFake(), nil
			},
		}
		_, stop := runReflector(t, lw, podStore(), ReflectorOptions{WatchList: WatchListOff, Clock: clk,
			WatchErrorHandler: func(context.Context, error) { reported.Add(1) }})
		if n := lists.Load(); n != 3 {
			t.Errorf("%d lists, want 3: the relists must not wait for the fake clock", n)
		}
		if n := reported.Load(); n != 0 {
			t.Errorf("the error handler was called %d times for a requested relist", n)
		}
		if got := []string{<-watchFrom, <-watchFrom, <-watchFrom}; !slices.Equal(got, []string{"10", "20", "30"}) {
			t.Errorf("watches from %q, want from each list's resource version", got)
		}
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
}

// TestWatchListBusySourceWithoutEndBookmark: a source that ignores
// sendInitialEvents but never goes silent (it streams changes, as a fake
// clientset with busy writers does) is given up on too, within twice
// InitialEventsTimeout of its first change; before, the Reflector waited
// for silence for ever.
func TestWatchListBusySourceWithoutEndBookmark(t *testing.T) {
	for _, pull := range []bool{false, true} {
		t.Run(pullName(pull), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var lists atomic.Int32
				ctx, cancel := context.WithCancel(t.Context())
				var feeders sync.WaitGroup
				lw := funcLW{
					ListFunc: func(context.Context, metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
						lists.Add(1)
						return &ListPage[*corev1.Pod]{Items: []*corev1.Pod{testobj.Pod("ns", "a", "1")}, ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
					},
					WatchFunc: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
						w := watch.NewRaceFreeFake() // drops what comes once stopped
						if opts.SendInitialEvents == nil || !*opts.SendInitialEvents {
							return w, nil
						}
						feeders.Go(func() {
							w.Add(testobj.Pod("ns", "a", "1"))
							for i := 2; ; i++ {
								select {
								case <-ctx.Done():
									return
								case <-time.After(100 * time.Millisecond):
								}
								if w.IsStopped() {
									return
								}
								w.Modify(testobj.Pod("ns", "a", fmt.Sprint(i)))
							}
						})
						return pulledIf(pull, w), nil
					},
				}
				var reported []error
				var mu sync.Mutex
				r, err := NewReflector(lw, podStore(), ReflectorOptions{
					WatchErrorHandler: func(_ context.Context, err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() },
				})
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error)
				go func() { done <- r.Run(ctx) }()
				time.Sleep(2*defaultInitialEventsTimeout + time.Second)
				if lists.Load() != 1 {
					t.Errorf("%d lists after 2 timeouts of a busy stream; want the fallback list", lists.Load())
				}
				mu.Lock()
				if len(reported) == 0 || !errors.Is(reported[0], ErrNoInitialEventsEnd) {
					t.Errorf("reported %v; want ErrNoInitialEventsEnd", reported)
				}
				mu.Unlock()
				cancel()
				<-done
				feeders.Wait()
			})
		})
	}
}

// pullWatch is a watch the Reflector reads through NextEvent: its events,
// then a read that blocks until Stop. ResultChan must not be used.
type pullWatch struct {
	events  []watch.Event
	stopped chan struct{}
	once    sync.Once
	channed atomic.Bool
}

func newPullWatch(events ...watch.Event) *pullWatch {
	return &pullWatch{events: events, stopped: make(chan struct{})}
}

func (w *pullWatch) NextEvent() (watch.Event, bool) {
	if len(w.events) > 0 {
		ev := w.events[0]
		w.events = w.events[1:]
		return ev, true
	}
	<-w.stopped
	return watch.Event{}, false
}

func (w *pullWatch) Stop() { w.once.Do(func() { close(w.stopped) }) }

func (w *pullWatch) ResultChan() <-chan watch.Event {
	w.channed.Store(true)
	return nil
}

// togglingStore fails its resyncs while fail is set.
type togglingStore struct {
	*Store[*corev1.Pod]
	fail atomic.Bool
}

func (s *togglingStore) Resync() error {
	if s.fail.Load() {
		return errors.New("cannot resync")
	}
	return nil
}

// TestReflectorPullsEvents: a watch with NextEvent is read in the
// Reflector's goroutine, never through ResultChan; each event's resource
// version is published as it is applied; a failed resync wakes a blocked
// read and ends the round; cancelling ends Run.
func TestReflectorPullsEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		page := &ListPage[*corev1.Pod]{}
		page.ResourceVersion = "1"
		var watches []*pullWatch
		var lists atomic.Int32
		lw := funcLW{
			ListFunc: func(context.Context, metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
				lists.Add(1)
				return page, nil
			},
			WatchFunc: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
				w := newPullWatch()
				if len(watches) == 0 {
					w = newPullWatch(
						watch.Event{Type: watch.Added, Object: testobj.Pod("ns", "a", "2")},
						watch.Event{Type: watch.Modified, Object: testobj.Pod("ns", "a", "3")},
						watch.Event{Type: watch.Added, Object: testobj.Pod("ns", "b", "4")},
					)
				}
				watches = append(watches, w)
				return w, nil
			},
		}
		store := &togglingStore{Store: podStore()}
		var reported []string
		r, stop := runReflector(t, lw, store, ReflectorOptions{WatchList: WatchListOff, ResyncPeriod: time.Minute,
			WatchErrorHandler: func(_ context.Context, err error) { reported = append(reported, err.Error()) }})
		if got := r.LastSyncResourceVersion(); got != "4" || store.Len() != 2 {
			t.Errorf("after the pulled events: resource version %q, %d objects; want 4 and 2", got, store.Len())
		}
		store.fail.Store(true)
		time.Sleep(time.Minute + 5*time.Second) // the resync, then the backoff before the relist
		synctest.Wait()
		if want := []string{"informer: resync: cannot resync"}; !slices.Equal(reported, want) {
			t.Errorf("reported %q, want %q: the failed resync must wake the blocked read", reported, want)
		}
		if n := lists.Load(); n != 2 {
			t.Errorf("%d lists, want 2", n)
		}
		store.fail.Store(false)
		if err := stop(); err != nil {
			t.Error(err)
		}
		for i, w := range watches {
			if w.channed.Load() {
				t.Errorf("watch %d was read through ResultChan", i)
			}
		}
	})
}

// replaceableWatch is a fake watch-list stream that says whether it is
// better replaced after its initial events, and counts its Stop calls.
type replaceableWatch struct {
	*watch.FakeWatcher
	replace bool
	stops   *atomic.Int32
}

func (w replaceableWatch) ReplaceAfterInitialEvents() bool { return w.replace }
func (w replaceableWatch) Stop()                           { w.stops.Add(1); w.FakeWatcher.Stop() }

// TestWatchListStreamReplacedAfterInitialEvents: a watch-list stream that
// says it is better replaced (package wire's, when the server compressed
// it) is stopped at its initial-events-end bookmark, and a plain watch from
// the bookmark's resource version carries on, delivering what the stream
// would have; a stream that does not say so is read on, with no second
// watch.
func TestWatchListStreamReplacedAfterInitialEvents(t *testing.T) {
	for _, replace := range []bool{true, false} {
		t.Run(fmt.Sprintf("replace=%v", replace), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var stops atomic.Int32
				var opts []metav1.ListOptions
				var first, second *watch.FakeWatcher
				lw := funcLW{WatchFunc: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
					opts = append(opts, o)
					w := watch.NewFakeWithChanSize(4, false)
					if len(opts) == 1 {
						first = w
						w.Add(testobj.Pod("ns", "a", "1"))
						end := testobj.Pod("", "", "2")
						end.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
						w.Action(watch.Bookmark, end)
						// After the bookmark: read from this stream only
						// if it is kept; a replacing watch from "2" sends it
						// again.
						w.Add(testobj.Pod("ns", "b", "3"))
					} else {
						second = w
						w.Add(testobj.Pod("ns", "b", "3"))
					}
					return replaceableWatch{w, replace, &stops}, nil
				}}
				store := podStore()
				r, stop := runReflector(t, lw, store, ReflectorOptions{WatchList: WatchListOn})
				if _, ok := store.GetByKey("ns/b"); !ok {
					t.Error("ns/b, sent after the initial events, is not in the store")
				}
				if got := r.LastSyncResourceVersion(); got != "3" {
					t.Errorf("LastSyncResourceVersion = %q, want 3", got)
				}
				want := 1
				if replace {
					want = 2
				}
				if len(opts) != want {
					t.Fatalf("%d watches, want %d", len(opts), want)
				}
				if replace {
					if stops.Load() == 0 {
						t.Error("the replaced stream was not stopped")
					}
					o := opts[1]
					if o.ResourceVersion != "2" || o.SendInitialEvents != nil || !o.AllowWatchBookmarks {
						t.Errorf("replacing watch asked with %+v, want a plain watch from the bookmark's version 2", o)
					}
					if second == nil || !first.IsStopped() {
						t.Error("the first stream is still open")
					}
				}
				if err := stop(); err != nil {
					t.Error(err)
				}
			})
		})
	}
}

// runReflector makes a Reflector of lw into store and starts it (see
// startReflector).
func runReflector(t *testing.T, lw ListerWatcher[*corev1.Pod], store ReflectorStore[*corev1.Pod], opts ReflectorOptions) (r *Reflector[*corev1.Pod], stop func() error) {
	t.Helper()
	r, err := NewReflector(lw, store, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, startReflector(t, r)
}

// startReflector runs r, in a synctest bubble, until everything in the
// bubble is blocked. stop ends Run and returns its error.
func startReflector(t *testing.T, r *Reflector[*corev1.Pod]) (stop func() error) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	synctest.Wait()
	return func() error { cancel(); return <-done }
}
