package clientgo

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/typedkube/informer"
)

// calls records what a client-go handler is told, as lines.
type calls struct {
	mu    sync.Mutex
	lines []string
	more  chan struct{}
}

func newCalls() *calls { return &calls{more: make(chan struct{}, 1)} }

func (c *calls) add(format string, args ...any) {
	c.mu.Lock()
	c.lines = append(c.lines, fmt.Sprintf(format, args...))
	c.mu.Unlock()
	select {
	case c.more <- struct{}{}:
	default:
	}
}

func (c *calls) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) { c.add("add %s %v", obj.(*corev1.Pod).Name, initial) },
		UpdateFunc: func(old, new any) {
			c.add("update %s %s->%s", new.(*corev1.Pod).Name, old.(*corev1.Pod).Spec.NodeName, new.(*corev1.Pod).Spec.NodeName)
		},
		DeleteFunc: func(obj any) {
			switch o := obj.(type) {
			case cache.DeletedFinalStateUnknown:
				c.add("delete-unknown %s", o.Key)
			case *corev1.Pod:
				c.add("delete %s", o.Name)
			}
		},
	}
}

func (c *calls) waitFor(t *testing.T, n int) []string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		c.mu.Lock()
		if len(c.lines) >= n {
			out := append([]string(nil), c.lines...)
			c.mu.Unlock()
			return out
		}
		c.mu.Unlock()
		select {
		case <-c.more:
		case <-timeout:
			t.Fatalf("waited for %d calls, got %q", n, c.lines)
		}
	}
}

// The same client-go handler, registered through Handler on our informer
// and directly on client-go's, over one fake clientset (through
// ListerWatcher on our side), is told the same things.
func TestHandlerAndListerWatcherMatchClientGo(t *testing.T) {
	cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"}})
	watching := make(chan struct{}, 4)
	// The fake's typed watch cannot end a watch-list stream: fakePods says
	// so, as client-go's fake clientsets do, for both informers.
	marked := fakePods(cs, watching)
	theirs := cache.NewSharedIndexInformer(marked, &corev1.Pod{}, 0, cache.Indexers{})
	ours, err := informer.NewSharedIndexInformer(ListerWatcher[*corev1.Pod](marked), informer.SharedIndexInformerOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	ourCalls, theirCalls := newCalls(), newCalls()
	if _, err := ours.AddEventHandler(Handler[*corev1.Pod](ourCalls.handler())); err != nil {
		t.Fatal(err)
	}
	if _, err := theirs.AddEventHandler(theirCalls.handler()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = ours.Run(ctx) })
	wg.Go(func() { theirs.RunWithContext(ctx) })
	defer func() { cancel(); wg.Wait() }()
	if !cache.WaitForCacheSync(ctx.Done(), ours.HasSynced, theirs.HasSynced) {
		t.Fatal("not synced")
	}
	<-watching
	<-watching
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "api"}}
	if _, err := cs.CoreV1().Pods("a").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.Spec.NodeName = "n1"
	if _, err := cs.CoreV1().Pods("a").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods("a").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := theirCalls.waitFor(t, 4)
	got := ourCalls.waitFor(t, 4)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-client-go +ours):\n%s", diff)
	}
	if len(want) != 4 {
		t.Errorf("client-go's handler got %q", want)
	}
}

type noWatchList struct{ *cache.ListWatch }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }
