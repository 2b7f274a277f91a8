package harness

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// How throttling works.
//
// ThrottledUser's requests match a FlowSchema of their own (precedence throttleFlowPrecedence)
// that sends them to the priority level throttleLevel, whose limit response is Reject: API
// Priority and Fairness answers 429 instead of queueing. Normally the level has
// openConcurrencyShares (dozens of seats), so the identity behaves like any other.
//
// Throttle sets the level's shares to zero, without lending or borrowing. A level with no seats
// still runs a request when none of its requests is running (the queue set's guard against
// starving a request that needs more seats than the limit), so Throttle also keeps one request of
// the identity running for as long as the throttle lasts: a dry-run ConfigMap create in
// throttleNamespace that an admission webhook served by the harness holds open. While it runs,
// every other request of the identity, watches included, is rejected with 429 by the real server.
// Between two holds (one ends every holdFor) a request can slip through.
//
// Unthrottle releases the hold, restores the shares and waits until the API server's
// apiserver_flowcontrol_nominal_limit_seats metric shows that it applied them.
const (
	throttleLevel          = "harness-throttled"
	throttleFlowPrecedence = 500
	openConcurrencyShares  = 30
	throttleNamespace      = "harness-throttle"
	throttleWebhook        = "harness-throttle-hold.typedkube.io"
	holdLabel              = "harness.typedkube.io/hold"
	holdFor                = 20 * time.Second // under the webhook's 30 s timeout
)

// throttler owns the APF objects and the hold of ThrottledUser.
type throttler struct {
	admin     kubernetes.Interface // AdminUser, directly to the API server
	throttled kubernetes.Interface // ThrottledUser, directly to the API server, no client-side rate limit

	mu      sync.Mutex         // held for the whole of throttle, unthrottle and close
	webhook *holdWebhook       // guarded by mu; started by the first throttle
	closed  bool               // guarded by mu; set by close
	cancel  context.CancelFunc // guarded by mu; non-nil while throttled: ends the hold loop
	release chan struct{}      // guarded by mu; closed to end the held requests
	holds   sync.WaitGroup     // the hold loop

	errMu   sync.Mutex
	lastErr error // guarded by errMu; the hold loop's last unexpected error
}

// setupThrottleObjects creates what ThrottledUser needs from the start: its cluster-admin binding
// and its own, open, priority level and flow schema.
func setupThrottleObjects(ctx context.Context, admin kubernetes.Interface) error {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ThrottledUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: ThrottledUser}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("harness: create cluster role binding for %s: %w", ThrottledUser, err)
	}
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: throttleLevel},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type:    flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: throttleLimits(openConcurrencyShares),
		},
	}
	if _, err := admin.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("harness: create priority level %s: %w", throttleLevel, err)
	}
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: throttleLevel},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: throttleLevel},
			MatchingPrecedence:         throttleFlowPrecedence,
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: ThrottledUser}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
					ClusterScope: true, Namespaces: []string{"*"},
				}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
			}},
		},
	}
	if _, err := admin.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("harness: create flow schema %s: %w", throttleLevel, err)
	}
	return nil
}

// throttleLimits is the spec of throttleLevel with the given nominal shares: Reject, no lending,
// no borrowing, so that its limit is exactly what the shares give.
func throttleLimits(shares int32) *flowcontrolv1.LimitedPriorityLevelConfiguration {
	zero := int32(0)
	return &flowcontrolv1.LimitedPriorityLevelConfiguration{
		NominalConcurrencyShares: &shares,
		LendablePercent:          &zero,
		BorrowingLimitPercent:    &zero,
		LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
	}
}

// setShares updates throttleLevel's nominal concurrency shares.
func (t *throttler) setShares(ctx context.Context, shares int32) error {
	plc := t.admin.FlowcontrolV1().PriorityLevelConfigurations()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pl, err := plc.Get(ctx, throttleLevel, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pl.Spec.Limited = throttleLimits(shares)
		_, err = plc.Update(ctx, pl, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("harness: set shares of priority level %s to %d: %w", throttleLevel, shares, err)
	}
	return nil
}

// throttle closes throttleLevel and waits until the server rejects a request of ThrottledUser.
func (t *throttler) throttle(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errors.New("harness: Throttle: server stopped")
	}
	if t.cancel != nil {
		return errors.New("harness: Throttle: already throttled")
	}
	if t.webhook == nil {
		wh, err := startHoldWebhook(ctx, t.admin)
		if err != nil {
			return err
		}
		t.webhook = wh
	}
	if err := t.setShares(ctx, 0); err != nil {
		return err
	}
	holdCtx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	t.release = make(chan struct{})
	t.setLastErr(nil)
	t.webhook.setRelease(t.release)
	t.holds.Go(func() { t.holdLoop(holdCtx) })

	// A 429 can only come from the closed level with a request of the identity running in it.
	for {
		err := t.throttled.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default").MaxRetries(0).Do(ctx).Error()
		if apierrors.IsTooManyRequests(err) {
			return nil
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			holdErr := t.getLastErr()
			t.stopHoldLocked()
			// Reopen the level, with a context of its own since ctx is done.
			reopenCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			reopenErr := t.setShares(reopenCtx, openConcurrencyShares)
			return errors.Join(fmt.Errorf("harness: Throttle: no 429 for %s before %w (last hold error: %v)", ThrottledUser, err, holdErr), reopenErr)
		}
	}
}

func (t *throttler) setLastErr(err error) {
	t.errMu.Lock()
	t.lastErr = err
	t.errMu.Unlock()
}

func (t *throttler) getLastErr() error {
	t.errMu.Lock()
	defer t.errMu.Unlock()
	return t.lastErr
}

// holdLoop keeps one held request of ThrottledUser running until ctx ends.
func (t *throttler) holdLoop(ctx context.Context) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "hold-",
		Namespace:    throttleNamespace,
		Labels:       map[string]string{holdLabel: "true"},
	}}
	for ctx.Err() == nil {
		start := time.Now()
		err := t.throttled.CoreV1().RESTClient().Post().
			Namespace(throttleNamespace).Resource("configmaps").Param("dryRun", metav1.DryRunAll).
			Body(cm).MaxRetries(0).Do(ctx).Error()
		switch {
		case ctx.Err() != nil:
			return
		case apierrors.IsTooManyRequests(err):
			// Another request of the identity ran: try again soon to close the gap, but
			// without hammering the server if that request is a long one.
			sleepCtx(ctx, 5*time.Millisecond)
		case err != nil:
			t.setLastErr(err)
			sleepCtx(ctx, 100*time.Millisecond) // the API server may be restarting
		case time.Since(start) < time.Second:
			// Not held: the webhook configuration has not reached the API server yet.
			sleepCtx(ctx, 20*time.Millisecond)
		}
	}
}

// stopHoldLocked ends the hold loop and any held request, and waits for the loop to return.
func (t *throttler) stopHoldLocked() {
	if t.cancel == nil {
		return
	}
	t.cancel()
	close(t.release)
	t.holds.Wait()
	t.cancel = nil
}

// unthrottle ends the hold, reopens throttleLevel and waits until the server has applied it.
func (t *throttler) unthrottle(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cancel == nil {
		return nil
	}
	t.stopHoldLocked()
	if err := t.setShares(ctx, openConcurrencyShares); err != nil {
		return err
	}
	for {
		seats, metricsErr := t.nominalSeats(ctx)
		if metricsErr == nil && seats > 0 {
			return nil
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("harness: Unthrottle: priority level %s not reopened before %w (seats %d, metrics error %v)", throttleLevel, err, seats, metricsErr)
		}
	}
}

// nominalSeats reads throttleLevel's nominal concurrency limit from the server's metrics.
func (t *throttler) nominalSeats(ctx context.Context) (int, error) {
	data, err := t.admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, err
	}
	prefix := `apiserver_flowcontrol_nominal_limit_seats{priority_level="` + throttleLevel + `"} `
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f), err
		}
	}
	return 0, fmt.Errorf("metric for %s not found", throttleLevel)
}

// close ends any hold and stops the webhook server, without touching the API server's objects.
func (t *throttler) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	t.stopHoldLocked()
	if t.webhook != nil {
		t.webhook.close()
		t.webhook = nil
	}
}
