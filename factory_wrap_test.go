package informer

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestForProjectionWrapListWatch: ForProjection wraps its ListerWatcher
// with ForOptions.WrapListWatch, as For does (it used to skip it, while
// recording it as the informer's).
func TestForProjectionWrapListWatch(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	f := newTestFactory(t, srv, FactoryOptions{})
	var wrapped atomic.Int32
	wrap := func(lw ListerWatcher[*podSlim]) ListerWatcher[*podSlim] {
		wrapped.Add(1)
		return lw
	}
	if _, err := ForProjection[podSlim, corev1.Pod](f, ForOptions[*podSlim]{WrapListWatch: wrap}); err != nil {
		t.Fatal(err)
	}
	if n := wrapped.Load(); n != 1 {
		t.Errorf("ForProjection called WrapListWatch %d times, want once", n)
	}
}

// barrierMapper holds each RESTMapping call until wg's count of them have
// arrived: concurrent For calls then pass discovery together.
type barrierMapper struct {
	*meta.DefaultRESTMapper
	wg *sync.WaitGroup
}

func (m *barrierMapper) RESTMappingWithContext(ctx context.Context, gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.wg.Done()
	m.wg.Wait()
	return m.DefaultRESTMapper.RESTMappingWithContext(ctx, gk, versions...)
}

// TestWrapListWatchCalledOnce: two For calls that race to make one
// informer call WrapListWatch once between them (each used to call it, and
// the loser's wrapped ListerWatcher, which never ran, was thrown away).
func TestWrapListWatchCalledOnce(t *testing.T) {
	srv := newFakeAPI(t, podsResource)
	known := meta.NewDefaultRESTMapper(nil)
	known.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	var barrier sync.WaitGroup
	barrier.Add(2)
	f := newTestFactory(t, srv, FactoryOptions{RESTMapper: &barrierMapper{known, &barrier}})
	var wrapped atomic.Int32
	wrap := func(lw ListerWatcher[*corev1.Pod]) ListerWatcher[*corev1.Pod] {
		wrapped.Add(1)
		return lw
	}
	var wg sync.WaitGroup
	infs := make([]*SharedIndexInformer[*corev1.Pod], 2)
	for i := range infs {
		wg.Go(func() {
			var err error
			if infs[i], err = For(f, ForOptions[*corev1.Pod]{WrapListWatch: wrap}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if infs[0] != infs[1] {
		t.Fatal("two informers of one type")
	}
	if n := wrapped.Load(); n != 1 {
		t.Errorf("WrapListWatch called %d times for one informer, want once", n)
	}
}
