package informertest_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
	"github.com/typedkube/informer/wire"
)

func labelled(ns, name, app string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app},
		Annotations: map[string]string{"note": "x"}}}
}

// keys returns the keys of the informer's cached objects, sorted.
func keys[T informer.Object](inf *informer.SharedIndexInformer[T]) []string {
	ks := inf.GetIndexer().ListKeys()
	slices.Sort(ks)
	return ks
}

// podSlim is a projection of a Pod.
type podSlim struct {
	wire.Meta[podSlim]
	Spec struct{ NodeName string }
}

// A factory over a Server honours the factory's options and each type's
// ForOptions as one over an API server: namespaces, label and field
// selectors, the factory's and the type's TweakListOptions, the default
// and the per-type transform, indexers; For and ForProjection share
// informers as usual; and the Server's writes reach the informers.
func TestServerFactoryOptions(t *testing.T) {
	srv := informertest.NewServer(nil,
		labelled("a", "web", "web"), labelled("a", "db", "db"), labelled("b", "web", "web"),
		labelled("c", "web", "web"), labelled("a", "skip", "web"),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cfg"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}},
	)
	f, err := srv.NewFactory(informer.FactoryOptions{
		Namespaces: []string{"a", "b"},
		TweakListOptions: func(o *metav1.ListOptions) {
			o.FieldSelector = strings.Trim(o.FieldSelector+",metadata.name!=skip", ",")
		},
		DefaultTransform: func(obj any) (any, error) {
			obj.(informer.Object).SetAnnotations(nil)
			return obj, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
	byApp := func(p *corev1.Pod) ([]string, error) { return []string{p.Labels["app"]}, nil }
	pods, err := informer.For(f, informer.ForOptions[*corev1.Pod]{
		LabelSelector: "app=web",
		Indexers:      informer.Indexers[*corev1.Pod]{"app": byApp},
	})
	if err != nil {
		t.Fatal(err)
	}
	marked := func(cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
		cm.Labels = map[string]string{"seen": "yes"}
		return cm, nil
	}
	cms, err := informer.For(f, informer.ForOptions[*corev1.ConfigMap]{Namespace: "a", Transform: marked})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := informer.For[*corev1.Node](f)
	if err != nil {
		t.Fatal(err)
	}
	slim, err := informer.ForProjection[podSlim, corev1.Pod](f, informer.ForOptions[*podSlim]{FieldSelector: "metadata.name=db"})
	if err != nil {
		t.Fatal(err)
	}
	var rec informertest.Recorder[*corev1.Pod]
	if _, err := pods.AddEventHandler(&rec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	f.Start(ctx)
	if _, err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}

	if got, want := keys(pods), []string{"a/web", "b/web"}; !cmp.Equal(got, want) {
		t.Errorf("pods cached %v, want %v (namespaces a and b, app=web, not skip)", got, want)
	}
	for _, p := range pods.GetIndexer().List() {
		if p.Annotations != nil {
			t.Errorf("%s/%s keeps its annotations: the default transform did not run", p.Namespace, p.Name)
		}
	}
	podSource, err := srv.Source(corev1.SchemeGroupVersion.WithKind("Pod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range podSource.Objects() {
		if p.GetAnnotations()["note"] != "x" {
			t.Errorf("the Server's %s/%s lost its annotations: a transform edited the Server's own object", p.GetNamespace(), p.GetName())
		}
	}
	if web, err := pods.GetIndexer().ByIndex("app", "web"); err != nil || len(web) != 2 {
		t.Errorf("ByIndex(app, web) = %d objects, %v", len(web), err)
	}
	if cm, err := cms.Lister().ByNamespace("a").Get("cfg"); err != nil || cm.Labels["seen"] != "yes" {
		t.Errorf("ConfigMap a/cfg = %v, %v; want it transformed by its own transform", cm, err)
	}
	if got := keys(nodes); !cmp.Equal(got, []string{"node-1"}) {
		t.Errorf("nodes cached %v: a cluster-scoped kind ignores the factory's namespaces", got)
	}
	if got := keys(slim); !cmp.Equal(got, []string{"a/db"}) {
		t.Errorf("projections cached %v, want a/db", got)
	}
	if again, err := informer.For(f, informer.ForOptions[*corev1.Pod]{LabelSelector: "app=db"}); !errors.Is(err, informer.ErrOptionsConflict) {
		t.Errorf("For with another selector = %v, %v; want ErrOptionsConflict", again, err)
	}

	// Writes reach the informers, through the selectors.
	if _, err := srv.Add(labelled("b", "api", "web")); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Add(labelled("c", "api", "web")); err != nil { // namespace c: not cached
		t.Fatal(err)
	}
	if _, err := srv.Update(labelled("a", "web", "gone")); err != nil { // leaves app=web
		t.Fatal(err)
	}
	if err := rec.WaitForKey(ctx, informertest.OnDelete, "a/web", ""); err != nil {
		t.Fatal(err)
	}
	if err := rec.WaitForKey(ctx, informertest.OnAdd, "b/api", ""); err != nil {
		t.Fatal(err)
	}
	if got, want := keys(pods), []string{"b/api", "b/web"}; !cmp.Equal(got, want) {
		t.Errorf("pods cached %v after the writes, want %v", got, want)
	}
}

// A kind's Source provokes the failures an informer of the factory meets
// as with an API server: a Forbidden list makes the factory's
// WaitForCacheSync return at once with it; a relist after a 410 Gone
// finds what changed meanwhile.
func TestServerFactoryFailures(t *testing.T) {
	srv := informertest.NewServer(nil, labelled("a", "web", "web"))
	pods, err := srv.Source(corev1.SchemeGroupVersion.WithKind("Pod"))
	if err != nil {
		t.Fatal(err)
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no RBAC"))
	pods.SetListError(forbidden)
	pods.SetWatchError(forbidden)
	f, err := srv.NewFactory(informer.FactoryOptions{Informer: informer.InformerOptions{Reflector: informer.ReflectorOptions{
		Backoff:           informer.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond},
		WatchErrorHandler: func(context.Context, error) {},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
	inf, err := informer.For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	f.Start(ctx)
	if _, err := f.WaitForCacheSync(ctx); !apierrors.IsForbidden(err) {
		t.Fatalf("WaitForCacheSync = %v, want Forbidden at once", err)
	}
	pods.SetListError(nil)
	pods.SetWatchError(nil)
	for {
		_, err := f.WaitForCacheSync(ctx)
		if err == nil {
			break
		}
		if !apierrors.IsForbidden(err) {
			t.Fatal(err)
		}
	}
	var rec informertest.Recorder[*corev1.Pod]
	if _, err := inf.AddEventHandler(&rec); err != nil {
		t.Fatal(err)
	}
	pods.Relist()
	if _, err := srv.Delete(labelled("a", "web", "")); err != nil {
		t.Fatal(err)
	}
	if err := rec.WaitForKey(ctx, informertest.OnDelete, "a/web", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Add(&corev1.Namespace{}); err == nil {
		t.Error("Add of an object without a name succeeded")
	}
	if _, err := srv.Source(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Nope"}); err == nil {
		t.Error("Source of a kind the scheme does not know succeeded")
	}
}
