package shard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/klog/v2"

	"github.com/typedkube/informer"
)

// Labels and annotations of a member's Lease.
const (
	// GroupLabel names the group a Lease's member belongs to.
	GroupLabel = "shard.typedkube.io/group"
	// HeldAnnotation lists the buckets the member serves or is taking
	// (encoded as "n:" and hex words), so that no other member takes them.
	HeldAnnotation = "shard.typedkube.io/held"
)

// Errors of a Member.
var (
	// ErrIdentityInUse reports a Lease of the member's name held by
	// another, live holder.
	ErrIdentityInUse = errors.New("shard: another live replica holds this identity's Lease")
	// ErrRunning reports a second Run of a Member: one while it runs, or
	// one after a Run that joined the group has returned. A Member joins
	// once; make a new one to join again.
	ErrRunning = errors.New("shard: member already running")
)

// Options configure a Member.
type Options struct {
	// Leases is where the members' Leases live, such as
	// clientset.CoordinationV1(). Required.
	Leases coordinationv1client.LeasesGetter
	// Namespace holds the Leases. Required.
	Namespace string
	// Group names the replicas that split objects among themselves; its
	// members' Leases carry it in the GroupLabel label. Required; a valid
	// label value.
	Group string
	// Identity names this replica, unique in the group; its Lease is named
	// "<Group>-<Identity>". Default: the host name and random hex.
	Identity string
	// LeaseDuration is how long a member's Lease lasts without renewal:
	// others take a silent member's buckets this long after its last
	// renewal. Default 15s.
	LeaseDuration time.Duration
	// RenewInterval is how often the Lease is renewed and membership
	// checked. A member that has not renewed for LeaseDuration minus the
	// larger of RenewInterval and LeaseDuration/5 stops handling its
	// buckets, so that it has done so before others take them. Default
	// LeaseDuration/3; at most LeaseDuration/2.
	RenewInterval time.Duration
	// Buckets is the number of equal parts the hash space is cut in, the
	// unit of ownership: a power of two from 1 to 4096. More parts balance
	// better among many replicas, with longer selectors. All members of a
	// group must agree. Default 128.
	Buckets int
	// Key is the field objects are placed by. Default KeyUID.
	Key Key
}

// Member is one replica of a group that splits objects among its members:
// it holds a Lease, sees the other members' Leases, computes which buckets
// of the hash space are its own (Assign), and moves the informers made on
// it (For, NewInformer) to them, taking a bucket only once no other live
// member serves it and giving one up before it publishes that it has.
//
// Handover: a member that must give buckets up stops delivering their
// notifications, waits for the handler calls in flight, tells handlers that
// implement Releaser, then removes the buckets from its Lease. A member that
// gains buckets writes them to its Lease first, reads every Lease again
// (a consistent LIST), backs off from any bucket another live member still
// holds, and only then lists and delivers them.
//
// Fencing: the fencing point is the start of the last successful Lease
// write plus LeaseDuration minus the margin (the larger of RenewInterval
// and LeaseDuration/5), before others see the Lease expire. Every handler
// call (OnAdd, OnUpdate, OnDelete) checks as it starts that the point has
// not passed, on the monotonic and on the wall clock; none starts after it.
// Once a call or the member's loop has seen it pass, nothing is delivered,
// even if a late renewal then succeeds, until the member has given every
// bucket up (OnRelease) and claimed buckets again (reading every Lease),
// listing them anew. This holds for a member that cannot write its Lease
// and for one whose process was frozen (SIGSTOP, a paused VM, starvation)
// and resumes with notifications queued. So, as long as the replicas'
// clocks agree to within the margin and no handler call outlasts it, no
// object is handled by two members at once. The exceptions are the calls
// already started at the fencing point (one a frozen process was in runs
// on when it resumes) and the OnRelease calls of the giving up, which
// tell the handler to let go after the point.
type Member struct {
	opts      Options
	leaseName string
	fenceAt   time.Duration // since the last renewal, when the member stops handling
	base      time.Time     // when the Member was made: the origin of validMono
	leases    *informer.SharedIndexInformer[*coordinationv1.Lease]
	kick      chan struct{}
	ready     chan struct{} // closed once the first assignment is in effect
	readyOnce sync.Once
	running   atomic.Bool
	joined    atomic.Bool // a Run has joined: its Leases informer ran

	// The fencing point, the last renewal plus fenceAt, on the monotonic
	// clock (nanoseconds since base) and on the wall clock (Unix
	// nanoseconds): past either, no handler call starts. Written by
	// renewedLocked, read by handling without a lock.
	validMono, validWall atomic.Int64
	// lapsed is set by the first look (a handler call's or step's) past
	// the fencing point: from then on nothing is delivered, even after a
	// renewal, until step has given every bucket up (so that what was not
	// delivered is released, then listed again when it is claimed again).
	lapsed atomic.Bool
	// beforeStep, if set (by tests, before Run), is called by the loop
	// before each step: blocking in it freezes the loop as a stopped
	// process would.
	beforeStep func()

	attachMu  sync.Mutex // held while informers move; orders attach with moves
	informers []attached

	mu            sync.Mutex // guards the fields below
	lease         *coordinationv1.Lease
	held          Buckets // published in the Lease
	active        Buckets // served by the informers
	target        Buckets // what Assign gives this member
	members       []string
	lastRenew     time.Time // local time before the last successful write
	lastRebalance time.Time
	fenced        bool
	lastErr       error
}

// attached is an informer a Member moves.
type attached interface {
	// deactivate stops delivering lost, tells Releasers if release is set,
	// and lists active only.
	deactivate(lost, active Buckets, release bool)
	// activate lists active, gained included, and delivers gained's objects
	// as initial adds.
	activate(gained, active Buckets)
	// setActive is called once, when the informer attaches, before the first activate or deactivate, with
	// the active set then.
	setActive(active Buckets)
	// stopped reports whether the informer has stopped: the Member forgets
	// it at the next move.
	stopped() bool
	// pending returns the buckets given up that its cache may still hold:
	// they are not taken back before they have left it.
	pending() Buckets
}

// NewMember checks opts and returns a Member; Run makes it join.
func NewMember(opts Options) (*Member, error) {
	switch {
	case opts.Leases == nil:
		return nil, fmt.Errorf("%w: no Leases client", ErrInvalidOptions)
	case opts.Namespace == "":
		return nil, fmt.Errorf("%w: no Namespace", ErrInvalidOptions)
	case opts.Group == "":
		return nil, fmt.Errorf("%w: no Group", ErrInvalidOptions)
	case opts.LeaseDuration < 0 || opts.RenewInterval < 0:
		return nil, fmt.Errorf("%w: negative LeaseDuration or RenewInterval", ErrInvalidOptions)
	}
	if errs := validation.IsValidLabelValue(opts.Group); len(errs) > 0 {
		return nil, fmt.Errorf("%w: Group %q: %v", ErrInvalidOptions, opts.Group, errs)
	}
	if opts.Identity == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		opts.Identity = fmt.Sprintf("%s-%s", host, hex.EncodeToString(b[:]))
		if host == "" {
			opts.Identity = hex.EncodeToString(b[:])
		}
	}
	if opts.LeaseDuration == 0 {
		opts.LeaseDuration = 15 * time.Second
	}
	if opts.LeaseDuration < 2*time.Second {
		return nil, fmt.Errorf("%w: LeaseDuration %v is under 2s", ErrInvalidOptions, opts.LeaseDuration)
	}
	if opts.RenewInterval == 0 {
		opts.RenewInterval = opts.LeaseDuration / 3
	}
	if opts.RenewInterval > opts.LeaseDuration/2 {
		return nil, fmt.Errorf("%w: RenewInterval %v is over half of LeaseDuration %v", ErrInvalidOptions, opts.RenewInterval, opts.LeaseDuration)
	}
	if opts.Buckets == 0 {
		opts.Buckets = 128
	}
	if err := validBucketCount(opts.Buckets); err != nil {
		return nil, err
	}
	switch opts.Key {
	case "":
		opts.Key = KeyUID
	case KeyUID, KeyNamespace:
	default:
		return nil, fmt.Errorf("%w: Key %q (want %q or %q)", ErrInvalidOptions, opts.Key, KeyUID, KeyNamespace)
	}
	name := opts.Group + "-" + opts.Identity
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, fmt.Errorf("%w: Lease name %q: %v", ErrInvalidOptions, name, errs)
	}
	m := &Member{
		opts:      opts,
		leaseName: name,
		fenceAt:   opts.LeaseDuration - max(opts.RenewInterval, opts.LeaseDuration/5),
		base:      time.Now(),
		kick:      make(chan struct{}, 1),
		ready:     make(chan struct{}),
		held:      newBuckets(opts.Buckets),
		active:    newBuckets(opts.Buckets),
		target:    newBuckets(opts.Buckets),
	}
	lw := informer.ListWatchFromClient[coordinationv1.Lease](opts.Leases.Leases(opts.Namespace), func(o *metav1.ListOptions) {
		o.LabelSelector = GroupLabel + "=" + opts.Group
	})
	// A group's Leases are few: list and watch, without a watch-list stream.
	leases, err := informer.NewSharedIndexInformer(informer.WithoutWatchList(lw), informer.SharedIndexInformerOptions[*coordinationv1.Lease]{
		Name:         "shard-leases/" + opts.Group,
		NoLabelIndex: true,
	})
	if err != nil {
		return nil, err
	}
	if _, err := leases.AddEventHandler(informer.ResourceEventHandlerFuncs[*coordinationv1.Lease]{
		AddFunc:    func(*coordinationv1.Lease, bool) { m.poke() },
		UpdateFunc: func(_, _ *coordinationv1.Lease) { m.poke() },
		DeleteFunc: func(informer.DeletedObject[*coordinationv1.Lease]) { m.poke() },
	}); err != nil {
		return nil, err
	}
	m.leases = leases
	return m, nil
}

// Identity is the member's name in its group.
func (m *Member) Identity() string { return m.opts.Identity }

// Key is the field the member's informers place objects by.
func (m *Member) Key() Key { return m.opts.Key }

// poke asks the loop to look again.
func (m *Member) poke() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// attach adds an informer; it starts with the member's active buckets.
func (m *Member) attach(a attached) {
	m.attachMu.Lock()
	defer m.attachMu.Unlock()
	m.mu.Lock()
	active := m.active
	m.mu.Unlock()
	a.setActive(active)
	m.informers = append(m.informers, a)
}

// detach removes an informer.
func (m *Member) detach(a attached) {
	m.attachMu.Lock()
	defer m.attachMu.Unlock()
	for i, x := range m.informers {
		if x == a {
			m.informers = append(m.informers[:i:i], m.informers[i+1:]...)
			return
		}
	}
}

// notJoined says why the member is not ready.
func (m *Member) notJoined() string {
	why := "its first assignment is not done yet"
	switch {
	case !m.running.Load():
		why = "Member.Run is not running"
	case !m.leases.HasSynced():
		why = fmt.Sprintf("the Leases of group %s in namespace %s are not listed yet", m.opts.Group, m.opts.Namespace)
		if err := m.leases.SyncFailure(); err != nil {
			why += ": " + err.Error()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastErr != nil {
		why += "; last Lease write: " + m.lastErr.Error()
	}
	return why
}

// Ready is closed once the member has joined and its first assignment is in
// effect (it may own nothing yet, if others have not given buckets up).
func (m *Member) Ready() <-chan struct{} { return m.ready }

// Run joins the group: it writes the member's Lease, watches the group's
// Leases, renews its own and moves its informers to the buckets it owns,
// until ctx ends. Then it stops delivering (without OnRelease calls),
// deletes its Lease (so the others take its buckets at once) and returns
// nil. It returns an error if it cannot join: ErrIdentityInUse, or the
// Lease write's error; Run may then be called again. Once it has joined,
// the Member is done when Run returns: a later Run returns ErrRunning. It
// returns only after every goroutine it started has ended.
func (m *Member) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer m.running.Store(false)
	if m.joined.Load() {
		return fmt.Errorf("%w: it joined its group once and has left: make a new Member", ErrRunning)
	}
	logger := klog.FromContext(ctx).WithValues("group", m.opts.Group, "identity", m.opts.Identity)
	ctx = klog.NewContext(ctx, logger)
	if err := m.join(ctx); err != nil {
		return err
	}
	m.joined.Store(true)
	leaseCtx, stopLeases := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = m.leases.Run(leaseCtx) })
	defer func() {
		stopLeases()
		wg.Wait()
	}()
	select {
	case <-m.leases.Synced():
	case <-ctx.Done():
		m.leave()
		return nil
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			m.leave()
			return nil
		case <-m.kick:
		case <-timer.C:
		}
		if m.beforeStep != nil {
			m.beforeStep()
		}
		next := m.step(ctx)
		m.readyOnce.Do(func() { close(m.ready) })
		timer.Reset(next)
	}
}

// step fences, renews or rebalances as needed and returns when to look
// again. It fences before it renews: a member that was frozen (SIGSTOP, a
// paused VM, starvation) past its fencing point may have lost its buckets
// to others, whatever a renewal now says, so it gives them all up and
// claims them again (claim reads every Lease) before it delivers again.
func (m *Member) step(ctx context.Context) time.Duration {
	logger := klog.FromContext(ctx)
	now := time.Now()
	m.mu.Lock()
	held, active, lastRenew, fenced := m.held, m.active, m.lastRenew, m.fenced
	m.mu.Unlock()

	if !fenced && !m.handling(now) {
		logger.Info("Lease not renewed in time: no longer handling any bucket", "lastRenew", lastRenew)
		m.move(active, newBuckets(m.opts.Buckets), true)
		active, held, fenced = newBuckets(m.opts.Buckets), newBuckets(m.opts.Buckets), true
		m.mu.Lock()
		m.fenced = true
		m.held = held // what we will publish once we can
		m.target = newBuckets(m.opts.Buckets)
		m.lastRebalance = time.Now()
		m.mu.Unlock()
		// Nothing is active: deliveries resume with buckets claimed again.
		m.lapsed.Store(false)
	}
	if now.Sub(lastRenew) >= m.opts.RenewInterval || fenced {
		if err := m.publish(ctx, held); err != nil {
			logger.V(2).Info("Lease renewal failed", "err", err)
		} else {
			lastRenew, fenced = now, false
		}
	}
	if fenced {
		return m.opts.RenewInterval / 4
	}
	if !m.handling(time.Now()) {
		// The renewal came too late (it hung past the fencing point):
		// fence at once.
		return 0
	}

	members, othersHeld, nextExpiry := m.view(now)
	target := Assign(members, m.opts.Buckets)[m.opts.Identity]
	m.mu.Lock()
	m.members, m.target = members, target
	m.mu.Unlock()

	if lost := active.Minus(target); !lost.Empty() {
		active = active.Minus(lost)
		m.move(lost, active, true)
		logger.V(2).Info("Gave buckets up", "lost", lost.String(), "active", active.String())
	}
	if !held.Equal(active) && !held.Minus(target).Empty() {
		// Publish what was given up. If the write fails, the Lease claims
		// more than is served, which only delays others: the next step
		// publishes again.
		_ = m.publish(ctx, active.Union(held.Intersect(target)))
	}
	if gain := target.Minus(active).Minus(othersHeld).Minus(m.pending()); !gain.Empty() {
		gain = m.claim(ctx, active, gain)
		if !gain.Empty() {
			active = active.Union(gain)
			m.moveIn(gain, active)
			logger.V(2).Info("Took buckets", "gained", gain.String(), "active", active.String())
		}
	}
	next := m.opts.RenewInterval - time.Since(lastRenew)
	if next <= 0 { // the renewal failed: retry soon, and fence on time
		next = min(m.opts.RenewInterval/4, time.Until(lastRenew.Add(m.fenceAt)))
	}
	if !target.Minus(active).Empty() {
		next = min(next, m.opts.RenewInterval/4) // waiting for others, or the informers, to give buckets up
	}
	if !nextExpiry.IsZero() {
		next = min(next, time.Until(nextExpiry)+10*time.Millisecond)
	}
	return max(next, 10*time.Millisecond)
}

// claim publishes active ∪ gain, reads every Lease again, and returns the
// part of gain no other live member holds; it publishes the reduced claim
// if it had to back off.
func (m *Member) claim(ctx context.Context, active, gain Buckets) Buckets {
	logger := klog.FromContext(ctx)
	if err := m.publish(ctx, active.Union(gain)); err != nil {
		logger.V(2).Info("Could not publish a claim", "err", err)
		return newBuckets(m.opts.Buckets)
	}
	list, err := m.opts.Leases.Leases(m.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: GroupLabel + "=" + m.opts.Group})
	if err != nil {
		logger.V(2).Info("Could not check a claim", "err", err)
		_ = m.publish(ctx, active)
		return newBuckets(m.opts.Buckets)
	}
	now := time.Now()
	others := newBuckets(m.opts.Buckets)
	for i := range list.Items {
		if l := &list.Items[i]; m.liveOther(l, now) {
			others = others.Union(heldOf(l, m.opts.Buckets))
		}
	}
	if conflict := gain.Intersect(others); !conflict.Empty() {
		logger.V(2).Info("Backing off from buckets another member holds", "buckets", conflict.String())
		gain = gain.Minus(conflict)
		_ = m.publish(ctx, active.Union(gain))
	}
	return gain
}

// move stops delivering lost on every informer (telling Releasers if
// release), and lists active only.
func (m *Member) move(lost, active Buckets, release bool) {
	m.attachMu.Lock()
	defer m.attachMu.Unlock()
	m.forgetStoppedLocked()
	for _, a := range m.informers {
		a.deactivate(lost, active, release)
	}
	m.setActive(active)
}

// pending returns the buckets given up that an informer's cache may still
// hold: taking one back now, its objects would be kept, and no handler
// told of them again. The informer pokes the loop when they have left.
func (m *Member) pending() Buckets {
	m.attachMu.Lock()
	defer m.attachMu.Unlock()
	p := newBuckets(m.opts.Buckets)
	for _, a := range m.informers {
		if !a.stopped() {
			p = p.Union(a.pending())
		}
	}
	return p
}

// forgetStoppedLocked drops the informers that have stopped (an informer
// of a factory that removed it or shut down): they are moved no more, and
// their handlers hear nothing more. The caller holds attachMu.
func (m *Member) forgetStoppedLocked() {
	m.informers = slices.DeleteFunc(m.informers, func(a attached) bool { return a.stopped() })
}

// setActive records the buckets the informers now serve.
func (m *Member) setActive(active Buckets) {
	m.mu.Lock()
	m.active = active
	m.lastRebalance = time.Now()
	m.mu.Unlock()
}

// moveIn lists active on every informer, gained included.
func (m *Member) moveIn(gained, active Buckets) {
	m.attachMu.Lock()
	defer m.attachMu.Unlock()
	m.forgetStoppedLocked()
	m.setActive(active)
	for _, a := range m.informers {
		a.activate(gained, active)
	}
}

// view returns the live members of the group (this one included), the
// buckets the others hold, and the earliest expiry of another member's
// Lease.
func (m *Member) view(now time.Time) (members []string, othersHeld Buckets, nextExpiry time.Time) {
	othersHeld = newBuckets(m.opts.Buckets)
	members = []string{m.opts.Identity}
	for _, l := range m.leases.GetIndexer().List() {
		if !m.liveOther(l, now) {
			continue
		}
		members = append(members, *l.Spec.HolderIdentity)
		othersHeld = othersHeld.Union(heldOf(l, m.opts.Buckets))
		if e := expiry(l); nextExpiry.IsZero() || e.Before(nextExpiry) {
			nextExpiry = e
		}
	}
	sort.Strings(members)
	return members, othersHeld, nextExpiry
}

// liveOther reports whether l is the live Lease of another member of the
// group.
func (m *Member) liveOther(l *coordinationv1.Lease, now time.Time) bool {
	return l.Name != m.leaseName && l.Namespace == m.opts.Namespace && l.Labels[GroupLabel] == m.opts.Group && live(l, now)
}

// leave stops delivering everything and deletes the member's Lease.
func (m *Member) leave() {
	m.mu.Lock()
	active := m.active
	m.mu.Unlock()
	m.move(active, newBuckets(m.opts.Buckets), false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m.mu.Lock()
	var pre *metav1.Preconditions
	if m.lease != nil {
		pre = &metav1.Preconditions{UID: &m.lease.UID}
	}
	m.held = newBuckets(m.opts.Buckets)
	m.target = newBuckets(m.opts.Buckets)
	m.mu.Unlock()
	_ = m.opts.Leases.Leases(m.opts.Namespace).Delete(ctx, m.leaseName, metav1.DeleteOptions{Preconditions: pre})
}

// MemberStatus is what a Member reports about itself.
type MemberStatus struct {
	Identity string
	// Members are the live members, this one included.
	Members []string
	// Owned is what this member serves; Target what Assign gives it (it
	// differs while others give buckets up).
	Owned, Target Buckets
	// LastRebalance is when the owned buckets last changed.
	LastRebalance time.Time
	// LastRenew is when the Lease was last written.
	LastRenew time.Time
	// Fenced reports a member that stopped handling because it could not
	// renew its Lease.
	Fenced bool
	// LastError is the last Lease write error.
	LastError error
}

// Status reports the member's view.
func (m *Member) Status() MemberStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	return MemberStatus{
		Identity:      m.opts.Identity,
		Members:       append([]string(nil), m.members...),
		Owned:         m.active,
		Target:        m.target,
		LastRebalance: m.lastRebalance,
		LastRenew:     m.lastRenew,
		Fenced:        m.fenced,
		LastError:     m.lastErr,
	}
}
