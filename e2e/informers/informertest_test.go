package informers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
)

// TestInformertestSourceMatchesServer checks the public fake against the real thing: the same
// script of creates, updates (some moving objects in and out of a label selector) and deletes
// is played on the API server and on an informertest.Source, each watched by an informer in
// its default watch-list mode, once with and once without a label selector. Both informers'
// handlers must receive the same calls, apart from resource versions.
func TestInformertestSourceMatchesServer(t *testing.T) {
	verifyNoGoroutinesLeft(t)
	ctx := testContext(t, 60*time.Second)
	c := adminClients(t)
	ns := newNamespace(t, c)
	src := informertest.NewSource[*corev1.ConfigMap]()
	server := c.Kube.CoreV1().ConfigMaps(ns)

	cm := func(name, app, data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
			Data:       map[string]string{"v": data},
		}
	}
	type step struct {
		op  string // create, update, delete
		obj *corev1.ConfigMap
	}
	play := func(steps []step) {
		t.Helper()
		for _, s := range steps {
			var err, fakeErr error
			switch s.op {
			case "create":
				_, err = server.Create(ctx, s.obj, metav1.CreateOptions{})
				_, fakeErr = src.Add(s.obj)
			case "update":
				_, err = server.Update(ctx, s.obj, metav1.UpdateOptions{})
				_, fakeErr = src.Update(s.obj)
			case "delete":
				err = server.Delete(ctx, s.obj.Name, metav1.DeleteOptions{})
				_, fakeErr = src.Delete(s.obj)
			}
			if err != nil || fakeErr != nil {
				t.Fatalf("%s %s: server: %v, fake: %v", s.op, s.obj.Name, err, fakeErr)
			}
		}
	}
	play([]step{{"create", cm("a", "web", "1")}, {"create", cm("b", "db", "1")}})

	selectors := []string{"", "app=web"}
	type side struct {
		name string
		rec  *informertest.Recorder[*corev1.ConfigMap]
	}
	var sides [][2]side
	for _, sel := range selectors {
		tweak := func(o *metav1.ListOptions) { o.LabelSelector = sel }
		real := informer.ListWatchFromClient[corev1.ConfigMap](server, tweak)
		fake := informer.ListWatchFuncs[*corev1.ConfigMap]{
			ListFunc: func(ctx context.Context, o metav1.ListOptions) (*informer.ListPage[*corev1.ConfigMap], error) {
				tweak(&o)
				return src.List(ctx, o)
			},
			WatchFunc: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				tweak(&o)
				return src.Watch(ctx, o)
			},
		}
		var pair [2]side
		for i, lw := range []informer.ListerWatcher[*corev1.ConfigMap]{real, fake} {
			inf, err := informer.NewSharedIndexInformer(lw, informer.SharedIndexInformerOptions[*corev1.ConfigMap]{})
			if err != nil {
				t.Fatal(err)
			}
			rec := &informertest.Recorder[*corev1.ConfigMap]{}
			reg, err := inf.AddEventHandler(rec)
			if err != nil {
				t.Fatal(err)
			}
			runCtx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- inf.Run(runCtx) }()
			t.Cleanup(func() { cancel(); <-done })
			if err := informer.WaitForCacheSync(ctx, inf, reg); err != nil {
				t.Fatal(err)
			}
			pair[i] = side{name: fmt.Sprintf("%s selector %q", []string{"server", "fake"}[i], sel), rec: rec}
		}
		sides = append(sides, pair)
	}

	play([]step{
		{"update", cm("a", "web", "2")},
		{"update", cm("b", "web", "2")}, // enters app=web
		{"update", cm("a", "db", "3")},  // leaves app=web
		{"delete", cm("b", "web", "2")},
		{"create", cm("c", "web", "1")},
		{"delete", cm("a", "db", "3")},
		{"create", cm("zz-end", "web", "end")},
	})

	type call struct {
		Kind             string
		Key              string
		Initial, Unknown bool
		Old, New         string // app label and data
	}
	describe := func(o *corev1.ConfigMap) string {
		if o == nil {
			return ""
		}
		return o.Labels["app"] + ":" + o.Data["v"]
	}
	for _, pair := range sides {
		var got [2][]call
		for i, s := range pair {
			if err := s.rec.WaitForKey(ctx, informertest.OnAdd, ns+"/zz-end", ""); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			for _, c := range s.rec.Calls() {
				got[i] = append(got[i], call{c.Kind.String(), c.Key, c.Initial, c.FinalStateUnknown, describe(c.Old), describe(c.New)})
			}
		}
		if diff := cmp.Diff(got[0], got[1]); diff != "" {
			t.Errorf("%s and %s differ (-server +fake):\n%s", pair[0].name, pair[1].name, diff)
		}
		if len(got[0]) < 5 {
			t.Errorf("%s: only %d calls: %v", pair[0].name, len(got[0]), got[0])
		}
	}
}

// TestInformertestSourceWritesMatchServer checks the fake's writes against the API server's: an
// update naming a stale resource version is a Conflict on both; an update that changes nothing
// keeps the resource version on both and sends no event; a watch from "" starts with an ADDED
// event of the object on both.
func TestInformertestSourceWritesMatchServer(t *testing.T) {
	verifyNoGoroutinesLeft(t)
	ctx := testContext(t, 60*time.Second)
	c := adminClients(t)
	ns := newNamespace(t, c)
	server := c.Kube.CoreV1().ConfigMaps(ns)
	src := informertest.NewSource[*corev1.ConfigMap]()
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}, Data: map[string]string{"v": "1"}}
	type side struct {
		name   string
		create func(*corev1.ConfigMap) (*corev1.ConfigMap, error)
		update func(*corev1.ConfigMap) (*corev1.ConfigMap, error)
		watch  func(metav1.ListOptions) (watch.Interface, error)
	}
	for _, s := range []side{
		{"server",
			func(o *corev1.ConfigMap) (*corev1.ConfigMap, error) {
				return server.Create(ctx, o, metav1.CreateOptions{})
			},
			func(o *corev1.ConfigMap) (*corev1.ConfigMap, error) {
				return server.Update(ctx, o, metav1.UpdateOptions{})
			},
			func(o metav1.ListOptions) (watch.Interface, error) { return server.Watch(ctx, o) }},
		{"fake", src.Add, src.Update,
			func(o metav1.ListOptions) (watch.Interface, error) { return src.Watch(ctx, o) }},
	} {
		created, err := s.create(obj.DeepCopy())
		if err != nil {
			t.Fatalf("%s: create: %v", s.name, err)
		}
		changed := created.DeepCopy()
		changed.Data["v"] = "2"
		updated, err := s.update(changed)
		if err != nil {
			t.Fatalf("%s: update: %v", s.name, err)
		}
		stale := created.DeepCopy() // the resource version of the create
		stale.Data["v"] = "3"
		if _, err := s.update(stale); !apierrors.IsConflict(err) {
			t.Errorf("%s: update at a stale resource version = %v, want a Conflict", s.name, err)
		}
		w, err := s.watch(metav1.ListOptions{ResourceVersion: updated.ResourceVersion})
		if err != nil {
			t.Fatalf("%s: watch: %v", s.name, err)
		}
		same, err := s.update(updated.DeepCopy())
		if err != nil || same.ResourceVersion != updated.ResourceVersion {
			t.Errorf("%s: an update that changes nothing = rv %v, %v; want rv %s unchanged", s.name, same.GetResourceVersion(), err, updated.ResourceVersion)
		}
		again := updated.DeepCopy()
		again.Data["v"] = "4"
		last, err := s.update(again)
		if err != nil {
			t.Fatalf("%s: update: %v", s.name, err)
		}
		select {
		case ev := <-w.ResultChan(): // the no-op sent nothing: the first event is the real update's
			if got := ev.Object.(*corev1.ConfigMap); ev.Type != watch.Modified || got.ResourceVersion != last.ResourceVersion {
				t.Errorf("%s: first event %s rv %s, want MODIFIED rv %s", s.name, ev.Type, got.ResourceVersion, last.ResourceVersion)
			}
		case <-ctx.Done():
			t.Fatalf("%s: no event: %v", s.name, ctx.Err())
		}
		w.Stop()
		w, err = s.watch(metav1.ListOptions{FieldSelector: "metadata.name=a"})
		if err != nil {
			t.Fatalf("%s: watch from \"\": %v", s.name, err)
		}
		select {
		case ev := <-w.ResultChan():
			if got := ev.Object.(*corev1.ConfigMap); ev.Type != watch.Added || got.Data["v"] != "4" {
				t.Errorf("%s: a watch from \"\" starts with %s v=%s, want ADDED v=4", s.name, ev.Type, got.Data["v"])
			}
		case <-ctx.Done():
			t.Fatalf("%s: no event from a watch from \"\": %v", s.name, ctx.Err())
		}
		w.Stop()
	}
}

// TestInformertestSourceEmptyListMatchesServer checks what an empty collection's LIST answers:
// a resource version that is neither "" nor "0", on the server and on the fake, so that an
// informer in list+watch mode that lists before the first write watches in order and can wait
// for the version of its own create. The fake used to answer "0", and the wait lasted until its
// context ended (issue 23).
func TestInformertestSourceEmptyListMatchesServer(t *testing.T) {
	verifyNoGoroutinesLeft(t)
	ctx := testContext(t, 60*time.Second)
	c := adminClients(t)
	ns := newNamespace(t, c)
	server := c.Kube.CoreV1().ConfigMaps(ns)
	src := informertest.NewSource[*corev1.ConfigMap]()
	type side struct {
		name   string
		lw     informer.ListerWatcher[*corev1.ConfigMap]
		create func(*corev1.ConfigMap) (*corev1.ConfigMap, error)
	}
	for _, s := range []side{
		{"server", informer.ListWatchFromClient[corev1.ConfigMap](server, nil),
			func(o *corev1.ConfigMap) (*corev1.ConfigMap, error) {
				return server.Create(ctx, o, metav1.CreateOptions{})
			}},
		{"fake", src, src.Add},
	} {
		page, err := s.lw.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatalf("%s: list: %v", s.name, err)
		}
		if rv := page.ResourceVersion; len(page.Items) != 0 || rv == "" || rv == "0" {
			t.Errorf("%s: the list of an empty collection answered %d items at resourceVersion %q; want none at a version other than \"\" and \"0\"", s.name, len(page.Items), rv)
		}
		inf, err := informer.NewSharedIndexInformer(s.lw, informer.SharedIndexInformerOptions[*corev1.ConfigMap]{
			Reflector: informer.ReflectorOptions{WatchList: informer.WatchListOff},
		})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- inf.Run(runCtx) }()
		if err := informer.WaitForCacheSync(ctx, inf); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		created, err := s.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}})
		if err != nil {
			t.Fatalf("%s: create: %v", s.name, err)
		}
		if l, err := inf.Lister().AtLeast(ctx, created.ResourceVersion); err != nil {
			t.Errorf("%s: wait for the create's resourceVersion %s: %v", s.name, created.ResourceVersion, err)
		} else if _, err := l.ByNamespace(ns).Get("a"); err != nil {
			t.Errorf("%s: after the wait: %v", s.name, err)
		}
		stop()
		if err := <-done; err != nil {
			t.Errorf("%s: Run: %v", s.name, err)
		}
	}
}
