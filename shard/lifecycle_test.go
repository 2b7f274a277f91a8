package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
)

// configMaps returns the first n configMap objects.
func configMaps(n int) []*corev1.ConfigMap {
	out := make([]*corev1.ConfigMap, n)
	for i := range out {
		out[i] = configMap(i)
	}
	return out
}

// TestSecondRunLeavesInformerAttached: a second Run of a sharded Informer
// returns ErrStarted and leaves the running one on its Member, which goes on
// moving it (it used to detach it: the informer then kept every bucket it
// had and two replicas handled the same objects).
func TestSecondRunLeavesInformerAttached(t *testing.T) {
	src := informertest.NewSource(configMaps(100)...)
	leases := fake.NewClientset()
	l := newLog()
	a := startReplica(t, leases, src, l, "a")
	waitConverged(t, []*replica{a}, src)
	if err := a.inf.Run(t.Context()); !errors.Is(err, informer.ErrStarted) {
		t.Fatalf("second Run = %v, want ErrStarted", err)
	}
	b := startReplica(t, leases, src, l, "b")
	waitConverged(t, []*replica{a, b}, src)
}

// TestMemberRunsOnce: a Member that joined and left is done: a second Run
// says so (ErrRunning) rather than working, silently, from the Leases its
// first Run last saw, which never showed a member that joined later.
func TestMemberRunsOnce(t *testing.T) {
	leases := fake.NewClientset()
	m, err := NewMember(Options{
		Leases: leases.CoordinationV1(), Namespace: "leases", Group: "cms", Identity: "a",
		LeaseDuration: 2 * time.Second, RenewInterval: 200 * time.Millisecond, Buckets: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	<-m.Ready()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Were it to run, it would return nil when this context ends.
	again, cancelAgain := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancelAgain()
	if err := m.Run(again); !errors.Is(err, ErrRunning) {
		t.Errorf("Run after a Run that joined = %v, want ErrRunning", err)
	}
}

// TestMemberRunRetriesJoin: a Run that could not join leaves the Member
// able to try again.
func TestMemberRunRetriesJoin(t *testing.T) {
	leases := fake.NewClientset()
	a := startReplica(t, leases, informertest.NewSource[*corev1.ConfigMap](), newLog(), "a")
	<-a.member.Ready()
	other, err := NewMember(Options{Leases: leases.CoordinationV1(), Namespace: "leases", Group: "cms", Identity: "a", LeaseDuration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := other.Run(t.Context()); !errors.Is(err, ErrIdentityInUse) {
			t.Fatalf("Run = %v, want ErrIdentityInUse each time", err)
		}
	}
}

// blockingReleaser blocks in its first OnRelease until released, and
// counts the calls it gets after removed is set.
type blockingReleaser struct {
	informertest.Recorder[*corev1.ConfigMap]
	first        sync.Once
	entered      chan struct{}
	proceed      chan struct{}
	removed      atomic.Bool
	afterRemoval atomic.Int64
}

func (r *blockingReleaser) OnRelease(*corev1.ConfigMap) {
	if r.removed.Load() {
		r.afterRemoval.Add(1)
	}
	r.first.Do(func() { close(r.entered); <-r.proceed })
}

// TestNoReleaseAfterRemoveEventHandler: once RemoveEventHandler has
// returned, a giving up under way calls the removed handler's OnRelease no
// more but for the call in flight (it used to go on, once per object).
func TestNoReleaseAfterRemoveEventHandler(t *testing.T) {
	src := informertest.NewSource(configMaps(100)...)
	leases := fake.NewClientset()
	a := startReplica(t, leases, src, newLog(), "a")
	waitConverged(t, []*replica{a}, src)
	h := &blockingReleaser{entered: make(chan struct{}), proceed: make(chan struct{})}
	reg, err := a.inf.AddEventHandler(h)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := h.WaitFor(ctx, "100 adds", func(c []informertest.Call[*corev1.ConfigMap]) bool { return len(c) == 100 }); err != nil {
		t.Fatal(err)
	}
	b := startReplica(t, leases, src, newLog(), "b") // a gives about half its buckets up
	select {
	case <-h.entered:
	case <-ctx.Done():
		t.Fatal("no OnRelease")
	}
	if err := a.inf.RemoveEventHandler(reg); err != nil {
		t.Fatal(err)
	}
	h.removed.Store(true)
	close(h.proceed)
	waitConverged(t, []*replica{a, b}, src)
	if n := h.afterRemoval.Load(); n > 0 {
		t.Errorf("%d OnRelease calls after RemoveEventHandler returned", n)
	}
}

// TestNoReleaseAfterFactoryRemove: the handlers of a sharded informer that
// its factory removed hear nothing more, OnRelease included, and the Member
// forgets the informer (it used to keep it and release to its handlers at
// the next rebalance).
func TestNoReleaseAfterFactoryRemove(t *testing.T) {
	var objs []runtime.Object
	for i := range 100 {
		objs = append(objs, configMap(i))
	}
	f, err := informer.NewFactoryForClients(informer.FactoryClients{Kube: fake.NewClientset(objs...)}, informer.FactoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
	leases := fake.NewClientset()
	m, err := NewMember(Options{
		Leases: leases.CoordinationV1(), Namespace: "leases", Group: "cms", Identity: "a",
		LeaseDuration: 2 * time.Second, RenewInterval: 200 * time.Millisecond, Buckets: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := For[*corev1.ConfigMap](f, m)
	if err != nil {
		t.Fatal(err)
	}
	h := &blockingReleaser{entered: make(chan struct{}), proceed: make(chan struct{})}
	close(h.proceed)
	if _, err := inf.AddEventHandler(h); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	f.Start(ctx)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := h.WaitFor(wctx, "100 adds", func(c []informertest.Call[*corev1.ConfigMap]) bool { return len(c) == 100 }); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(wctx, inf.Informer().Name()); err != nil {
		t.Fatal(err)
	}
	h.removed.Store(true)
	b := startReplica(t, leases, informertest.NewSource[*corev1.ConfigMap](), newLog(), "b")
	<-b.member.Ready()
	deadline := time.Now().Add(5 * time.Second)
	for m.Status().Owned.Len() == 64 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := h.afterRemoval.Load(); n > 0 {
		t.Errorf("%d OnRelease calls after Factory.Remove returned (a owns %d buckets)", n, m.Status().Owned.Len())
	}
}

// TestNilListPage: a List that returns neither a page nor an error is
// passed on for the Reflector to report, not read (a panic in the
// Reflector's goroutine, which ended the program).
func TestNilListPage(t *testing.T) {
	m, err := NewMember(Options{Leases: fake.NewClientset().CoordinationV1(), Namespace: "leases", Group: "cms", Identity: "a", LeaseDuration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	lw := informer.ListWatchFuncs[*corev1.ConfigMap]{
		ListFunc: func(context.Context, metav1.ListOptions) (*informer.ListPage[*corev1.ConfigMap], error) {
			return nil, nil
		},
	}
	inf, err := NewInformer[*corev1.ConfigMap](m, lw, informer.SharedIndexInformerOptions[*corev1.ConfigMap]{})
	if err != nil {
		t.Fatal(err)
	}
	m.readyOnce.Do(func() { close(m.ready) }) // as Member.Run does after its first step
	for _, want := range []Buckets{newBuckets(64), allBuckets(64)} {
		inf.src.setWant(want)
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("List with %d buckets panicked: %v", want.Len(), p)
				}
			}()
			_, _ = inf.src.List(t.Context(), metav1.ListOptions{})
		}()
	}
}

// pager serves src's list in pages of opts.Limit (continue = offset) and
// calls beforeFirstPage while serving the first page.
type pager struct {
	src             *informertest.Source[*corev1.ConfigMap]
	beforeFirstPage func()
}

func (p *pager) List(ctx context.Context, opts metav1.ListOptions) (*informer.ListPage[*corev1.ConfigMap], error) {
	off := 0
	if opts.Continue != "" {
		fmt.Sscanf(opts.Continue, "%d", &off)
	} else if p.beforeFirstPage != nil {
		p.beforeFirstPage()
		p.beforeFirstPage = nil
	}
	all, err := p.src.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	end := len(all.Items)
	if opts.Limit > 0 && off+int(opts.Limit) < end {
		end = off + int(opts.Limit)
		all.Continue = fmt.Sprint(end)
	}
	all.Items = all.Items[off:end]
	return all, nil
}

func (p *pager) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return p.src.Watch(ctx, opts)
}

// span returns buckets from to to (not included) of 64.
func span(from, to int) Buckets {
	b := newBuckets(64)
	for i := from; i < to; i++ {
		b = b.with(i)
	}
	return b
}

// countIn returns how many of src's objects are in b, placed by UID.
func countIn(src *informertest.Source[*corev1.ConfigMap], b Buckets) int {
	n := 0
	for _, o := range src.Objects() {
		if b.HasHash(Hash(field(o, KeyUID))) {
			n++
		}
	}
	return n
}

// TestMoveDuringPagedList: a move between two pages of one LIST: a gain,
// a loss, or both. Every page of it is filtered with the buckets it
// started with, and it is complete for their generation only, so the
// informer moves to the new ones after it. (The pages used to be filtered
// with the buckets of the moment and the list to count for the new
// generation: the gained buckets' objects of the first page never reached
// the cache.)
func TestMoveDuringPagedList(t *testing.T) {
	for name, c := range map[string]struct{ from, to Buckets }{
		"gain":          {from: span(0, 32), to: span(0, 64)},
		"loss":          {from: span(0, 32), to: span(0, 16)},
		"gain and loss": {from: span(0, 32), to: span(16, 48)},
	} {
		t.Run(name, func(t *testing.T) {
			src := informertest.NewSource(configMaps(100)...)
			m, err := NewMember(Options{Leases: fake.NewClientset().CoordinationV1(), Namespace: "leases", Group: "cms", Identity: "a", LeaseDuration: 2 * time.Second, Buckets: 64})
			if err != nil {
				t.Fatal(err)
			}
			p := &pager{src: src}
			inf, err := NewInformer[*corev1.ConfigMap](m, p, informer.SharedIndexInformerOptions[*corev1.ConfigMap]{
				Reflector: informer.ReflectorOptions{PageSize: 30},
			})
			if err != nil {
				t.Fatal(err)
			}
			inf.setActive(c.from)        // as attach does
			p.beforeFirstPage = func() { // as Member.move and moveIn do
				if lost := c.from.Minus(c.to); !lost.Empty() {
					inf.deactivate(lost, c.from.Minus(lost), true)
				}
				if gained := c.to.Minus(c.from); !gained.Empty() {
					inf.activate(gained, c.to)
				}
			}
			m.readyOnce.Do(func() { close(m.ready) })
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { defer close(done); _ = inf.Run(ctx) }()
			defer func() { cancel(); <-done }()
			want := countIn(src, c.to)
			deadline := time.Now().Add(10 * time.Second)
			for inf.Informer().GetIndexer().Len() != want || !inf.pending().Empty() {
				if time.Now().After(deadline) {
					t.Fatalf("the informer caches %d objects, want %d; buckets given up it may hold %v (lists %d, watches %d)",
						inf.Informer().GetIndexer().Len(), want, inf.pending(), src.Lists(), src.Watches())
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// TestMoveAfterRelistAtSameVersion: a move that starts right after a
// relist whose resource version the cache had already applied (nothing was
// written between the two lists, so the server answers the same version)
// reads the cache once the relist is in it. Waiting for the version alone
// returned at once, while the relist was still queued: the move read the
// contents from before it, deleted none of the lost buckets' objects, and
// the cache kept them for good. The e2e TestShardedStall failed so on a
// busy machine, with two replicas joining while a third started.
func TestMoveAfterRelistAtSameVersion(t *testing.T) {
	listed, kept := span(0, 32), span(0, 16)
	src := informertest.NewSource(configMaps(200)...)
	m, err := NewMember(Options{Leases: fake.NewClientset().CoordinationV1(), Namespace: "leases", Group: "cms", Identity: "a", LeaseDuration: 2 * time.Second, Buckets: 64})
	if err != nil {
		t.Fatal(err)
	}
	// The index function holds up the cache's processing of the relist
	// until the move has begun, so that the relist is still queued when
	// the move looks at the cache.
	var hold atomic.Bool
	release := make(chan struct{})
	var releaseOnce sync.Once
	slow := func(*corev1.ConfigMap) ([]string, error) {
		if hold.Load() {
			<-release
		}
		return nil, nil
	}
	p := &pager{src: src}
	inf, err := NewInformer[*corev1.ConfigMap](m, p, informer.SharedIndexInformerOptions[*corev1.ConfigMap]{
		Indexers: informer.Indexers[*corev1.ConfigMap]{"slow": slow},
	})
	if err != nil {
		t.Fatal(err)
	}
	outside := inf.src.outside
	inf.src.outside = func(ctx context.Context, rv string, want Buckets) ([]*corev1.ConfigMap, error) {
		// The cache may go on once the move has begun; the move must wait
		// for it. (Without the wait, the move reads the cache well before
		// this releases it.)
		releaseOnce.Do(func() { time.AfterFunc(200*time.Millisecond, func() { close(release) }) })
		return outside(ctx, rv, want)
	}
	defer releaseOnce.Do(func() { close(release) })
	inf.setActive(newBuckets(64)) // nothing yet: the first list is empty, at the version the relist will answer
	m.readyOnce.Do(func() { close(m.ready) })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = inf.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "the empty list's watch", func() bool {
		inf.src.mu.Lock()
		defer inf.src.mu.Unlock()
		return inf.HasSynced() && len(inf.src.watches) == 1
	})
	hold.Store(true)
	p.beforeFirstPage = func() { // during the relist, half of what it lists is given up
		inf.deactivate(listed.Minus(kept), kept, true)
	}
	inf.activate(listed, listed) // nothing kept: the Reflector relists
	want := countIn(src, kept)
	waitFor(t, fmt.Sprintf("the cache to hold the %d objects of the buckets kept", want), func() bool {
		return inf.Informer().GetIndexer().Len() == want && inf.pending().Empty()
	})
	if got := src.Lists(); got != 2 {
		t.Errorf("%d lists, want 2 (the empty list and the relist; the move after it lists nothing)", got)
	}
}
