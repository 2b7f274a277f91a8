package shard

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// This file holds what a Member writes to and reads from the Leases, and
// its fencing point, which each successful write moves.

// join creates the member's Lease, or takes over its own stale one.
func (m *Member) join(ctx context.Context) error {
	c := m.opts.Leases.Leases(m.opts.Namespace)
	now := time.Now()
	want := m.leaseObject(now, newBuckets(m.opts.Buckets))
	l, err := c.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var old *coordinationv1.Lease
		old, err = c.Get(ctx, m.leaseName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("shard: join %s: %w", m.leaseName, err)
		}
		if old.Spec.HolderIdentity != nil && *old.Spec.HolderIdentity != "" && *old.Spec.HolderIdentity != m.opts.Identity && live(old, now) {
			return fmt.Errorf("%w: Lease %s/%s held by %q", ErrIdentityInUse, m.opts.Namespace, m.leaseName, *old.Spec.HolderIdentity)
		}
		if live(old, now) && heldOf(old, m.opts.Buckets).Len() > 0 {
			// Our own earlier run, which may still be handling: wait for its
			// Lease to expire before taking over.
			return fmt.Errorf("%w: Lease %s/%s of an earlier run is live until %v", ErrIdentityInUse, m.opts.Namespace, m.leaseName, expiry(old))
		}
		want.ResourceVersion = old.ResourceVersion
		l, err = c.Update(ctx, want, metav1.UpdateOptions{})
	}
	if err != nil {
		err = fmt.Errorf("shard: join %s: %w", m.leaseName, err)
		m.mu.Lock()
		m.lastErr = err
		m.mu.Unlock()
		return err
	}
	m.mu.Lock()
	m.lease = l
	m.renewedLocked(now)
	m.mu.Unlock()
	return nil
}

// renewedLocked records a successful write of the Lease that started at
// now (the renew time it wrote), and so the new fencing point. The caller
// holds mu.
func (m *Member) renewedLocked(now time.Time) {
	m.lastRenew = now
	m.validMono.Store(int64(now.Sub(m.base) + m.fenceAt))
	m.validWall.Store(now.UnixNano() + int64(m.fenceAt))
}

// handling reports whether the member may start a handler call at now:
// its last renewal is younger than fenceAt on both the monotonic and the
// wall clock (a paused VM's monotonic clock may not have moved; others
// judge the Lease by their wall clocks), and it has not lapsed since. The
// first look past the fencing point makes it lapse.
func (m *Member) handling(now time.Time) bool {
	if m.lapsed.Load() {
		return false
	}
	if int64(now.Sub(m.base)) < m.validMono.Load() && now.UnixNano() < m.validWall.Load() {
		return true
	}
	m.lapsed.Store(true)
	return false
}

// leaseObject is the member's Lease as of now, publishing held.
func (m *Member) leaseObject(now time.Time, held Buckets) *coordinationv1.Lease {
	seconds := int32((m.opts.LeaseDuration + time.Second - 1) / time.Second)
	t := metav1.NewMicroTime(now)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name:        m.leaseName,
			Namespace:   m.opts.Namespace,
			Labels:      map[string]string{GroupLabel: m.opts.Group},
			Annotations: map[string]string{HeldAnnotation: held.encode()},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       &m.opts.Identity,
			LeaseDurationSeconds: &seconds,
			AcquireTime:          &t,
			RenewTime:            &t,
		},
	}
}

// publish writes held and a fresh renew time to the member's Lease.
func (m *Member) publish(ctx context.Context, held Buckets) error {
	c := m.opts.Leases.Leases(m.opts.Namespace)
	now := time.Now()
	m.mu.Lock()
	cur := m.lease
	m.mu.Unlock()
	want := m.leaseObject(now, held)
	if cur != nil {
		want.ResourceVersion = cur.ResourceVersion
		want.Spec.AcquireTime = cur.Spec.AcquireTime
	}
	// A write that hangs must not hold the loop past its fencing time
	// (handler calls stop there on their own; the loop gives the buckets
	// up). One made after it has the renew interval.
	m.mu.Lock()
	fence := m.lastRenew.Add(m.fenceAt)
	m.mu.Unlock()
	timeout := m.opts.RenewInterval
	if until := time.Until(fence); until > 0 {
		timeout = min(timeout, max(until, 10*time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	l, err := c.Update(ctx, want, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		// Someone (an operator, or our own write that timed out) changed
		// it: write over the latest.
		var fresh *coordinationv1.Lease
		if fresh, err = c.Get(ctx, m.leaseName, metav1.GetOptions{}); err == nil {
			if h := fresh.Spec.HolderIdentity; h != nil && *h != m.opts.Identity && live(fresh, now) {
				return fmt.Errorf("%w: Lease %s taken by %q", ErrIdentityInUse, m.leaseName, *h)
			}
			want.ResourceVersion = fresh.ResourceVersion
			l, err = c.Update(ctx, want, metav1.UpdateOptions{})
		} else if apierrors.IsNotFound(err) {
			want.ResourceVersion = ""
			l, err = c.Create(ctx, want, metav1.CreateOptions{})
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.lastErr = err
		return err
	}
	m.lease = l
	m.renewedLocked(now)
	m.held = held
	m.fenced = false
	return nil
}

// live reports whether l has a holder and has not expired at now.
func live(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return false
	}
	return now.Before(expiry(l))
}

// expiry is when l expires: its renew time plus its duration.
func expiry(l *coordinationv1.Lease) time.Time {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return time.Time{}
	}
	return l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
}

// heldOf is the buckets l's member holds; a Lease with another bucket count
// or a malformed annotation is taken as holding everything, so that no one
// takes a bucket it may serve.
func heldOf(l *coordinationv1.Lease, n int) Buckets {
	s, ok := l.Annotations[HeldAnnotation]
	if !ok {
		return newBuckets(n)
	}
	b, err := decodeBuckets(s)
	if err != nil || b.N() != n {
		return allBuckets(n)
	}
	return b
}
