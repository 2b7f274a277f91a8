package informer

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/typedkube/informer/internal/watchqueue"
)

// fakeSource is a tiny API server for Pods: it versions every change, lists
// the current state and streams changes to watchers from any resource
// version it still has. Like etcd behind the API server, it starts at
// version 1: an empty source lists at "1", and its first change is "2"
// (a LIST at "0" would make informers watch from "0", an unordered replay). Compact makes older versions unavailable (410 Gone),
// DropWatches ends every watch, so that informers re-watch or relist. It
// serves our ListerWatcher and client-go's from the same state, handing
// both the same pointers.
type fakeSource struct {
	mu        sync.Mutex
	rv        int // the last change's version; 1 before the first
	objs      map[string]*corev1.Pod
	history   []watch.Event // the changes after compacted
	compacted int
	watchers  map[*fakeWatch]struct{}
	listErr   error
	offline   bool // list and watch fail; changes still happen
	lists     int
	watches   int
	trace     func(format string, args ...any) // if set, told about each list and watch
}

func newFakeSource() *fakeSource {
	return &fakeSource{rv: 1, objs: map[string]*corev1.Pod{}, watchers: map[*fakeWatch]struct{}{}}
}

// change records an event, stamping p with the next resource version.
func (s *fakeSource) change(t watch.EventType, p *corev1.Pod) *corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	p.ResourceVersion = strconv.Itoa(s.rv)
	key := mustKey(p)
	if t == watch.Deleted {
		delete(s.objs, key)
	} else {
		s.objs[key] = p
	}
	ev := watch.Event{Type: t, Object: p}
	s.history = append(s.history, ev)
	for w := range s.watchers {
		w.Send(ev)
	}
	return p
}

func (s *fakeSource) tracef(format string, args ...any) {
	if s.trace != nil {
		s.trace(format, args...)
	}
}

func (s *fakeSource) Add(p *corev1.Pod) *corev1.Pod    { return s.change(watch.Added, p) }
func (s *fakeSource) Modify(p *corev1.Pod) *corev1.Pod { return s.change(watch.Modified, p) }

// Delete deletes the Pod with p's key; the event carries p as the final
// state.
func (s *fakeSource) Delete(p *corev1.Pod) *corev1.Pod { return s.change(watch.Deleted, p) }

// Compact forgets the history: a watch from an older version gets 410 Gone.
func (s *fakeSource) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compacted, s.history = s.rv, nil
}

// DropWatches ends every open watch.
func (s *fakeSource) DropWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropWatchesLocked()
}

func (s *fakeSource) dropWatchesLocked() {
	for w := range s.watchers {
		w.Stop()
		delete(s.watchers, w)
	}
}

// Relist makes every informer list again: it compacts and drops watches.
func (s *fakeSource) Relist() {
	s.Compact()
	s.DropWatches()
}

// Offline makes list and watch fail with 503 and ends every watch; Online
// undoes it. Changes made meanwhile are missed by the watchers.
func (s *fakeSource) Offline() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offline = true // before the watches end, so that no watch starts in between
	s.dropWatchesLocked()
}

func (s *fakeSource) Online() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offline = false
}

func (s *fakeSource) SetListError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listErr = err
}

func (s *fakeSource) Pods() []*corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(s.objs))
	for _, p := range s.objs {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return cmpKey(mustKey(a), mustKey(b)) })
	return out
}

func cmpKey(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s *fakeSource) list() ([]*corev1.Pod, string, error) {
	s.mu.Lock()
	s.lists++
	err, rv := s.listErr, strconv.Itoa(s.rv)
	if s.offline {
		err = errOffline
	}
	s.mu.Unlock()
	if err != nil {
		return nil, "", err
	}
	return s.Pods(), rv, nil
}

func (s *fakeSource) watch(opts metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watches++
	if s.offline {
		return nil, errOffline
	}
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		return nil, apierrors.NewBadRequest("fakeSource: no watch-list")
	}
	from, err := strconv.Atoi(opts.ResourceVersion)
	if err != nil {
		return nil, apierrors.NewBadRequest("fakeSource: resource version " + strconv.Quote(opts.ResourceVersion))
	}
	if from < s.compacted {
		return nil, apierrors.NewResourceExpired("fakeSource: too old resource version " + opts.ResourceVersion)
	}
	w := newFakeWatch()
	for _, ev := range s.history {
		if rv, _ := strconv.Atoi(ev.Object.(*corev1.Pod).ResourceVersion); rv > from {
			w.Send(ev)
		}
	}
	s.watchers[w] = struct{}{}
	return w, nil
}

// Typed is the source as our ListerWatcher.
func (s *fakeSource) Typed() ListerWatcher[*corev1.Pod] { return typedSource{s} }

type typedSource struct{ s *fakeSource }

func (t typedSource) List(_ context.Context, opts metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
	t.s.tracef("typed list rv=%q", opts.ResourceVersion)
	items, rv, err := t.s.list()
	if err != nil {
		return nil, err
	}
	return &ListPage[*corev1.Pod]{Items: items, ListMeta: metav1.ListMeta{ResourceVersion: rv}}, nil
}

func (t typedSource) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := t.s.watch(opts)
	t.s.tracef("typed watch rv=%q: %v", opts.ResourceVersion, err)
	return w, err
}

// Upstream is the source as client-go's ListerWatcher.
func (s *fakeSource) Upstream() cache.ListerWatcher {
	return &cache.ListWatch{
		ListWithContextFunc: func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			s.tracef("upstream list rv=%q", opts.ResourceVersion)
			items, rv, err := s.list()
			if err != nil {
				return nil, err
			}
			l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
			for _, p := range items {
				l.Items = append(l.Items, *p)
			}
			return l, nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := s.watch(opts)
			s.tracef("upstream watch rv=%q: %v", opts.ResourceVersion, err)
			return w, err
		},
	}
}

// fakeWatch is a watch that never blocks the source (see watchqueue).
type fakeWatch = watchqueue.Watch

func newFakeWatch() *fakeWatch { return watchqueue.New(context.Background()) }

var (
	errListFailed = errors.New("fakeSource: list failed")
	errOffline    = apierrors.NewServiceUnavailable("fakeSource: offline")
)
