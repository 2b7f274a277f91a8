package shard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// configMap is an object with a UID, which places it. UIDs look random,
// as the server's are: FNV-1a's top bits hardly depend on the last bytes,
// so UIDs that differ only in them would crowd into few buckets.
func configMap(i int) *corev1.ConfigMap {
	a, b := mix(uint64(i)), mix(uint64(i)+1<<32)
	uid := fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, a>>16&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: fmt.Sprintf("cm-%04d", i), UID: types.UID(uid),
	}}
}

// log records every handler call of every replica, with its time span.
type log struct {
	mu    sync.Mutex
	calls []call
	busy  map[string]string          // key -> replica in a call now
	holds map[string]map[string]bool // key -> replicas whose handlers hold it: added, not deleted or released since
	fails []string
	// callTime is how long a call takes (a sleep): 50us, so that calls
	// can overlap. In a synctest bubble it must be 0: time does not move
	// while a Member waits for the calls lock, so a sleeping call would
	// never end.
	callTime time.Duration
}

type call struct {
	replica, kind, key string
	initial            bool
	echo               bool // an update whose old and new objects have the same resource version
	start, end         time.Time
	heldElsewhere      []string // other replicas that held the key when the call started
}

func (c call) String() string {
	return fmt.Sprintf("%s %s of %s at %s (held by %v)", c.replica, c.kind, c.key, c.start.Format("15:04:05.000000"), c.heldElsewhere)
}

func newLog() *log {
	return &log{busy: make(map[string]string), holds: make(map[string]map[string]bool), callTime: 50 * time.Microsecond}
}

// handlerFor is the handler of one replica: it records calls and checks
// that no other replica is in a call for the same key at once.
func (l *log) handlerFor(replica string) *recordingHandler {
	return &recordingHandler{log: l, replica: replica}
}

type recordingHandler struct {
	log     *log
	replica string
}

func (h *recordingHandler) do(kind string, obj *corev1.ConfigMap, initial bool) {
	h.record(call{replica: h.replica, kind: kind, key: obj.Namespace + "/" + obj.Name, initial: initial})
}

// record makes call c, filling in its times and who else held its key.
func (h *recordingHandler) record(c call) {
	key, kind := c.key, c.kind
	l := h.log
	l.mu.Lock()
	if other, ok := l.busy[key]; ok && other != h.replica {
		l.fails = append(l.fails, fmt.Sprintf("%s: %s by %s while %s was in a call", key, kind, h.replica, other))
	}
	l.busy[key] = h.replica
	var elsewhere []string
	for r := range l.holds[key] {
		if r != h.replica {
			elsewhere = append(elsewhere, r)
		}
	}
	l.mu.Unlock()
	start := time.Now()
	if l.callTime > 0 {
		time.Sleep(l.callTime)
	}
	l.mu.Lock()
	delete(l.busy, key)
	if l.holds[key] == nil {
		l.holds[key] = make(map[string]bool)
	}
	switch kind {
	case "add", "update":
		l.holds[key][h.replica] = true
	case "delete", "release":
		delete(l.holds[key], h.replica)
	}
	c.start, c.end, c.heldElsewhere = start, time.Now(), elsewhere
	l.calls = append(l.calls, c)
	l.mu.Unlock()
}

func (h *recordingHandler) OnAdd(obj *corev1.ConfigMap, initial bool) { h.do("add", obj, initial) }
func (h *recordingHandler) OnUpdate(old, obj *corev1.ConfigMap) {
	h.record(call{replica: h.replica, kind: "update", key: obj.Namespace + "/" + obj.Name, echo: old.ResourceVersion == obj.ResourceVersion})
}
func (h *recordingHandler) OnDelete(d informer.DeletedObject[*corev1.ConfigMap]) {
	h.do("delete", d.Obj, false)
}
func (h *recordingHandler) OnRelease(obj *corev1.ConfigMap) { h.do("release", obj, false) }

// owners returns, per key, the replicas whose handlers hold it now: added
// and neither deleted nor released since.
func (l *log) owners() map[string][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]string)
	for k, rs := range l.holds {
		for r := range rs {
			out[k] = append(out[k], r)
		}
	}
	return out
}

// deliveries returns replica's adds, updates and deletes that started at or
// after since.
func (l *log) deliveries(replica string, since time.Time) []call {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []call
	for _, c := range l.calls {
		if c.replica == replica && c.kind != "release" && !c.start.Before(since) {
			out = append(out, c)
		}
	}
	return out
}

// deliveredWhileHeldElsewhere returns replica's adds, updates and deletes
// that started at or after since while another replica held the object.
func (l *log) deliveredWhileHeldElsewhere(replica string, since time.Time) []call {
	var out []call
	for _, c := range l.deliveries(replica, since) {
		if len(c.heldElsewhere) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// count returns how many calls of kind replica got that started at or
// after since.
func (l *log) count(replica, kind string, since time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		if c.replica == replica && c.kind == kind && !c.start.Before(since) {
			n++
		}
	}
	return n
}

// replica is one member and its sharded informer.
type replica struct {
	name   string
	member *Member
	inf    *Informer[*corev1.ConfigMap]
	cancel context.CancelFunc
	done   chan struct{}
}

func startReplica(t *testing.T, leases *fake.Clientset, src *informertest.Source[*corev1.ConfigMap], l *log, name string, key ...Key) *replica {
	t.Helper()
	return runReplica(t, newTestMember(t, leases, name, append(key, KeyUID)[0]), src, l, name)
}

// newTestMember is the member name of group "cms": Leases of 2s renewed
// every 200ms, 64 buckets, unless tweak says otherwise.
func newTestMember(t *testing.T, leases *fake.Clientset, name string, key Key, tweak ...func(*Options)) *Member {
	t.Helper()
	o := Options{
		Leases: leases.CoordinationV1(), Namespace: "leases", Group: "cms", Identity: name,
		LeaseDuration: 2 * time.Second, RenewInterval: 200 * time.Millisecond, Buckets: 64, Key: key,
	}
	for _, f := range tweak {
		f(&o)
	}
	m, err := NewMember(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (r *replica) stop() {
	r.cancel()
	<-r.done
}

// converged reports whether the live replicas own every bucket between
// them, each what Assign gives it, and their caches hold exactly the
// source's objects of their buckets, each at its latest version.
func converged(rs []*replica, src *informertest.Source[*corev1.ConfigMap]) error {
	var names []string
	for _, r := range rs {
		names = append(names, r.name)
	}
	want := Assign(names, 64)
	objs := src.Objects()
	for _, r := range rs {
		st := r.inf.Status()
		if !st.Owned.Equal(want[r.name]) {
			return fmt.Errorf("%s owns %v, want %v (it sees %v, target %v)", r.name, st.Owned, want[r.name], st.Members, st.Target)
		}
		if len(st.Members) != len(rs) {
			return fmt.Errorf("%s sees members %v", r.name, st.Members)
		}
		n := 0
		for _, o := range objs {
			if st.Owned.HasHash(Hash(field(o, r.member.Key()))) {
				n++
				cached, ok := r.inf.Informer().GetIndexer().GetByKey(o.Namespace + "/" + o.Name)
				if !ok {
					return fmt.Errorf("%s lacks %s", r.name, o.Name)
				}
				if cached.ResourceVersion != o.ResourceVersion {
					return fmt.Errorf("%s caches %s at resource version %s, not %s", r.name, o.Name, cached.ResourceVersion, o.ResourceVersion)
				}
			}
		}
		if got := r.inf.Informer().GetIndexer().Len(); got != n {
			return fmt.Errorf("%s caches %d objects, want %d", r.name, got, n)
		}
	}
	return nil
}

func waitConverged(t *testing.T, rs []*replica, src *informertest.Source[*corev1.ConfigMap]) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := converged(rs, src)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			for _, r := range rs {
				t.Logf("%s lease informer: %+v; leases %d", r.name, r.member.leases.Stats(), len(r.member.leases.GetIndexer().List()))
				for _, l := range r.member.leases.GetIndexer().List() {
					t.Logf("  %s renew %v", l.Name, l.Spec.RenewTime)
				}
			}
			t.Fatalf("not converged after 15s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkOwners: every object of the source is held by exactly one live
// replica's handler, and no other.
func checkOwners(t *testing.T, l *log, rs []*replica, src *informertest.Source[*corev1.ConfigMap]) {
	t.Helper()
	liveNames := make(map[string]bool)
	for _, r := range rs {
		liveNames[r.name] = true
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		owners := l.owners()
		var bad []string
		for _, o := range src.Objects() {
			key := o.Namespace + "/" + o.Name
			var os []string
			for _, r := range owners[key] {
				if liveNames[r] { // a replica that left holds nothing
					os = append(os, r)
				}
			}
			if len(os) != 1 {
				bad = append(bad, fmt.Sprintf("%s held by %v", key, os))
			}
		}
		if len(bad) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d objects not held by exactly one live replica, such as %v", len(bad), bad[:min(5, len(bad))])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestShardedReplicasSplitAndRebalance: three replicas over one source
// (which ignores shard selectors: client filtering) split its objects;
// adding a fourth, stopping one and changing objects meanwhile keeps each
// object with exactly one live replica, gives moved objects to OnRelease
// and then to the new owner as initial adds, and no two replicas are ever
// in a call for one object at once.
func TestShardedReplicasSplitAndRebalance(t *testing.T) {
	var objs []*corev1.ConfigMap
	for i := range 300 {
		objs = append(objs, configMap(i))
	}
	src := informertest.NewSource(objs...)
	leases := fake.NewClientset()
	l := newLog()
	rs := []*replica{
		startReplica(t, leases, src, l, "a"),
		startReplica(t, leases, src, l, "b"),
		startReplica(t, leases, src, l, "c"),
	}
	waitConverged(t, rs, src)
	checkOwners(t, l, rs, src)
	for _, r := range rs {
		st := r.inf.Status()
		if st.Mode != ModeClient {
			t.Errorf("%s: mode %v, want client filtering (the source ignores selectors)", r.name, st.Mode)
		}
		if share := float64(st.Objects) / float64(len(objs)); share > 1.0/3*1.1+0.05 {
			t.Errorf("%s caches %.2f of the objects: %+v", r.name, share, st)
		}
	}

	// Changes while a fourth replica joins.
	stopWriting := make(chan struct{})
	var writer sync.WaitGroup
	writer.Go(func() {
		for i := 300; ; i++ {
			select {
			case <-stopWriting:
				return
			default:
			}
			if _, err := src.Add(configMap(i)); err != nil {
				t.Error(err)
			}
			u := configMap(i % 300)
			u.Data = map[string]string{"n": fmt.Sprint(i)}
			if _, err := src.Update(u); err != nil {
				t.Error(err)
			}
			if i%7 == 0 {
				if _, err := src.Delete(configMap(i - 1)); err != nil && !apierrors.IsNotFound(err) {
					t.Error(err)
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
	rs = append(rs, startReplica(t, leases, src, l, "d"))
	time.Sleep(300 * time.Millisecond)
	close(stopWriting)
	writer.Wait()
	waitConverged(t, rs, src)
	checkOwners(t, l, rs, src)

	// d's initial adds: objects it gained, marked initial.
	l.mu.Lock()
	var dInitial, released int
	for _, c := range l.calls {
		if c.replica == "d" && c.kind == "add" && c.initial {
			dInitial++
		}
		if c.kind == "release" {
			released++
		}
	}
	l.mu.Unlock()
	if dInitial == 0 || released == 0 {
		t.Errorf("d got %d initial adds, others %d releases; want both > 0", dInitial, released)
	}

	// b leaves (gracefully: its Lease goes at once); then a's Lease cannot
	// be renewed (it fences itself and the others take its buckets when it
	// expires).
	rs[1].stop()
	rs = []*replica{rs[0], rs[2], rs[3]}
	waitConverged(t, rs, src)
	checkOwners(t, l, rs, src)

	l.mu.Lock()
	fails := l.fails
	l.mu.Unlock()
	if len(fails) > 0 {
		t.Errorf("%d calls overlapped across replicas, such as %v", len(fails), fails[:min(5, len(fails))])
	}
}

// TestShardedFencing: a replica whose Lease writes fail stops delivering
// before its Lease expires, says so in its status, and the other takes all
// buckets once the Lease has expired.
func TestShardedFencing(t *testing.T) {
	var objs []*corev1.ConfigMap
	for i := range 100 {
		objs = append(objs, configMap(i))
	}
	src := informertest.NewSource(objs...)
	leases := fake.NewClientset()
	var mu sync.Mutex
	failing := false
	leases.PrependReactor("update", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		u := action.(k8stesting.UpdateAction)
		mu.Lock()
		defer mu.Unlock()
		if failing && u.GetObject().(*coordinationv1.Lease).Name == "cms-a" {
			return true, nil, apierrors.NewServiceUnavailable("no")
		}
		return false, nil, nil
	})
	l := newLog()
	a := startReplica(t, leases, src, l, "a")
	b := startReplica(t, leases, src, l, "b")
	waitConverged(t, []*replica{a, b}, src)

	mu.Lock()
	failing = true
	mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for !a.member.Status().Fenced {
		if time.Now().After(deadline) {
			t.Fatal("a did not fence itself")
		}
		time.Sleep(10 * time.Millisecond)
	}
	fencedAt := time.Now()
	// b takes everything once a's Lease has expired.
	deadline = time.Now().Add(10 * time.Second)
	for b.member.Status().Owned.Len() != 64 {
		if time.Now().After(deadline) {
			t.Fatalf("b owns %v", b.member.Status().Owned)
		}
		time.Sleep(10 * time.Millisecond)
	}
	l.mu.Lock()
	for _, c := range l.calls {
		if c.replica == "a" && c.start.After(fencedAt) && c.kind != "release" {
			t.Errorf("a handled %s %s after it fenced itself", c.kind, c.key)
		}
	}
	if len(l.fails) > 0 {
		t.Errorf("overlapping calls: %v", l.fails)
	}
	l.mu.Unlock()
	// a recovers and rejoins.
	mu.Lock()
	failing = false
	mu.Unlock()
	waitConverged(t, []*replica{a, b}, src)
	checkOwners(t, l, []*replica{a, b}, src)
}

func TestNewMemberOptions(t *testing.T) {
	leases := fake.NewClientset().CoordinationV1()
	for name, o := range map[string]Options{
		"no client":      {Namespace: "n", Group: "g"},
		"no namespace":   {Leases: leases, Group: "g"},
		"no group":       {Leases: leases, Namespace: "n"},
		"bad group":      {Leases: leases, Namespace: "n", Group: "a b"},
		"buckets":        {Leases: leases, Namespace: "n", Group: "g", Buckets: 100},
		"short lease":    {Leases: leases, Namespace: "n", Group: "g", LeaseDuration: time.Second},
		"renew too long": {Leases: leases, Namespace: "n", Group: "g", LeaseDuration: 10 * time.Second, RenewInterval: 6 * time.Second},
		"key":            {Leases: leases, Namespace: "n", Group: "g", Key: "object.metadata.name"},
		"identity":       {Leases: leases, Namespace: "n", Group: "g", Identity: "UPPER"},
	} {
		if _, err := NewMember(o); err == nil {
			t.Errorf("%s: NewMember succeeded", name)
		}
	}
	m, err := NewMember(Options{Leases: leases, Namespace: "n", Group: "g"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Identity() == "" || m.Key() != KeyUID {
		t.Errorf("defaults: identity %q, key %q", m.Identity(), m.Key())
	}
}

// TestShardedIdentityInUse: a second live member with the same identity
// cannot join.
func TestShardedIdentityInUse(t *testing.T) {
	leases := fake.NewClientset()
	src := informertest.NewSource[*corev1.ConfigMap]()
	a := startReplica(t, leases, src, newLog(), "a")
	<-a.member.Ready()
	other, err := NewMember(Options{Leases: leases.CoordinationV1(), Namespace: "leases", Group: "cms", Identity: "a", LeaseDuration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Run(t.Context()); !errorsIs(err, ErrIdentityInUse) {
		t.Errorf("Run = %v, want ErrIdentityInUse", err)
	}
}

func errorsIs(err, target error) bool { return err != nil && errors.Is(err, target) }

// TestShardedByNamespace: with KeyNamespace, each namespace's objects all
// go to one replica, and removing a handler stops its calls.
func TestShardedByNamespace(t *testing.T) {
	var objs []*corev1.ConfigMap
	for i := range 200 {
		o := configMap(i)
		o.Namespace = fmt.Sprintf("ns-%d", i%20)
		objs = append(objs, o)
	}
	src := informertest.NewSource(objs...)
	leases := fake.NewClientset()
	l := newLog()
	rs := []*replica{startReplica(t, leases, src, l, "a", KeyNamespace), startReplica(t, leases, src, l, "b", KeyNamespace)}
	waitConverged(t, rs, src)
	where := make(map[string]string)
	for _, r := range rs {
		list, err := r.inf.Lister().List(labels.Everything())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range list {
			if other, ok := where[o.Namespace]; ok && other != r.name {
				t.Errorf("namespace %s is split between %s and %s", o.Namespace, other, r.name)
			}
			where[o.Namespace] = r.name
		}
		if st := r.inf.Status(); len(st.Owned.Ranges()) == 0 || st.LastRebalance.IsZero() {
			t.Errorf("%s: status %+v", r.name, st)
		}
	}
	if len(where) != 20 {
		t.Errorf("%d namespaces cached, want 20", len(where))
	}

	// A removed handler hears nothing more.
	rec := &informertest.Recorder[*corev1.ConfigMap]{}
	reg, err := rs[0].inf.AddEventHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs[0].inf.RemoveEventHandler(reg); err != nil {
		t.Fatal(err)
	}
	kept := &informertest.Recorder[*corev1.ConfigMap]{}
	if _, err := rs[0].inf.AddEventHandler(kept); err != nil {
		t.Fatal(err)
	}
	n := rec.Len()
	for _, o := range objs {
		u := o.DeepCopy()
		u.Data = map[string]string{"x": "y"}
		if _, err := src.Update(u); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	want := rs[0].inf.Informer().GetIndexer().Len()
	if err := kept.WaitFor(ctx, "the updates of a's objects", func(calls []informertest.Call[*corev1.ConfigMap]) bool {
		updates := 0
		for _, c := range calls {
			if c.Kind == informertest.OnUpdate {
				updates++
			}
		}
		return updates == want
	}); err != nil {
		t.Fatal(err)
	}
	if rec.Len() != n {
		t.Errorf("a removed handler got %d more calls", rec.Len()-n)
	}
}

// TestShardedNotJoined: an informer whose Member does not run, or cannot
// write its Lease, fails its lists within seconds, saying why.
func TestShardedNotJoined(t *testing.T) {
	defer func(d time.Duration) { joinWait = d }(joinWait)
	joinWait = 100 * time.Millisecond
	leases := fake.NewClientset()
	leases.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(coordinationv1.Resource("leases"), "cms-a", errors.New("no RBAC"))
	})
	m, err := NewMember(Options{Leases: leases.CoordinationV1(), Namespace: "leases", Group: "cms", Identity: "a", LeaseDuration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := NewInformer[*corev1.ConfigMap](m, informertest.NewSource[*corev1.ConfigMap](), informer.SharedIndexInformerOptions[*corev1.ConfigMap]{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(t.Context()); !apierrors.IsForbidden(err) {
		t.Fatalf("Run = %v, want the Forbidden error", err)
	}
	_, err = inf.src.List(t.Context(), metav1.ListOptions{})
	if !errors.Is(err, ErrNotJoined) || !strings.Contains(err.Error(), "not running") || !strings.Contains(err.Error(), "no RBAC") {
		t.Errorf("List = %v; want ErrNotJoined saying Run is not running, with the Lease error", err)
	}
}
