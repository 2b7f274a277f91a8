package controllerruntime

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/controllerruntime/typedcache"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDifferential plays one script of creates, updates and deletes of Pods and ConfigMaps in
// two namespaces on the real API server, with controller-runtime's own cache (cache.New) and
// ours (typedcache.New) made with the same options, and after each step asks both the same
// questions: every Get (typed, Unstructured, PartialObjectMetadata, deep-copied and not), and
// Lists by namespace, label selectors of every operator, field selectors from IndexField, Limit
// and Continue. The answers must be equal under go-cmp, errors included; list items are
// compared in name order, since neither cache orders them.
func TestDifferential(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func(ns1, ns2 string) cache.Options
		// holds says whether the caches hold an object of kind in namespace ns (the
		// second of the test's two) with labels.
		holds func(kind string, second bool, labels map[string]string) bool
	}{
		{"all namespaces", func(string, string) cache.Options { return cache.Options{} }, func(string, bool, map[string]string) bool { return true }},
		{"namespaces and ByObject", func(ns1, ns2 string) cache.Options {
			return cache.Options{
				DefaultNamespaces: map[string]cache.Config{
					ns1: {},
					ns2: {LabelSelector: labels.SelectorFromSet(labels.Set{"tier": "front"})},
				},
				ByObject: map[client.Object]cache.ByObject{
					&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{"app": "web"}), UnsafeDisableDeepCopy: ptr.To(true)},
				},
			}
		}, func(kind string, second bool, l map[string]string) bool {
			// A namespace's own settings come first: in the second, tier=front for both
			// kinds; in the first, the ByObject's app=web for ConfigMaps.
			switch {
			case second:
				return l["tier"] == "front"
			case kind == "ConfigMap":
				return l["app"] == "web"
			}
			return true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { differential(t, tc.opts, tc.holds) })
	}
}

func differential(t *testing.T, optsFor func(ns1, ns2 string) cache.Options, holds func(string, bool, map[string]string) bool) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	admin := adminClients(t)
	ns1, err := kubetest.NewNamespace(ctx, admin.Kube, "diff")
	if err != nil {
		t.Fatal(err)
	}
	ns2, err := kubetest.NewNamespace(ctx, admin.Kube, "diff")
	if err != nil {
		t.Fatal(err)
	}
	cfg := srv.AdminConfig()
	scheme := newScheme()
	caches := map[string]cache.Cache{}
	for name, newCache := range map[string]cache.NewCacheFunc{"upstream": cache.New, "typed": typedcache.New} {
		opts := optsFor(ns1, ns2)
		opts.Scheme = scheme
		c, err := newCache(cfg, opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		caches[name] = c
		cctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- c.Start(cctx) }()
		t.Cleanup(func() {
			stop()
			if err := <-done; err != nil {
				t.Errorf("%s: Start: %v", name, err)
			}
		})
		if !c.WaitForCacheSync(ctx) {
			t.Fatalf("%s: not synced", name)
		}
		for _, obj := range indexed() {
			if err := c.IndexField(ctx, obj, "spec.nodeName", nodeName); err != nil {
				t.Fatalf("%s: IndexField %T: %v", name, obj, err)
			}
			if err := c.IndexField(ctx, obj, "app", appLabel); err != nil {
				t.Fatalf("%s: IndexField %T: %v", name, obj, err)
			}
		}
	}
	s := &script{rng: rng, kube: admin, namespaces: []string{ns1, ns2}}
	for step := range 12 {
		if err := s.step(ctx, step); err != nil {
			t.Fatal(err)
		}
		waitSame(t, ctx, caches, s, holds)
		for _, q := range s.questions() {
			up := q.ask(ctx, caches["upstream"])
			ours := q.ask(ctx, caches["typed"])
			if diff := cmp.Diff(up, ours); diff != "" {
				t.Fatalf("step %d: %s: upstream and typed differ (-upstream +typed):\n%s", step, q.name, diff)
			}
		}
	}
	t.Logf("%d questions after each of 12 steps, %d objects at the end", len(s.questions()), len(s.live))
}

// indexed are the objects IndexField indexes, in every representation.
func indexed() []client.Object {
	var out []client.Object
	for _, kind := range []string{"Pod", "ConfigMap"} {
		gvk := corev1.SchemeGroupVersion.WithKind(kind)
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		out = append(out, u, m)
	}
	return append(out, &corev1.Pod{}, &corev1.ConfigMap{})
}

// nodeName indexes a Pod's node, a ConfigMap's data["node"], in any representation (metadata
// has neither: it indexes the annotation the script mirrors them into).
func nodeName(o client.Object) []string {
	switch o := o.(type) {
	case *corev1.Pod:
		return []string{o.Spec.NodeName}
	case *corev1.ConfigMap:
		return []string{o.Data["node"]}
	case *unstructured.Unstructured:
		if v, ok, _ := unstructured.NestedString(o.Object, "spec", "nodeName"); ok {
			return []string{v}
		}
		v, _, _ := unstructured.NestedString(o.Object, "data", "node")
		return []string{v}
	}
	return []string{o.GetAnnotations()["node"]}
}

func appLabel(o client.Object) []string {
	if v, ok := o.GetLabels()["app"]; ok {
		return []string{v}
	}
	return nil
}

// script writes Pods and ConfigMaps in random steps, and knows what exists.
type script struct {
	rng        *rand.Rand
	kube       *kubetest.Clients
	namespaces []string
	live       []client.ObjectKey // "pod/" or "cm/" in Name's prefix
	next       int
}

var (
	apps  = []string{"web", "db", "cache"}
	tiers = []string{"front", "back", ""}
	nodes = []string{"n1", "n2", "n3"}
)

func (s *script) labels() map[string]string {
	l := map[string]string{"app": apps[s.rng.IntN(len(apps))]}
	if t := tiers[s.rng.IntN(len(tiers))]; t != "" {
		l["tier"] = t
	}
	return l
}

// step makes a round of writes: creates first, then updates and deletes of what exists.
func (s *script) step(ctx context.Context, step int) error {
	creates := 8
	if step > 2 {
		creates = 3
	}
	for range creates {
		ns := s.namespaces[s.rng.IntN(2)]
		node := nodes[s.rng.IntN(len(nodes))]
		meta := metav1.ObjectMeta{Namespace: ns, Labels: s.labels(), Annotations: map[string]string{"node": node}}
		s.next++
		if s.rng.IntN(2) == 0 {
			meta.Name = fmt.Sprintf("pod-%d", s.next)
			p := &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}
			if _, err := s.kube.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				return err
			}
		} else {
			meta.Name = fmt.Sprintf("cm-%d", s.next)
			cm := &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"node": node}}
			if _, err := s.kube.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		s.live = append(s.live, client.ObjectKey{Namespace: ns, Name: meta.Name})
	}
	for range 4 {
		if len(s.live) == 0 {
			break
		}
		i := s.rng.IntN(len(s.live))
		key := s.live[i]
		if s.rng.IntN(3) == 0 {
			s.live = slices.Delete(s.live, i, i+1)
			if err := s.delete(ctx, key); err != nil {
				return err
			}
			continue
		}
		if err := s.relabel(ctx, key); err != nil {
			return err
		}
	}
	return nil
}

func (s *script) delete(ctx context.Context, key client.ObjectKey) error {
	if strings.HasPrefix(key.Name, "pod-") {
		return s.kube.Kube.CoreV1().Pods(key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}
	return s.kube.Kube.CoreV1().ConfigMaps(key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{})
}

// relabel moves an object to other labels (in and out of selectors), and a ConfigMap to another
// node.
func (s *script) relabel(ctx context.Context, key client.ObjectKey) error {
	if strings.HasPrefix(key.Name, "pod-") {
		p, err := s.kube.Kube.CoreV1().Pods(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Labels = s.labels()
		_, err = s.kube.Kube.CoreV1().Pods(key.Namespace).Update(ctx, p, metav1.UpdateOptions{})
		return err
	}
	cm, err := s.kube.Kube.CoreV1().ConfigMaps(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cm.Labels = s.labels()
	node := nodes[s.rng.IntN(len(nodes))]
	cm.Data = map[string]string{"node": node}
	cm.Annotations = map[string]string{"node": node}
	_, err = s.kube.Kube.CoreV1().ConfigMaps(key.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// question is one read, asked of a cache; its answer is what a reader sees.
type question struct {
	name string
	ask  func(ctx context.Context, c cache.Cache) answer
}

// answer is a read's result: the objects, in name order, or the error.
type answer struct {
	Objects []client.Object
	Count   int // for Limit: how many, since which ones is up to the cache
	Err     string
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	if apierrors.IsNotFound(err) {
		return "NotFound: " + err.Error()
	}
	return "error" // the texts differ; that there is one is what counts
}

// representations are the ways to read a kind: typed, Unstructured and PartialObjectMetadata.
func representations(kind string) []struct {
	name    string
	newObj  func() client.Object
	newList func() client.ObjectList
} {
	gvk := corev1.SchemeGroupVersion.WithKind(kind)
	typedObj := func() client.Object {
		if kind == "Pod" {
			return &corev1.Pod{}
		}
		return &corev1.ConfigMap{}
	}
	typedList := func() client.ObjectList {
		if kind == "Pod" {
			return &corev1.PodList{}
		}
		return &corev1.ConfigMapList{}
	}
	return []struct {
		name    string
		newObj  func() client.Object
		newList func() client.ObjectList
	}{
		{"typed", typedObj, typedList},
		{"unstructured", func() client.Object {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			return u
		}, func() client.ObjectList {
			u := &unstructured.UnstructuredList{}
			u.SetGroupVersionKind(gvk.GroupVersion().WithKind(kind + "List"))
			return u
		}},
		{"metadata", func() client.Object {
			m := &metav1.PartialObjectMetadata{}
			m.SetGroupVersionKind(gvk)
			return m
		}, func() client.ObjectList {
			m := &metav1.PartialObjectMetadataList{}
			m.SetGroupVersionKind(gvk.GroupVersion().WithKind(kind + "List"))
			return m
		}},
	}
}

// questions are the reads asked after each step.
func (s *script) questions() []question {
	var qs []question
	mustLabels := func(s string) labels.Selector {
		sel, err := labels.Parse(s)
		if err != nil {
			panic(err)
		}
		return sel
	}
	for _, kind := range []string{"Pod", "ConfigMap"} {
		prefix := "pod-"
		if kind == "ConfigMap" {
			prefix = "cm-"
		}
		for _, rep := range representations(kind) {
			for _, unsafe := range []bool{false, true} {
				var getOpts []client.GetOption
				var listOpts []client.ListOption
				mode := "deep copy"
				if unsafe {
					getOpts = append(getOpts, client.UnsafeDisableDeepCopy)
					listOpts = append(listOpts, client.UnsafeDisableDeepCopy)
					mode = "unsafe"
				}
				keys := slices.Clone(s.live)
				keys = append(keys, client.ObjectKey{Namespace: s.namespaces[0], Name: prefix + "missing"})
				qs = append(qs, question{
					name: fmt.Sprintf("Get of every %s (%s, %s)", kind, rep.name, mode),
					ask: func(ctx context.Context, c cache.Cache) answer {
						var a answer
						for _, k := range keys {
							if !strings.HasPrefix(k.Name, prefix) {
								continue
							}
							obj := rep.newObj()
							if err := c.Get(ctx, k, obj, getOpts...); err != nil {
								a.Err += k.String() + ": " + errText(err) + "\n"
								continue
							}
							a.Objects = append(a.Objects, obj)
						}
						return a
					},
				})
				for _, l := range []struct {
					name string
					opts []client.ListOption
				}{
					{"all", nil},
					{"namespace", []client.ListOption{client.InNamespace(s.namespaces[0])}},
					{"app=web", []client.ListOption{client.MatchingLabels{"app": "web"}}},
					{"app in (web,db), namespace", []client.ListOption{client.InNamespace(s.namespaces[1]), client.MatchingLabelsSelector{Selector: mustLabels("app in (web,db)")}}},
					{"app notin (db)", []client.ListOption{client.MatchingLabelsSelector{Selector: mustLabels("app notin (db)")}}},
					{"tier", []client.ListOption{client.HasLabels{"tier"}}},
					{"!tier", []client.ListOption{client.MatchingLabelsSelector{Selector: mustLabels("!tier")}}},
					{"spec.nodeName=n1", []client.ListOption{client.MatchingFields{"spec.nodeName": "n1"}}},
					{"spec.nodeName=n2, namespace", []client.ListOption{client.InNamespace(s.namespaces[1]), client.MatchingFields{"spec.nodeName": "n2"}}},
					{"spec.nodeName=n3, app=db", []client.ListOption{client.MatchingFields{"spec.nodeName": "n3", "app": "db"}}},
					{"spec.nodeName=n1, tier=front", []client.ListOption{client.MatchingFields{"spec.nodeName": "n1"}, client.MatchingLabels{"tier": "front"}}},
					{"field not indexed", []client.ListOption{client.MatchingFields{"status.phase": "Pending"}}},
					{"field not exact", []client.ListOption{client.MatchingFieldsSelector{Selector: fields.OneTermNotEqualSelector("spec.nodeName", "n1")}}},
					{"continue", []client.ListOption{client.Continue("abc")}},
				} {
					opts := append(slices.Clone(l.opts), listOpts...)
					qs = append(qs, question{
						name: fmt.Sprintf("List %s %s (%s, %s)", kind, l.name, rep.name, mode),
						ask: func(ctx context.Context, c cache.Cache) answer {
							list := rep.newList()
							if err := c.List(ctx, list, opts...); err != nil {
								return answer{Err: errText(err)}
							}
							return answer{Objects: sortedItems(list), Count: -1}
						},
					})
				}
				qs = append(qs, question{
					name: fmt.Sprintf("List %s with Limit 3 (%s, %s)", kind, rep.name, mode),
					ask: func(ctx context.Context, c cache.Cache) answer {
						list := rep.newList()
						if err := c.List(ctx, list, append([]client.ListOption{client.Limit(3), client.InNamespace(s.namespaces[0])}, listOpts...)...); err != nil {
							return answer{Err: errText(err)}
						}
						return answer{Count: len(sortedItems(list))}
					},
				})
			}
		}
	}
	return qs
}

// sortedItems returns the items of list as objects, in namespace and name order, with the
// list's continue token and resource version recorded in the first slot's place: they are
// part of the answer.
func sortedItems(list client.ObjectList) []client.Object {
	var out []client.Object
	switch l := list.(type) {
	case *corev1.PodList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.ConfigMapList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *unstructured.UnstructuredList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *metav1.PartialObjectMetadataList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	slices.SortFunc(out, func(a, b client.Object) int {
		return strings.Compare(a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName())
	})
	marker := &metav1.PartialObjectMetadata{}
	marker.Name = "continue=" + list.GetContinue() + " resourceVersion=" + list.GetResourceVersion()
	return append([]client.Object{marker}, out...)
}

// waitSame waits until both caches hold what the server has of the script's namespaces that
// their options select (holds): the same names at the same resource versions, read through
// each representation, so that the questions find both caches at rest.
func waitSame(t *testing.T, ctx context.Context, caches map[string]cache.Cache, s *script, holds func(string, bool, map[string]string) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		want, err := serverState(ctx, s, holds)
		if err != nil {
			t.Fatal(err)
		}
		var lag []string
		for name, c := range caches {
			for _, kind := range []string{"Pod", "ConfigMap"} {
				for _, rep := range representations(kind) {
					got, err := cacheState(ctx, c, rep.newList(), s.namespaces)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if !cmp.Equal(want[kind], got) {
						lag = append(lag, fmt.Sprintf("%s %s %s: %s", name, kind, rep.name, cmp.Diff(want[kind], got)))
					}
				}
			}
		}
		if len(lag) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the caches did not reach the server's state within 60s (-server +cache): %v", lag)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serverState is what the server has in the script's namespaces that holds selects: key ->
// resource version, per kind.
func serverState(ctx context.Context, s *script, holds func(string, bool, map[string]string) bool) (map[string]map[string]string, error) {
	out := map[string]map[string]string{"Pod": {}, "ConfigMap": {}}
	for i, ns := range s.namespaces {
		pods, err := s.kube.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for _, p := range pods.Items {
			if holds("Pod", i == 1, p.Labels) {
				out["Pod"][ns+"/"+p.Name] = p.ResourceVersion
			}
		}
		cms, err := s.kube.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for _, c := range cms.Items {
			if strings.HasPrefix(c.Name, "cm-") && holds("ConfigMap", i == 1, c.Labels) {
				out["ConfigMap"][ns+"/"+c.Name] = c.ResourceVersion
			}
		}
	}
	return out, nil
}

// cacheState is what c holds of list's kind in namespaces: key -> resource version.
func cacheState(ctx context.Context, c cache.Cache, list client.ObjectList, namespaces []string) (map[string]string, error) {
	out := map[string]string{}
	for _, ns := range namespaces {
		l := list.DeepCopyObject().(client.ObjectList)
		if err := c.List(ctx, l, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		for _, o := range sortedItems(l)[1:] {
			if !strings.HasPrefix(o.GetName(), "cm-") && !strings.HasPrefix(o.GetName(), "pod-") {
				continue // not the script's
			}
			out[o.GetNamespace()+"/"+o.GetName()] = o.GetResourceVersion()
		}
	}
	return out, nil
}

// adminClients returns clients of the admin identity straight to the API server, closed when
// the test ends.
func adminClients(t *testing.T) *kubetest.Clients {
	t.Helper()
	cfg := srv.AdminConfig()
	cfg.Host = srv.APIServerURL()
	c, err := kubetest.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
