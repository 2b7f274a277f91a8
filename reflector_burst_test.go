package informer

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedkube/informer/internal/testobj"
)

// burstStore is a Store that records, for each write, what the Reflector
// said of the events behind it (noteBurst).
type burstStore struct {
	*Store[*corev1.Pod]
	more   bool
	writes []string
}

func (s *burstStore) noteBurst(more bool) { s.more = more }

func (s *burstStore) Update(p *corev1.Pod) error {
	if s.more {
		s.writes = append(s.writes, p.Name+" more")
	} else {
		s.writes = append(s.writes, p.Name+" last")
	}
	return s.Store.Update(p)
}

// pulledWatch is a watch the Reflector pulls from (eventPuller) that says
// how many events it holds (bufferedWatch), as package wire's do.
type pulledWatch struct {
	evs     []watch.Event
	stopped chan struct{}
	stop    sync.Once
}

func (w *pulledWatch) Stop()                          { w.stop.Do(func() { close(w.stopped) }) }
func (w *pulledWatch) ResultChan() <-chan watch.Event { panic("a pulled watch has no channel") }

func (w *pulledWatch) NextEvent() (watch.Event, bool) {
	if len(w.evs) == 0 {
		<-w.stopped
		return watch.Event{}, false
	}
	ev := w.evs[0]
	w.evs = w.evs[1:]
	return ev, true
}

func (w *pulledWatch) MoreBuffered() bool { return len(w.evs) > 0 }

// The Reflector tells a store that wants to know (the informer's event
// queue) whether another event has already arrived behind the one it
// writes, from a watch's channel and from a watch it pulls from: three
// events received at once are "more", "more", "last".
func TestReflectorNotesBursts(t *testing.T) {
	for _, pull := range []bool{false, true} {
		name := map[bool]string{false: "channel", true: "pull"}[pull]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				evs := []watch.Event{
					{Type: watch.Modified, Object: testobj.Pod("ns", "a", "2")},
					{Type: watch.Modified, Object: testobj.Pod("ns", "b", "3")},
					{Type: watch.Modified, Object: testobj.Pod("ns", "c", "4")},
				}
				lw := ListWatchFuncs[*corev1.Pod]{
					ListFunc: func(context.Context, metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
						return &ListPage[*corev1.Pod]{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
					},
					WatchFunc: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
						if pull {
							return &pulledWatch{evs: slices.Clone(evs), stopped: make(chan struct{})}, nil
						}
						w := watch.NewFakeWithChanSize(len(evs), false)
						for _, ev := range evs {
							w.Action(ev.Type, ev.Object)
						}
						return w, nil
					},
				}
				store := &burstStore{Store: NewStore(MetaNamespaceKeyFunc[*corev1.Pod])}
				_, stop := runReflector(t, lw, store, ReflectorOptions{WatchList: WatchListOff})
				defer stop()
				if want := []string{"a more", "b more", "c last"}; !slices.Equal(store.writes, want) {
					t.Errorf("writes %q, want %q", store.writes, want)
				}
			})
		})
	}
}
