package clientgo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/typedkube/informer"
)

// fakePods is a client-go ListWatch of the Pods of namespace a in cs,
// marked as lacking watch-list semantics as client-go's fakes are, which
// reports each watch it opens on watching.
func fakePods(cs *fake.Clientset, watching chan<- struct{}) noWatchList {
	return noWatchList{&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().Pods("a").List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := cs.CoreV1().Pods("a").Watch(ctx, o)
			watching <- struct{}{}
			return w, err
		},
	}}
}

// Code written against client-go's cache.SharedIndexInformer runs on ours
// through the adapter: the same client-go handler gets the same calls as
// on client-go's own informer over the same clientset, a generated lister
// reads our cache, and cache.WaitForCacheSync works on the informer and
// on the registration. The same holds for our informer with a compact
// store.
func TestSharedIndexInformerMatchesClientGo(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprint("compact=", compact), func(t *testing.T) { testSharedIndexInformerMatchesClientGo(t, compact) })
	}
}

func testSharedIndexInformerMatchesClientGo(t *testing.T, compact bool) {
	cs := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web", Labels: map[string]string{"app": "web"}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "db", Labels: map[string]string{"app": "db"}}},
	)
	watching := make(chan struct{}, 4)
	lw := fakePods(cs, watching)
	theirs := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	typed, err := informer.NewSharedIndexInformer(ListerWatcher[*corev1.Pod](lw), informer.SharedIndexInformerOptions[*corev1.Pod]{Compact: compact})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := typed.GetIndexer().Compact(); got != compact {
		t.Fatalf("the cache is compact: %v, want %v", got, compact)
	}
	var ours cache.SharedIndexInformer = SharedIndexInformer(typed)

	// The controller's wiring, written for client-go, used on both.
	wire := func(inf cache.SharedIndexInformer) (*calls, cache.ResourceEventHandlerRegistration) {
		c := newCalls()
		reg, err := inf.AddEventHandlerWithResyncPeriod(c.handler(), 0)
		if err != nil {
			t.Fatal(err)
		}
		return c, reg
	}
	ourCalls, ourReg := wire(ours)
	theirCalls, theirReg := wire(theirs)

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { ours.RunWithContext(ctx) })
	wg.Go(func() { theirs.RunWithContext(ctx) })
	defer func() { cancel(); wg.Wait() }()
	if !cache.WaitForCacheSync(ctx.Done(), ours.HasSynced, ourReg.HasSynced, theirs.HasSynced, theirReg.HasSynced) {
		t.Fatal("not synced")
	}
	select {
	case <-ours.HasSyncedChecker().Done():
	default:
		t.Error("HasSyncedChecker is not done once synced")
	}
	<-watching
	<-watching

	lister := corev1listers.NewPodLister(ours.GetIndexer())
	if p, err := lister.Pods("a").Get("web"); err != nil || p.Name != "web" {
		t.Errorf("generated lister Get = %v, %v", p, err)
	}
	if _, err := lister.Pods("a").Get("nope"); !apierrors.IsNotFound(err) {
		t.Errorf("generated lister Get of a missing Pod = %v, want NotFound", err)
	}
	sel := labels.SelectorFromSet(labels.Set{"app": "db"})
	if got, err := lister.List(sel); err != nil || len(got) != 1 || got[0].Name != "db" {
		t.Errorf("generated lister List(app=db) = %v, %v", got, err)
	}

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
	want := theirCalls.waitFor(t, 5)
	got := ourCalls.waitFor(t, 5)
	// The initial adds come in list order on both sides.
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-client-go +ours):\n%s", diff)
	}
	if ours.LastSyncResourceVersion() == "" || ours.IsStopped() {
		t.Errorf("LastSyncResourceVersion %q, IsStopped %v", ours.LastSyncResourceVersion(), ours.IsStopped())
	}

	// Removed, the handler hears nothing more.
	if err := ours.RemoveEventHandler(ourReg); err != nil {
		t.Fatal(err)
	}
	if err := ours.RemoveEventHandler(theirReg); !errors.Is(err, ErrForeignRegistration) {
		t.Errorf("RemoveEventHandler of client-go's registration = %v, want ErrForeignRegistration", err)
	}
}

// A transform returning another type, a watch error handler, AddIndexers
// and Run with a stop channel, through the adapter.
func TestSharedIndexInformerOptions(t *testing.T) {
	cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"}})
	watching := make(chan struct{}, 4)
	typed, err := informer.NewSharedIndexInformer(ListerWatcher[*corev1.Pod](fakePods(cs, watching)), informer.SharedIndexInformerOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	inf := SharedIndexInformer(typed)
	reported := make(chan error, 16)
	if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) {
		if r == nil || r.TypeDescription() == "" {
			t.Error("the watch error handler got no stand-in reflector")
		}
		cache.DefaultWatchErrorHandler(context.Background(), r, err) // must not panic on the stand-in
		select {
		case reported <- err:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := inf.SetTransform(func(any) (any, error) { return &corev1.ConfigMap{}, nil }); err != nil {
		t.Fatal(err)
	}
	byNode := func(obj any) ([]string, error) { return []string{obj.(*corev1.Pod).Spec.NodeName}, nil }
	if err := inf.AddIndexers(cache.Indexers{"node": byNode}); err != nil {
		t.Fatal(err)
	}
	if _, ok := inf.GetIndexer().GetIndexers()["node"]; !ok {
		t.Error("AddIndexers did not add the index")
	}
	// Without a resync period of its own, a handler's is ignored, as in
	// client-go, not refused.
	if _, err := inf.AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{}, 30e9); err != nil {
		t.Errorf("AddEventHandlerWithResyncPeriod = %v, want it registered", err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); inf.GetController().Run(stop) }()
	if err := <-reported; !errors.Is(err, ErrWrongType) {
		t.Errorf("the transform's wrong type was reported as %v, want ErrWrongType", err)
	}
	if inf.HasSynced() {
		t.Error("synced although every object failed its transform")
	}
	close(stop)
	<-done
	if !inf.IsStopped() {
		t.Error("not stopped after its stop channel closed")
	}
	if err := inf.SetTransform(nil); err == nil {
		t.Error("SetTransform after Run succeeded")
	}
}
