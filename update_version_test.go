package informer

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// versionWatchedPod is a Pod that counts the reads of its resource version
// made once it is marked replaced.
type versionWatchedPod struct {
	corev1.Pod
	replaced   atomic.Bool
	staleReads atomic.Int64
}

func (p *versionWatchedPod) GetResourceVersion() string {
	if p.replaced.Load() {
		p.staleReads.Add(1)
	}
	return p.Pod.GetResourceVersion()
}

// TestUpdateDoesNotReadReplacedObject: applying an update tells a resync
// (same resource version) from a change without reading the replaced
// object, whose memory is rarely in the CPU's cache by then: its version's
// hash is kept in the cache's slot, also for the objects of a list. Before,
// every update read the old object's resource version. A version that
// repeats has the same hash, and the two versions are then compared.
func TestUpdateDoesNotReadReplacedObject(t *testing.T) {
	pod := func(rv int) *versionWatchedPod {
		p := &versionWatchedPod{}
		p.ObjectMeta = metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: strconv.Itoa(rv)}
		return p
	}
	fw := watch.NewFake()
	first := pod(1)
	lw := ListWatchFuncs[*versionWatchedPod]{
		ListFunc: func(context.Context, metav1.ListOptions) (*ListPage[*versionWatchedPod], error) {
			return &ListPage[*versionWatchedPod]{Items: []*versionWatchedPod{first}, ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
		},
		WatchFunc: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return fw, nil },
	}
	inf, err := NewSharedIndexInformer[*versionWatchedPod](lw, SharedIndexInformerOptions[*versionWatchedPod]{Reflector: ReflectorOptions{WatchList: WatchListOff}})
	if err != nil {
		t.Fatal(err)
	}
	var updates atomic.Int64
	var last atomic.Pointer[versionWatchedPod]
	if _, err := inf.AddEventHandler(ResourceEventHandlerFuncs[*versionWatchedPod]{
		UpdateFunc: func(_, p *versionWatchedPod) { updates.Add(1); last.Store(p) },
	}); err != nil {
		t.Fatal(err)
	}
	startInformer(t, inf)
	waitUntil(t, "the informer synced", inf.HasSynced)

	// Each version is marked replaced once the handler has seen it: every
	// read the informer makes of it as the new object is done by then.
	const n = 50
	pods := []*versionWatchedPod{first}
	first.replaced.Store(true)
	for i := range n {
		p := pod(2 + i)
		fw.Modify(p)
		waitUntil(t, "the update to "+p.ResourceVersion, func() bool { return last.Load() == p })
		p.replaced.Store(true)
		pods = append(pods, p)
	}
	// The same version again: told by comparing the versions themselves.
	// (Without a resync period, the handler gets it, as from client-go.)
	again := pod(1 + n)
	fw.Modify(again)
	waitUntil(t, "the repeated version", func() bool { return last.Load() == again })
	again.replaced.Store(true)
	end := pod(2 + n)
	fw.Modify(end)
	waitUntil(t, "the last update", func() bool { return last.Load() == end })
	if got := updates.Load(); got != n+2 {
		t.Errorf("%d update calls, want %d", got, n+2)
	}
	// The repeated version has the same hash as the one it replaced, which
	// was read then, and only then.
	for i, p := range pods {
		want := int64(0)
		if i == len(pods)-1 {
			want = 1
		}
		if got := p.staleReads.Load(); got != want {
			t.Errorf("version %s: its resource version was read %d times once replaced, want %d", p.ResourceVersion, got, want)
		}
	}
}
