package informers

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
)

// TestInformertestServerFactoryMatchesServer checks the factory of informertest.Server against a
// factory over the API server, made with the same options: two of three namespaces, a factory
// TweakListOptions adding a field selector, a DefaultTransform, and per-type ForOptions (a label
// selector, a transform, an indexer). One script of creates, updates moving ConfigMaps in and out
// of the label selector, deletes and writes in the namespace left out is played on both; each
// informer's handler must get the same calls for each object, and the caches must end equal.
func TestInformertestServerFactoryMatchesServer(t *testing.T) {
	verifyNoGoroutinesLeft(t)
	ctx := testContext(t, 90*time.Second)
	c := adminClients(t)
	nsA, nsB, nsC := newNamespace(t, c), newNamespace(t, c), newNamespace(t, c)
	fake := informertest.NewServer(nil)

	cm := func(ns, name, app, v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
			Data: map[string]string{"v": v}}
	}
	secret := func(ns, name, v string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{"note": v}},
			Data: map[string][]byte{"v": []byte(v)}}
	}
	type step struct {
		op  string // create, update, delete
		obj informer.Object
	}
	play := func(steps ...step) {
		t.Helper()
		for _, s := range steps {
			var err, fakeErr error
			switch obj := s.obj.(type) {
			case *corev1.ConfigMap:
				api := c.Kube.CoreV1().ConfigMaps(obj.Namespace)
				switch s.op {
				case "create":
					_, err = api.Create(ctx, obj, metav1.CreateOptions{})
				case "update":
					_, err = api.Update(ctx, obj, metav1.UpdateOptions{})
				case "delete":
					err = api.Delete(ctx, obj.Name, metav1.DeleteOptions{})
				}
			case *corev1.Secret:
				api := c.Kube.CoreV1().Secrets(obj.Namespace)
				switch s.op {
				case "create":
					_, err = api.Create(ctx, obj, metav1.CreateOptions{})
				case "update":
					_, err = api.Update(ctx, obj, metav1.UpdateOptions{})
				case "delete":
					err = api.Delete(ctx, obj.Name, metav1.DeleteOptions{})
				}
			}
			switch s.op {
			case "create":
				_, fakeErr = fake.Add(s.obj)
			case "update":
				_, fakeErr = fake.Update(s.obj)
			case "delete":
				_, fakeErr = fake.Delete(s.obj)
			}
			if err != nil || fakeErr != nil {
				t.Fatalf("%s %s/%s: server: %v, fake: %v", s.op, s.obj.GetNamespace(), s.obj.GetName(), err, fakeErr)
			}
		}
	}
	play(
		step{"create", cm(nsA, "web", "web", "1")}, step{"create", cm(nsA, "db", "db", "1")},
		step{"create", cm(nsB, "web", "web", "1")}, step{"create", cm(nsC, "web", "web", "1")},
		step{"create", cm(nsA, "skip", "web", "1")}, step{"create", secret(nsA, "s1", "1")},
		step{"create", secret(nsC, "s1", "1")},
	)

	opts := informer.FactoryOptions{
		Namespaces: []string{nsA, nsB},
		TweakListOptions: func(o *metav1.ListOptions) {
			o.FieldSelector = strings.Trim(o.FieldSelector+",metadata.name!=skip", ",")
		},
		DefaultTransform: func(obj any) (any, error) {
			obj.(informer.Object).SetAnnotations(map[string]string{"transformed": "default"})
			return obj, nil
		},
	}
	real, err := informer.NewFactory(c.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(real.Shutdown)
	test, err := fake.NewFactory(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(test.Shutdown)

	type side struct {
		name    string
		cms     *informer.SharedIndexInformer[*corev1.ConfigMap]
		secrets *informer.SharedIndexInformer[*corev1.Secret]
		cmRec   *informertest.Recorder[*corev1.ConfigMap]
		sRec    *informertest.Recorder[*corev1.Secret]
	}
	mark := func(o *corev1.ConfigMap) (*corev1.ConfigMap, error) {
		o.Labels["seen"] = o.Data["v"]
		return o, nil
	}
	byApp := func(o *corev1.ConfigMap) ([]string, error) { return []string{o.Labels["app"]}, nil }
	var sides []side
	for i, f := range []*informer.Factory{real, test} {
		s := side{name: []string{"server", "fake"}[i], cmRec: &informertest.Recorder[*corev1.ConfigMap]{}, sRec: &informertest.Recorder[*corev1.Secret]{}}
		if s.cms, err = informer.For(f, informer.ForOptions[*corev1.ConfigMap]{
			LabelSelector: "app=web", Transform: mark, Indexers: informer.Indexers[*corev1.ConfigMap]{"app": byApp},
		}); err != nil {
			t.Fatal(err)
		}
		if s.secrets, err = informer.For[*corev1.Secret](f); err != nil {
			t.Fatal(err)
		}
		if _, err := s.cms.AddEventHandler(s.cmRec); err != nil {
			t.Fatal(err)
		}
		if _, err := s.secrets.AddEventHandler(s.sRec); err != nil {
			t.Fatal(err)
		}
		f.Start(ctx)
		if _, err := f.WaitForCacheSync(ctx); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		sides = append(sides, s)
	}

	play(
		step{"update", cm(nsA, "web", "web", "2")},
		step{"update", cm(nsB, "web", "db", "2")}, // leaves app=web
		step{"update", cm(nsA, "db", "web", "2")}, // enters app=web
		step{"create", cm(nsB, "api", "web", "1")},
		step{"create", cm(nsC, "api", "web", "1")},  // a namespace left out
		step{"update", cm(nsA, "skip", "web", "2")}, // a name the field selector leaves out
		step{"delete", cm(nsA, "web", "web", "2")},
		step{"update", secret(nsA, "s1", "2")},
		step{"update", secret(nsC, "s1", "2")},
		step{"create", secret(nsB, "s2", "1")},
		step{"delete", secret(nsA, "s1", "2")},
		step{"create", cm(nsA, "zz-end", "web", "end")},
		step{"create", secret(nsA, "zz-end", "end")},
	)

	// Each object's calls, in order; objects apart, as two namespaces' watches are merged in no
	// set order.
	type call struct {
		Kind             string
		Initial, Unknown bool
		Old, New         string
	}
	describeCM := func(o *corev1.ConfigMap) string {
		if o == nil {
			return ""
		}
		return fmt.Sprintf("app=%s seen=%s v=%s %v", o.Labels["app"], o.Labels["seen"], o.Data["v"], o.Annotations)
	}
	describeSecret := func(o *corev1.Secret) string {
		if o == nil {
			return ""
		}
		return fmt.Sprintf("v=%s %v", o.Data["v"], o.Annotations)
	}
	var calls [2]map[string][]call
	var caches [2]map[string]string
	for i, s := range sides {
		if err := s.cmRec.WaitForKey(ctx, informertest.OnAdd, nsA+"/zz-end", ""); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if err := s.sRec.WaitForKey(ctx, informertest.OnAdd, nsA+"/zz-end", ""); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		calls[i], caches[i] = map[string][]call{}, map[string]string{}
		for _, c := range s.cmRec.Calls() {
			calls[i]["configmap "+c.Key] = append(calls[i]["configmap "+c.Key], call{c.Kind.String(), c.Initial, c.FinalStateUnknown, describeCM(c.Old), describeCM(c.New)})
		}
		for _, c := range s.sRec.Calls() {
			calls[i]["secret "+c.Key] = append(calls[i]["secret "+c.Key], call{c.Kind.String(), c.Initial, c.FinalStateUnknown, describeSecret(c.Old), describeSecret(c.New)})
		}
		for _, o := range s.cms.GetIndexer().List() {
			caches[i]["configmap "+o.Namespace+"/"+o.Name] = describeCM(o)
		}
		for _, o := range s.secrets.GetIndexer().List() {
			caches[i]["secret "+o.Namespace+"/"+o.Name] = describeSecret(o)
		}
		if web, err := s.cms.GetIndexer().ByIndex("app", "web"); err != nil || len(web) != len(s.cms.GetIndexer().List()) {
			t.Errorf("%s: ByIndex(app, web) = %d objects, %v", s.name, len(web), err)
		}
	}
	if diff := cmp.Diff(calls[0], calls[1]); diff != "" {
		t.Errorf("handler calls differ (-server +fake):\n%s", diff)
	}
	if diff := cmp.Diff(caches[0], caches[1]); diff != "" {
		t.Errorf("caches differ (-server +fake):\n%s", diff)
	}
	wantKeys := []string{
		"configmap " + nsA + "/db", "configmap " + nsA + "/zz-end", "configmap " + nsB + "/api",
		"secret " + nsA + "/zz-end", "secret " + nsB + "/s2",
	}
	slices.Sort(wantKeys)
	if got := slices.Sorted(maps.Keys(caches[0])); !cmp.Equal(got, wantKeys) {
		t.Errorf("server's caches hold %v, want %v", got, wantKeys)
	}
}
