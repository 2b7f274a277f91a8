package informer

import (
	"testing"

	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
)

// While batches keep coming, a listener's two batch buffers are reused:
// a burst delivered batch after batch allocates no buffer per batch. Once
// nothing is pending, they are given back.
func TestListenerBatchBuffers(t *testing.T) {
	l := newListener[*corev1.Pod](ResourceEventHandlerFuncs[*corev1.Pod]{}, HandlerOptions{}, nil)
	p := testobj.Pod("ns", "p", "", "app=web")
	burst := make([]notification[*corev1.Pod], 5000)
	for i := range burst {
		burst[i] = notification[*corev1.Pod]{kind: nUpdate, key: "ns/p", old: p, new: p}
	}
	// One batch as run delivers it: pushed while the previous one is
	// delivered, then taken.
	batch := func() {
		l.push(burst)
		b, _, _ := l.take()
		if b == nil || b.Len() != len(burst) {
			t.Fatalf("took %v, want a batch of %d", b, len(burst))
		}
		l.delivered(b)
	}
	batch()
	batch()
	if allocs := testing.AllocsPerRun(20, batch); allocs > 0 {
		t.Errorf("%.1f allocations per batch of %d during a burst, want the buffers reused", allocs, len(burst))
	}
	if b, _, _ := l.take(); b != nil {
		t.Fatalf("took a batch of %d with nothing pending", b.Len())
	}
	if l.pending.Cap() > 1024 || l.spare.Cap() > 1024 {
		t.Errorf("buffers of %d and %d notifications kept once idle, want at most 1024", l.pending.Cap(), l.spare.Cap())
	}
}
