package controllerruntime

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/controllerruntime/typedcache"
	"github.com/typedkube/informer/e2e/harness"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// faultPlan is how many faults of each kind TestManager injects (with -short, one of each):
// two of each, in a shuffled order, so that each kind also meets the aftermath of others. The
// fault suite (e2e/faults) injects many more into the library's informers; here each fault
// costs about 9 s of CI, mostly the fault itself.
var faultPlan = []faultKind{{"restart", 2}, {"compact", 2}, {"drop", 2}, {"throttle", 2}}

// faultKind is a kind of fault and how many of it a test injects.
type faultKind struct {
	kind  string
	count int
}

// newManager returns a manager on our cache, through cfg, caching namespace ns, with the test
// controller registered under name.
// With watchHTTP1, the cache's watches go over HTTP/1.1 (typedcache.Options.WatchHTTP1).
func newManager(cfg *rest.Config, scheme *runtime.Scheme, ns, name string, syncTimeout time.Duration, watchHTTP1 bool) (ctrl.Manager, *fleetReconciler, error) {
	backoff := informer.Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second, ResetAfter: 10 * time.Second}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// The one line: the rest is the test's (a namespace, short backoffs for the faults).
		NewCache: typedcache.NewWith(typedcache.Options{Informer: informer.InformerOptions{
			Reflector: informer.ReflectorOptions{Backoff: backoff},
		}, WatchHTTP1: watchHTTP1}),
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true), CacheSyncTimeout: syncTimeout},
	})
	if err != nil {
		return nil, nil, err
	}
	r := &fleetReconciler{Client: mgr.GetClient(), scheme: scheme}
	if err := r.setup(mgr, name); err != nil {
		return nil, nil, err
	}
	return mgr, r, nil
}

// TestManager runs the test controller in a manager on our cache, as the throttled identity
// through the harness's proxy, while a writer changes Fleets, Secrets and children, and
// injects the fault suite's faults (API server restarts, etcd compactions, dropped
// connections, 429s); after each, the server must come to hold exactly what the controller
// should have made of it within 60 s.
func TestManager(t *testing.T) { testManager(t, faultPlan, false) }

// TestManagerWatchHTTP1 is TestManager with the cache's watches over HTTP/1.1 connections of
// their own (typedcache.Options.WatchHTTP1), one fault of each kind: a dropped connection ends
// each watch's connection, where over HTTP/2 it ends the one they share.
func TestManagerWatchHTTP1(t *testing.T) {
	plan := slices.Clone(faultPlan)
	for i := range plan {
		plan[i].count = 1
	}
	testManager(t, plan, true)
}

// testManager runs TestManager's faults of plan (one of each with -short), with the cache's
// watches over HTTP/1.1 if watchHTTP1.
func testManager(t *testing.T, plan []faultKind, watchHTTP1 bool) {
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	w, scheme := fleetNamespace(t, ctx, "crt", rng)
	c, ns := w.c, w.ns
	var log kubetest.RequestLog
	mgr, r, err := newManager(log.Wrap(srv.ThrottledConfig()), scheme, ns, "fleet", 0, watchHTTP1)
	if err != nil {
		t.Fatal(err)
	}
	defer runManager(t, ctx, mgr)()
	if took, err := waitConverged(ctx, c, ns, 60*time.Second); err != nil {
		t.Fatalf("first sync: %v", err)
	} else {
		t.Logf("converged %v after the start", took.Round(time.Millisecond))
	}

	var schedule []string
	for _, p := range plan {
		n := p.count
		if testing.Short() {
			n = 1
		}
		for range n {
			schedule = append(schedule, p.kind)
		}
	}
	rng.Shuffle(len(schedule), func(i, j int) { schedule[i], schedule[j] = schedule[j], schedule[i] })
	for i, kind := range schedule {
		// Writes flow before the fault, go on during it, and for a moment after it.
		wctx, stopWriter := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { w.run(wctx) })
		waitWrites := func(what string) {
			t.Helper()
			want := w.writes.Load() + writesAround
			deadline := time.Now().Add(30 * time.Second)
			for w.writes.Load() < want {
				if time.Now().After(deadline) {
					t.Fatalf("fault %d (%s): %d writes %s it, want %d", i+1, kind, w.writes.Load(), what, want)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		waitWrites("before")
		effect, err := injectFault(ctx, kind, &log)
		if err == nil {
			waitWrites("after")
		}
		stopWriter()
		wg.Wait()
		if err != nil {
			t.Fatalf("fault %d (%s): %v", i+1, kind, err)
		}
		took, err := waitConverged(ctx, c, ns, 60*time.Second)
		if err != nil {
			t.Fatalf("fault %d (%s, %s), after %d writes: %v", i+1, kind, effect, w.writes.Load(), err)
		}
		t.Logf("fault %2d/%d %-8s %-45s converged %v after it", i+1, len(schedule), kind, effect, took.Round(time.Millisecond))
	}
	t.Logf("%d writes, %d reconciles", w.writes.Load(), r.reconciles.Load())
	if watchHTTP1 {
		watches, wrong := kubetest.WatchesOverHTTP1(log.Requests(func(r kubetest.Request) bool { return r.Status != 0 }))
		for _, w := range wrong {
			t.Error(w)
		}
		t.Logf("%d watches answered over HTTP/1.1", watches)
	}
}

// fleetNamespace makes a namespace with Fleets (and their CRD) and Secrets in it, and returns
// their writer, whose client is the admin's, straight to the API server, and the scheme.
func fleetNamespace(t *testing.T, ctx context.Context, prefix string, rng *rand.Rand) (*fleetWriter, *runtime.Scheme) {
	t.Helper()
	admin := adminClients(t)
	ns, err := kubetest.NewNamespace(ctx, admin.Kube, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := installFleets(ctx, admin.Dynamic, ns); err != nil {
		t.Fatal(err)
	}
	scheme := newScheme()
	direct := srv.AdminConfig()
	direct.Host = srv.APIServerURL()
	c, err := client.New(direct, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	w := &fleetWriter{c: c, ns: ns, rng: rng}
	if err := w.seed(ctx); err != nil {
		t.Fatal(err)
	}
	return w, scheme
}

// runManager starts mgr and returns its stop, which fails the test if the manager does not
// return within 60 s, or returns an error.
func runManager(t *testing.T, ctx context.Context, mgr ctrl.Manager) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the manager: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("the manager did not stop within 60s of its context's end")
		}
	}
}

// injectFault injects one fault of kind into the server and returns once it is over.
func injectFault(ctx context.Context, kind string, log *kubetest.RequestLog) (string, error) {
	switch kind {
	case "restart":
		return "API server restarted", srv.RestartAPIServer(ctx)
	case "compact":
		rev, err := srv.CompactEtcd(ctx)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("compacted at %d, %d connections dropped", rev, srv.DropConnections()), nil
	case "drop":
		return fmt.Sprintf("%d connections dropped", srv.DropConnections()), nil
	case "throttle":
		is429 := func(r kubetest.Request) bool { return r.Status == 429 }
		before := log.Count(is429)
		if err := srv.Throttle(ctx); err != nil {
			return "", err
		}
		dropped := srv.DropConnections()
		deadline := time.Now().Add(30 * time.Second)
		for log.Count(is429) == before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		throttled := log.Count(is429) - before
		if err := srv.Unthrottle(ctx); err != nil {
			return "", err
		}
		if throttled == 0 {
			return "", errors.New("no request was refused with 429 within 30s")
		}
		return fmt.Sprintf("%d connections dropped, %d requests refused with 429", dropped, throttled), nil
	}
	return "", fmt.Errorf("unknown fault %q", kind)
}

// fleetWriter changes Fleets, Secrets and children at random, as users and other controllers
// would.
type fleetWriter struct {
	c      client.Client
	ns     string
	rng    *rand.Rand // used by run's goroutine alone while it runs
	writes atomic.Int64
}

const (
	fleets = 6
	// writesAround is how many writes are made before a fault, and again after it.
	writesAround = 15
)

// seed creates the Fleets and most of their Secrets: one Fleet's Secret is missing, so that it
// waits (requeues) for it.
func (w *fleetWriter) seed(ctx context.Context) error {
	for i := range fleets {
		f := &Fleet{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: fmt.Sprintf("fleet-%d", i)},
			Spec: FleetSpec{Replicas: int64(i % 4), SecretName: fmt.Sprintf("secret-%d", i%3)}}
		if err := w.c.Create(ctx, f); err != nil {
			return err
		}
	}
	for i := range 2 { // secret-2 comes later
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: fmt.Sprintf("secret-%d", i)},
			Data: map[string][]byte{"config": []byte("v0")}}
		if err := w.c.Create(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// run writes every 20 ms until ctx ends; a write that fails (during a fault) is skipped.
func (w *fleetWriter) run(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if w.writeOne(ctx) == nil {
			w.writes.Add(1)
		}
	}
}

func (w *fleetWriter) writeOne(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	name := fmt.Sprintf("fleet-%d", w.rng.IntN(fleets))
	switch n := w.rng.IntN(10); {
	case n < 4: // scale
		var f Fleet
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &f); err != nil {
			if apierrors.IsNotFound(err) {
				return w.c.Create(ctx, &Fleet{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
					Spec: FleetSpec{Replicas: 1, SecretName: "secret-0"}})
			}
			return err
		}
		f.Spec.Replicas = int64(w.rng.IntN(5))
		return w.c.Update(ctx, &f)
	case n < 6: // a Secret's data
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: fmt.Sprintf("secret-%d", w.rng.IntN(3))},
			Data: map[string][]byte{"config": []byte(fmt.Sprintf("v%d", w.rng.IntN(1000)))}}
		err := w.c.Update(ctx, s)
		if apierrors.IsNotFound(err) {
			err = w.c.Create(ctx, s)
		}
		return err
	case n < 9: // a child deleted or tampered with
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: childName(name, int64(w.rng.IntN(3)))}}
		if n == 8 {
			if err := w.c.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
				return err
			}
			cm.Data = map[string]string{"config": "tampered"}
			return w.c.Update(ctx, cm)
		}
		return w.c.Delete(ctx, cm)
	default: // a Fleet deleted (its children must go) or made again
		err := w.c.Delete(ctx, &Fleet{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name}})
		if apierrors.IsNotFound(err) {
			return w.c.Create(ctx, &Fleet{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
				Spec: FleetSpec{Replicas: 2, SecretName: "secret-2"}})
		}
		return err
	}
}

// TestManagerUnprivileged runs the manager as an identity without RBAC rights in its
// namespace: its cache reports Forbidden as soon as the server answers (WaitForSync, Get,
// GetInformer), where controller-runtime's waits silently until its context ends. Once a
// RoleBinding grants the rights, the informers' retries succeed, the manager starts its
// controller, and the Fleets converge.
func TestManagerUnprivileged(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	w, scheme := fleetNamespace(t, ctx, "crt-unprivileged", rand.New(rand.NewPCG(1, 2)))
	c, ns := w.c, w.ns
	mgr, _, err := newManager(srv.UnprivilegedConfig(), scheme, ns, "fleet-unprivileged", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer runManager(t, ctx, mgr)()
	began := time.Now()
	wait := context.Background() // only the Forbidden answer can end these
	mc := mgr.GetCache()
	if err := mc.(*typedcache.Cache).WaitForSync(wait); !apierrors.IsForbidden(err) {
		t.Errorf("the manager's cache: WaitForSync = %v, want Forbidden", err)
	}
	if err := mc.Get(wait, client.ObjectKey{Namespace: ns, Name: "fleet-1"}, &Fleet{}); !apierrors.IsForbidden(err) {
		t.Errorf("Get = %v, want Forbidden", err)
	}
	if _, err := mc.GetInformer(wait, &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Errorf("GetInformer = %v, want Forbidden", err)
	}
	t.Logf("the manager's cache reported Forbidden within %v", time.Since(began).Round(time.Millisecond))
	if err := grant(ctx, adminClients(t), ns, harness.UnprivilegedUser); err != nil {
		t.Fatal(err)
	}
	took, err := waitConverged(ctx, c, ns, 60*time.Second)
	if err != nil {
		t.Fatalf("after the grant: %v", err)
	}
	t.Logf("converged %v after the grant", took.Round(time.Millisecond))
}

// grant lets user read and write everything in namespace ns.
func grant(ctx context.Context, admin *kubetest.Clients, ns, user string) error {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "everything"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"},
	}}}
	if _, err := admin.Kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return err
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "everything"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "everything"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	_, err := admin.Kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{})
	return err
}
