package sharding

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/harness"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"github.com/typedkube/informer/shard"
)

const (
	buckets       = 128
	leaseDuration = 3 * time.Second
	renewInterval = 500 * time.Millisecond
)

// objectCount is the number of ConfigMaps a test splits (2k with -short).
func objectCount() int {
	if testing.Short() {
		return 2000
	}
	return 10000
}

// ledger records every handler call of every replica, with its time span, and fails a call that
// starts for a key while another replica is in a call for it.
type ledger struct {
	mu       sync.Mutex
	holders  map[string]map[string]bool // key -> replicas that hold it (added, not deleted or released)
	busy     map[string]busyCall        // key -> the call in flight for it
	overlaps []overlap
	calls    map[string]map[string]int // replica -> kind -> count
	history  []entry                   // every call, in the order they ended
}

type busyCall struct{ replica, kind string }

// entry is one handler call.
type entry struct {
	replica, kind, key string
	initial            bool // an add of the initial list (or of a bucket gained)
	echo               bool // an update whose old and new objects have the same resource version
	start, end         time.Time
}

func (e entry) String() string {
	return fmt.Sprintf("%s %s of %s at %s", e.replica, e.kind, e.key, e.start.Format("15:04:05.000000"))
}

// overlap is a call that started for a key while another replica was in a call for it.
type overlap struct {
	key        string
	by, during busyCall
}

func (o overlap) String() string {
	return fmt.Sprintf("%s: %s on %s while %s was in %s", o.key, o.by.kind, o.by.replica, o.during.replica, o.during.kind)
}

func newLedger() *ledger {
	return &ledger{holders: make(map[string]map[string]bool), busy: make(map[string]busyCall), calls: make(map[string]map[string]int)}
}

// overlapsExcept returns the overlaps, except those involving a release by a replica in fenced:
// a replica cut off from the server stops handling before its Lease expires, and tells its
// handler of what it gave up after that, when another replica may have taken over.
func (l *ledger) overlapsExcept(fenced ...string) []overlap {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []overlap
	for _, o := range l.overlaps {
		allowed := false
		for _, f := range fenced {
			allowed = allowed || (o.by.replica == f && o.by.kind == "release") || (o.during.replica == f && o.during.kind == "release")
		}
		if !allowed {
			out = append(out, o)
		}
	}
	return out
}

// callFunc is a handler of ConfigMaps, and a shard.Releaser, that passes each call on to a
// function: its kind (add, update, delete, release), the object's key, and for an add whether
// it is initial, for an update whether it changed nothing.
type callFunc func(kind, key string, initial, echo bool)

func keyOf(obj *corev1.ConfigMap) string { return obj.Namespace + "/" + obj.Name }

func (f callFunc) OnAdd(obj *corev1.ConfigMap, initial bool) { f("add", keyOf(obj), initial, false) }
func (f callFunc) OnUpdate(old, obj *corev1.ConfigMap) {
	f("update", keyOf(obj), false, old.ResourceVersion == obj.ResourceVersion)
}
func (f callFunc) OnDelete(d informer.DeletedObject[*corev1.ConfigMap]) {
	if d.Obj != nil {
		f("delete", keyOf(d.Obj), false, false)
	}
}
func (f callFunc) OnRelease(obj *corev1.ConfigMap) { f("release", keyOf(obj), false, false) }

// handlerFor is replica's handler: each call is recorded in the ledger, and fails when another
// replica is in a call for the same key.
func (l *ledger) handlerFor(replica string) callFunc {
	return func(kind, key string, initial, echo bool) {
		l.do(entry{replica: replica, kind: kind, key: key, initial: initial, echo: echo})
	}
}

func (l *ledger) do(e entry) {
	l.mu.Lock()
	if other, ok := l.busy[e.key]; ok && other.replica != e.replica {
		l.overlaps = append(l.overlaps, overlap{key: e.key, by: busyCall{e.replica, e.kind}, during: other})
	}
	l.busy[e.key] = busyCall{e.replica, e.kind}
	l.mu.Unlock()
	e.start = time.Now()
	time.Sleep(20 * time.Microsecond) // a call takes time
	e.end = time.Now()
	l.mu.Lock()
	delete(l.busy, e.key)
	l.recordLocked(e)
	l.mu.Unlock()
}

// record adds a call made elsewhere (by a replica process) to the ledger.
func (l *ledger) record(e entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recordLocked(e)
}

func (l *ledger) recordLocked(e entry) {
	if l.holders[e.key] == nil {
		l.holders[e.key] = make(map[string]bool)
	}
	switch e.kind {
	case "add", "update":
		l.holders[e.key][e.replica] = true
	default:
		delete(l.holders[e.key], e.replica)
	}
	if l.calls[e.replica] == nil {
		l.calls[e.replica] = make(map[string]int)
	}
	kind := e.kind
	switch {
	case e.initial:
		kind += "(initial)"
	case e.echo:
		kind += "(echo)"
	}
	l.calls[e.replica][kind]++
	l.history = append(l.history, e)
}

func (l *ledger) count(replica, kind string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[replica][kind]
}

// echoes returns each replica's updates that changed nothing (old and new at one resource
// version): what a relist of kept objects delivers.
func (l *ledger) echoes() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int)
	for r, kinds := range l.calls {
		if n := kinds["update(echo)"]; n > 0 {
			out[r] = n
		}
	}
	return out
}

// replica is one controller replica: its own clients (and connections), factory, Member and
// sharded informer of ConfigMaps. Its transport counts the bytes of ConfigMap responses and can
// be cut, as a network partition would.
type replica struct {
	name    string
	clients *kubetest.Clients
	factory *informer.Factory
	member  *shard.Member
	inf     *shard.Informer[*corev1.ConfigMap]
	cut     atomic.Bool
	bytes   atomic.Int64
	cancel  context.CancelFunc
	done    chan struct{}
	stopped atomic.Bool
}

type countingTransport struct {
	rt http.RoundTripper
	r  *replica
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.r.cut.Load() {
		return nil, errors.New("partitioned")
	}
	resp, err := t.rt.RoundTrip(req)
	if err == nil && strings.Contains(req.URL.Path, "/configmaps") {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &t.r.bytes}
	}
	return resp, err
}

func (t countingTransport) WrappedRoundTripper() http.RoundTripper { return t.rt }

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func startReplica(t *testing.T, srv *harness.Server, ns, name string, l *ledger) *replica {
	t.Helper()
	r := &replica{name: name, done: make(chan struct{})}
	cfg := rest.CopyConfig(srv.AdminConfig())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt: rt, r: r} })
	c, err := kubetest.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.clients = c
	r.member, err = shard.NewMember(shard.Options{
		Leases: c.Kube.CoordinationV1(), Namespace: ns, Group: "configmaps", Identity: name,
		LeaseDuration: leaseDuration, RenewInterval: renewInterval, Buckets: buckets,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.factory, err = informer.NewFactory(c.Config, informer.FactoryOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	r.inf, err = shard.For[*corev1.ConfigMap](r.factory, r.member)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.inf.AddEventHandler(l.handlerFor(name)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer close(r.done)
		if err := r.member.Run(ctx); err != nil {
			t.Errorf("%s: Member.Run: %v", name, err)
		}
	}()
	r.factory.Start(ctx)
	t.Cleanup(r.stop)
	return r
}

// stop stops the replica gracefully (its Lease is deleted), or after a cut.
func (r *replica) stop() {
	if r.stopped.Swap(true) {
		return
	}
	r.cancel()
	r.factory.Shutdown()
	<-r.done
	r.clients.Close()
}

// serverObjects lists the namespace's ConfigMaps.
func serverObjects(ctx context.Context, c *kubetest.Clients, ns string) (map[string]*corev1.ConfigMap, error) {
	list, err := c.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]*corev1.ConfigMap, len(list.Items))
	for i := range list.Items {
		o := &list.Items[i]
		out[o.Namespace+"/"+o.Name] = o
	}
	return out, nil
}

// check returns why the live replicas are not settled: each must own what Assign gives it among
// them, cache exactly the server's objects of its buckets, and its handler must hold exactly
// those (every object held by exactly one live replica, deleted ones by none). A replica process
// is checked by what it reports: the buckets it owns and the number of objects it caches.
func check(ctx context.Context, admin *kubetest.Clients, ns string, live []*replica, l *ledger, procs ...*replicaProcess) error {
	var names []string
	for _, r := range live {
		names = append(names, r.name)
	}
	for _, p := range procs {
		names = append(names, p.name)
	}
	want := shard.Assign(names, buckets)
	objs, err := serverObjects(ctx, admin, ns)
	if err != nil {
		return err
	}
	for _, r := range live {
		st := r.inf.Status()
		if !st.Owned.Equal(want[r.name]) {
			return fmt.Errorf("%s owns %d buckets, not the %d Assign gives it (it sees members %v)", r.name, st.Owned.Len(), want[r.name].Len(), st.Members)
		}
		n := 0
		for key, o := range objs {
			if !st.Owned.HasHash(shard.Hash(string(o.UID))) {
				continue
			}
			n++
			cached, ok := r.inf.Informer().GetIndexer().GetByKey(key)
			if !ok || cached.ResourceVersion != o.ResourceVersion {
				return fmt.Errorf("%s: %s missing or stale in its cache", r.name, key)
			}
		}
		if got := r.inf.Informer().GetIndexer().Len(); got != n {
			applied, _ := r.inf.Informer().AppliedResourceVersion()
			stats := r.inf.Informer().Stats()
			return fmt.Errorf("%s caches %d objects, want its %d (reflector at %s, cache at %s, %d lists, %d watches, %d errors)",
				r.name, got, n, r.inf.Informer().LastSyncResourceVersion(), applied, stats.Lists, stats.Watches, stats.Errors)
		}
	}
	for _, p := range procs {
		st := p.status.Load()
		if st == nil || st.Owned != want[p.name].String() || !st.Synced {
			return fmt.Errorf("%s (a process) reports %+v, want to own %v", p.name, st, want[p.name])
		}
		n := 0
		for _, o := range objs {
			if want[p.name].HasHash(shard.Hash(string(o.UID))) {
				n++
			}
		}
		if st.Objects != n {
			return fmt.Errorf("%s (a process) caches %d objects, want its %d", p.name, st.Objects, n)
		}
	}
	isLive := make(map[string]bool)
	for _, name := range names {
		isLive[name] = true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for key, holders := range l.holders {
		var liveHolders []string
		for h := range holders {
			if isLive[h] {
				liveHolders = append(liveHolders, h)
			}
		}
		_, exists := objs[key]
		switch {
		case exists && len(liveHolders) != 1:
			return fmt.Errorf("%s is held by %v, want one live replica", key, liveHolders)
		case !exists && len(liveHolders) != 0:
			return fmt.Errorf("deleted %s is still held by %v", key, liveHolders)
		}
	}
	for key := range objs {
		if _, ok := l.holders[key]; !ok {
			return fmt.Errorf("%s reached no handler", key)
		}
	}
	return nil
}

// settle waits until check passes, for at most the Lease duration plus 30s.
func settle(t *testing.T, admin *kubetest.Clients, ns string, live []*replica, l *ledger, what string, procs ...*replicaProcess) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(leaseDuration + 30*time.Second)
	for {
		err := check(t.Context(), admin, ns, live, l, procs...)
		if err == nil {
			t.Logf("%s: settled in %v", what, time.Since(start).Round(time.Millisecond))
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not settled after %v: %v", what, time.Since(start).Round(time.Second), err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// write creates, updates and deletes ConfigMaps of ns, one change every 5ms, until ctx ends: it
// creates them from number *next on, and updates and deletes among the first n. It counts the
// changes in writes.
func write(ctx context.Context, t *testing.T, admin *kubetest.Clients, ns string, n int, next *int, writes *atomic.Int64) {
	cms := admin.Kube.CoreV1().ConfigMaps(ns)
	for ; ctx.Err() == nil; *next++ {
		var err error
		switch *next % 3 {
		case 0:
			_, err = cms.Create(ctx, configMap(ns, *next), metav1.CreateOptions{})
		case 1:
			cm := configMap(ns, (*next*7919)%n)
			cm.Data["w"] = fmt.Sprint(*next)
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		case 2:
			err = cms.Delete(ctx, fmt.Sprintf("cm-%05d", (*next*104729)%n), metav1.DeleteOptions{})
		}
		if err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) {
			t.Errorf("writer: %v", err)
			return
		}
		writes.Add(1)
		time.Sleep(5 * time.Millisecond)
	}
}

func configMap(ns string, i int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%05d", i)},
		Data:       map[string]string{"i": fmt.Sprint(i)},
	}
}

func populate(t *testing.T, admin *kubetest.Clients, ns string, n int) {
	t.Helper()
	err := kubetest.Parallel(t.Context(), n, 32, func(ctx context.Context, i int) error {
		_, err := admin.Kube.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, i), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// servers runs f against the server with the gate on and the one with it off.
func servers(t *testing.T, f func(t *testing.T, srv *harness.Server, gate bool)) {
	t.Run("gate=on", func(t *testing.T) { f(t, gateOn, true) })
	t.Run("gate=off", func(t *testing.T) { f(t, gateOff, false) })
}

// TestShardedSplit: three replicas over 10k ConfigMaps split them: each object is in exactly one
// replica's cache and handler, each replica caches at most a third plus 10%, and over the wire
// each receives only its share of the changes when the server filters (gate on), every change
// when it does not (gate off, where the replicas say they filter on their side).
func TestShardedSplit(t *testing.T) {
	servers(t, func(t *testing.T, srv *harness.Server, gate bool) {
		admin, err := kubetest.NewClients(srv.AdminConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		ns, err := kubetest.NewNamespace(t.Context(), admin.Kube, "sharded")
		if err != nil {
			t.Fatal(err)
		}
		n := objectCount()
		populate(t, admin, ns, n)
		l := newLedger()
		rs := []*replica{startReplica(t, srv, ns, "a", l), startReplica(t, srv, ns, "b", l), startReplica(t, srv, ns, "c", l)}
		settle(t, admin, ns, rs, l, "3 replicas")

		wantMode := shard.ModeClient
		if gate {
			wantMode = shard.ModeServer
		}
		before := make([]shard.Status, len(rs))
		beforeBytes := make([]int64, len(rs))
		for i, r := range rs {
			st := r.inf.Status()
			if st.Mode != wantMode {
				t.Errorf("%s filters in mode %v, want %v", r.name, st.Mode, wantMode)
			}
			if share := float64(st.Objects) / float64(n); share > 1.1/3 {
				t.Errorf("%s caches %d of %d objects (%.3f), more than a third plus 10%%", r.name, st.Objects, n, share)
			}
			before[i], beforeBytes[i] = st, r.bytes.Load()
		}

		// A burst of updates: what does each replica receive?
		const updates = 1000
		err = kubetest.Parallel(t.Context(), updates, 16, func(ctx context.Context, i int) error {
			cm := configMap(ns, i*n/updates)
			cm.Data["v"] = "2"
			_, err := admin.Kube.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		settle(t, admin, ns, rs, l, "after the updates")
		var total int64
		for i, r := range rs {
			st := r.inf.Status()
			received, dropped := st.Received-before[i].Received, st.Dropped-before[i].Dropped
			got := r.bytes.Load() - beforeBytes[i]
			total += received
			t.Logf("%s: owns %.3f of the space, caches %d, received %d events (%d dropped), %d bytes", r.name, st.Owned.Share(), st.Objects, received, dropped, got)
			switch {
			case gate && (dropped != 0 || float64(received) > 1.1/3*updates+20):
				t.Errorf("%s received %d of %d changes and dropped %d; the server should send its share only", r.name, received, updates, dropped)
			case !gate && received != updates:
				t.Errorf("%s received %d of %d changes; without the gate the server sends all", r.name, received, updates)
			}
		}
		if gate && total != updates {
			t.Errorf("the replicas received %d changes between them, want %d (each exactly once)", total, updates)
		}
		if o := l.overlapsExcept(); len(o) > 0 {
			t.Errorf("%d calls overlapped across replicas, such as %v", len(o), o[0])
		}
		// The replicas joined one after another: the first ones gave buckets up, and kept the rest
		// without a call.
		if e := l.echoes(); len(e) > 0 {
			t.Errorf("updates that changed nothing (a relist of kept objects), per replica: %v", e)
		}
	})
}

// TestShardedRebalance: 3 replicas -> 4 -> 3 (one stops gracefully) -> 2 (one is cut off from
// the server: it stops handling, its Lease expires, the others take its buckets), while a writer
// creates, updates and deletes objects. After each change, within the Lease duration plus a few
// seconds, every object is held by exactly one live replica and cached there; none is lost; no
// two replicas are ever in a call for one object at once; objects that moved reach their new
// owner as initial adds and leave the old one with OnRelease; objects kept get no call (no
// update that changes nothing: each move lists only the buckets gained).
func TestShardedRebalance(t *testing.T) {
	servers(t, func(t *testing.T, srv *harness.Server, gate bool) {
		admin, err := kubetest.NewClients(srv.AdminConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		ns, err := kubetest.NewNamespace(t.Context(), admin.Kube, "rebalance")
		if err != nil {
			t.Fatal(err)
		}
		n := objectCount()
		populate(t, admin, ns, n)
		l := newLedger()
		a, b, c := startReplica(t, srv, ns, "a", l), startReplica(t, srv, ns, "b", l), startReplica(t, srv, ns, "c", l)
		settle(t, admin, ns, []*replica{a, b, c}, l, "3 replicas")

		// During each change a writer creates, updates and deletes; once the buckets have moved
		// it stops, and the replicas must settle: caches and handlers checked in full.
		var writes atomic.Int64
		next := n
		during := func(what string, change func() []*replica) time.Duration {
			ctx, stopWriter := context.WithCancel(t.Context())
			var writer sync.WaitGroup
			writer.Go(func() { write(ctx, t, admin, ns, n, &next, &writes) })
			defer func() { stopWriter(); writer.Wait() }() // also when a check fails
			time.Sleep(200 * time.Millisecond)
			start := time.Now()
			live := change()
			settleWhileWriting(t, live, what)
			took := time.Since(start)
			time.Sleep(200 * time.Millisecond)
			stopWriter()
			writer.Wait()
			settle(t, admin, ns, live, l, what)
			return took
		}

		var d *replica
		during("3 -> 4", func() []*replica {
			d = startReplica(t, srv, ns, "d", l)
			return []*replica{a, b, c, d}
		})
		if got := l.count("d", "add(initial)"); got == 0 {
			t.Errorf("d got no initial adds for the buckets it took")
		}
		released := 0
		for _, r := range []string{"a", "b", "c"} {
			released += l.count(r, "release")
		}
		if released == 0 {
			t.Errorf("a, b and c released nothing when d joined")
		}
		during("4 -> 3 (c stops)", func() []*replica {
			c.stop()
			return []*replica{a, b, d}
		})
		took := during("3 -> 2 (d cut off from the server)", func() []*replica {
			d.cut.Store(true) // d can no longer renew: it stops handling, its Lease expires
			return []*replica{a, b}
		})
		if st := d.member.Status(); !st.Fenced {
			t.Errorf("d, cut off, did not stop handling: %+v", st)
		}
		t.Logf("gate %v: %d writes during the changes; the cut-off replica's buckets moved within %v (Lease %v)", gate, writes.Load(), took.Round(time.Millisecond), leaseDuration)
		if o := l.overlapsExcept("d"); len(o) > 0 {
			t.Errorf("%d calls overlapped across replicas, such as %v", len(o), o[:min(3, len(o))])
		}
		// Each move listed only what was gained: no object kept through it came back as an update.
		if e := l.echoes(); len(e) > 0 {
			t.Errorf("updates that changed nothing (a relist of kept objects), per replica: %v", e)
		}
		l.mu.Lock()
		t.Logf("calls per replica: %v", l.calls)
		l.mu.Unlock()
	})
}

// settleWhileWriting waits until the replicas own what Assign gives them; with the writer still
// running, caches and handlers are checked once it has stopped (settle).
func settleWhileWriting(t *testing.T, live []*replica, what string) {
	t.Helper()
	var names []string
	for _, r := range live {
		names = append(names, r.name)
	}
	want := shard.Assign(names, buckets)
	start := time.Now()
	deadline := start.Add(leaseDuration + 30*time.Second)
	for {
		ok := true
		for _, r := range live {
			if st := r.inf.Status(); !st.Owned.Equal(want[r.name]) || !r.inf.HasSynced() {
				ok = false
			}
		}
		if ok {
			t.Logf("%s: buckets moved in %v", what, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: buckets not moved after %v", what, time.Since(start).Round(time.Second))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
