package informers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
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
