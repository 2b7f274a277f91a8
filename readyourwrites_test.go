package informer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestWaitForResourceVersionReadsOwnWrites: a writer that waits for the
// resourceVersion of each create before reading finds every object it made.
func TestWaitForResourceVersionReadsOwnWrites(t *testing.T) {
	src := newFakeSource()
	inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
	if _, ok := inf.AppliedResourceVersion(); ok {
		t.Error("AppliedResourceVersion is set before the informer started")
	}
	stop := startInformer(t, inf)
	defer stop()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for i := range 300 {
		p := src.Add(factoryPod("ns", fmt.Sprintf("p%03d", i), ""))
		l, err := inf.Lister().AtLeast(ctx, p.ResourceVersion)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.ByNamespace("ns").Get(p.Name); err != nil {
			t.Fatalf("after waiting for %s: %v", p.ResourceVersion, err)
		}
	}
	rv, ok := inf.AppliedResourceVersion()
	if n, _ := strconv.Atoi(rv); !ok || n < 300 {
		t.Errorf("AppliedResourceVersion = %q, %v; want at least 300", rv, ok)
	}
}

// TestWaitForResourceVersionBlocks: a wait for a version the cache has not
// reached blocks, its error names both versions when the context ends, and
// it returns once the changes are applied; many waiters share the wake-up.
func TestWaitForResourceVersionBlocks(t *testing.T) {
	src := newFakeSource()
	src.Add(factoryPod("ns", "a", ""))
	inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
	stop := startInformer(t, inf)
	defer stop()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// The source starts at version 1, as etcd does: a is version 2.
	if err := inf.WaitForResourceVersion(ctx, "2"); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	err := inf.WaitForResourceVersion(short, "4")
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "resourceVersion 4") || !strings.Contains(err.Error(), "applied 2") {
		t.Errorf("wait for 4 at 2: %v; want a deadline error naming 4 and 2", err)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Go(func() { errs <- inf.WaitForResourceVersion(ctx, strconv.Itoa(3+i%20)) })
	}
	for i := range 20 {
		src.Add(factoryPod("ns", fmt.Sprintf("b%d", i), ""))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestWaitForResourceVersionErrors: versions that cannot be compared, the
// DeltaFIFO mode, a stopped informer and a lister without an informer are
// clear errors, returned at once.
func TestWaitForResourceVersionErrors(t *testing.T) {
	src := newFakeSource()
	inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
	for _, rv := range []string{"", "abc", "012", "0", "-1"} {
		if err := inf.WaitForResourceVersion(t.Context(), rv); !errors.Is(err, ErrInvalidResourceVersion) {
			t.Errorf("WaitForResourceVersion(%q) = %v, want ErrInvalidResourceVersion", rv, err)
		}
	}
	fifo := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{Queue: QueueDeltaFIFO})
	if err := fifo.WaitForResourceVersion(t.Context(), "1"); !errors.Is(err, ErrNotInOrder) {
		t.Errorf("DeltaFIFO mode: %v, want ErrNotInOrder", err)
	}
	stop := startInformer(t, inf)
	done := make(chan error, 1)
	go func() { done <- inf.WaitForResourceVersion(context.Background(), "1000") }()
	stop()
	select {
	case err := <-done:
		if !errors.Is(err, ErrStopped) {
			t.Errorf("wait across stop: %v, want ErrStopped", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a wait did not end when the informer stopped")
	}
	var zero Lister[*corev1.Pod]
	if _, err := zero.AtLeast(t.Context(), "1"); !errors.Is(err, ErrNotInOrder) {
		t.Errorf("lister without informer: %v, want ErrNotInOrder", err)
	}
}

// TestWaitForResourceVersionAfterEmptyList: an informer that lists its
// source before the first write (the LIST of an empty source) reads its
// own writes like one that listed objects. Regression: the fake listed an
// empty source at resourceVersion "0", the informer watched from "0", and
// every ADDED event of that watch counted as an unordered replay, so a
// wait for a create's version lasted until its context ended.
func TestWaitForResourceVersionAfterEmptyList(t *testing.T) {
	src := newFakeSource()
	inf := newPodInformer(t, src, SharedIndexInformerOptions[*corev1.Pod]{})
	startInformer(t, inf)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := WaitForCacheSync(ctx, inf); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		p := src.Add(factoryPod("ns", fmt.Sprintf("p%d", i), ""))
		l, err := inf.Lister().AtLeast(ctx, p.ResourceVersion)
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		if _, err := l.ByNamespace("ns").Get(p.Name); err != nil {
			t.Fatalf("after waiting for %s: %v", p.ResourceVersion, err)
		}
	}
}

// TestWaitForResourceVersionOverFakeClientset: client-go's fake clientset
// lists at a version ("1" while empty, as etcd), so an informer over it
// watches in order; but the objects it writes carry no resource version,
// and a wait for "" fails at once with ErrInvalidResourceVersion, saying
// why. An object a test writes with a version can be waited for.
func TestWaitForResourceVersionOverFakeClientset(t *testing.T) {
	cs := fake.NewClientset()
	started := watchStarted(cs, "pods")
	f, err := NewFactoryForClients(FactoryClients{Kube: cs}, FactoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Shutdown)
	pods, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	syncFactory(t, t.Context(), f)
	<-started
	if rv, ok := pods.AppliedResourceVersion(); rv != "1" || !ok {
		t.Errorf("AppliedResourceVersion after the fake's list = %q, %v; want 1, true", rv, ok)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	created, err := cs.CoreV1().Pods("ns").Create(ctx, factoryPod("ns", "a", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = pods.Lister().AtLeast(ctx, created.ResourceVersion)
	if !errors.Is(err, ErrInvalidResourceVersion) || ctx.Err() != nil || !strings.Contains(err.Error(), "fake clientset") {
		t.Errorf("wait for the fake's create (resourceVersion %q): %v; want ErrInvalidResourceVersion at once, naming the fake clientset", created.ResourceVersion, err)
	}
	versioned := factoryPod("ns", "b", "")
	versioned.ResourceVersion = "5"
	if _, err := cs.CoreV1().Pods("ns").Create(ctx, versioned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := pods.Lister().AtLeast(ctx, "5")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.ByNamespace("ns").Get("b"); err != nil {
		t.Errorf("after waiting for 5: %v", err)
	}
}
