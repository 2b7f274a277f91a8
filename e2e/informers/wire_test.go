package informers

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"github.com/typedkube/informer/e2e/internal/widget"
	"github.com/typedkube/informer/wire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// The Widget projection the e2e tests cache (the Pod one is kubetest.PodSlim).
type (
	widgetSlim struct {
		wire.Meta[widgetSlim]
		Spec struct{ Color string }
	}
)

// TestFactoryWireTyped runs For[*corev1.Pod] decoded by package wire.
func TestFactoryWireTyped(t *testing.T) {
	runCRUD(t, crudCase[*corev1.Pod]{
		gvr:      podsGVR,
		informer: fromFactory(informer.FactoryOptions{Decoding: informer.DecodeWire}, informer.For[*corev1.Pod]),
		object:   podObject,
		check: func(p *corev1.Pod) error {
			if len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Image != podImage || p.Labels["app"] != "e2e" {
				return fmt.Errorf("pod %+v, want one container running %s and the label app=e2e", p, podImage)
			}
			if len(p.ManagedFields) == 0 {
				return fmt.Errorf("no managedFields: the full object keeps them")
			}
			return nil
		},
	})
}

// TestFactoryProjection runs ForProjection over Pods in protobuf.
func TestFactoryProjection(t *testing.T) {
	runCRUD(t, crudCase[*kubetest.PodSlim]{
		gvr:      podsGVR,
		informer: fromFactory(informer.FactoryOptions{}, informer.ForProjection[kubetest.PodSlim, corev1.Pod]),
		object:   podObject,
		check: func(p *kubetest.PodSlim) error {
			if len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Image != podImage || p.Labels["app"] != "e2e" || p.UID == "" {
				return fmt.Errorf("projection %+v, want one container running %s, the label app=e2e and a UID", p, podImage)
			}
			if p.Status.Phase != corev1.PodPending {
				return fmt.Errorf("phase %q, want Pending", p.Status.Phase)
			}
			return nil
		},
	})
}

// TestFactoryProjectionCRD runs ForProjection over Widgets, which the server serves in JSON.
func TestFactoryProjectionCRD(t *testing.T) {
	runCRUD(t, crudCase[*widgetSlim]{
		gvr:      widget.GVR,
		setup:    installWidgets,
		informer: fromFactory(informer.FactoryOptions{Scheme: widgetScheme(t)}, informer.ForProjection[widgetSlim, widget.Widget]),
		object:   widgetObject,
		check: func(w *widgetSlim) error {
			if w.Spec.Color != "blue-"+w.Name || w.UID == "" {
				return fmt.Errorf("projection %+v, want color blue-%s and a UID", w, w.Name)
			}
			return nil
		},
	})
}

// variedPod is a Pod with most of what a real one carries, varied by i.
func variedPod(i int) *corev1.Pod {
	grace := int64(i % 40)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("varied-%03d", i),
			Labels:      map[string]string{"app": "varied", "idx": fmt.Sprint(i), "tier": []string{"a", "b", "c"}[i%3]},
			Annotations: map[string]string{"note": strings.Repeat("n", i), "empty": ""},
			Finalizers:  []string{"example.com/f" + fmt.Sprint(i%2)},
		},
		Spec: corev1.PodSpec{
			NodeName:                      fmt.Sprintf("node-%d", i%4),
			TerminationGracePeriodSeconds: &grace,
			Tolerations:                   []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{
				Name: "main", Image: fmt.Sprintf("registry.example/app:%d", i%5),
				Args:  []string{"--i", fmt.Sprint(i)},
				Env:   []corev1.EnvVar{{Name: "I", Value: fmt.Sprint(i)}, {Name: "FROM", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080 + int32(i)}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(fmt.Sprintf("%dm", 10+i))},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dMi", 64+i))},
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}}},
			}},
		},
	}
}

// TestWireMatchesClientGo lists and watches the same varied Pods with client-go's informer and
// with ours decoding through package wire, full and projected: after each sync and after a round
// of updates, our full objects equal client-go's under go-cmp, and our projections equal the
// projection of client-go's objects.
func TestWireMatchesClientGo(t *testing.T) {
	verifyNoGoroutinesLeft(t)
	ctx := testContext(t, 2*time.Minute)
	c := adminClients(t)
	ns := newNamespace(t, c)
	const n = 60
	err := kubetest.Parallel(ctx, n, 8, func(ctx context.Context, i int) error {
		_, err := c.Kube.CoreV1().Pods(ns).Create(ctx, variedPod(i), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	upstream := informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, informers.WithNamespace(ns))
	ref := upstream.Core().V1().Pods().Informer()
	stop := make(chan struct{})
	upstream.Start(stop)
	defer upstream.Shutdown()
	defer close(stop)

	f := newFactory(t, c.Config, ns, informer.FactoryOptions{Decoding: informer.DecodeWire})
	full, err := informer.For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	slim, err := informer.ForProjection[kubetest.PodSlim, corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx)
	defer f.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), ref.HasSynced) {
		t.Fatal("client-go's informer did not sync")
	}
	if _, err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	compare := func(round string, wantRV map[string]string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var want []*corev1.Pod
			for _, o := range ref.GetStore().List() {
				want = append(want, o.(*corev1.Pod))
			}
			got := full.GetIndexer().List()
			gotSlim := slim.GetIndexer().List()
			ready := len(want) == n && len(got) == n && len(gotSlim) == n
			for _, p := range append(append([]*corev1.Pod{}, want...), got...) {
				if rv, ok := wantRV[p.Name]; ok && p.ResourceVersion != rv {
					ready = false
				}
			}
			for _, p := range gotSlim {
				if rv, ok := wantRV[p.Name]; ok && p.ResourceVersion != rv {
					ready = false
				}
			}
			if !ready {
				if time.Now().After(deadline) {
					t.Fatalf("%s: caches hold %d (client-go), %d (wire), %d (projection) Pods at the expected versions, want %d each", round, len(want), len(got), len(gotSlim), n)
				}
				time.Sleep(20 * time.Millisecond)
				continue
			}
			byName := func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) }
			slices.SortFunc(want, byName)
			slices.SortFunc(got, byName)
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("%s: wire's Pods differ from client-go's (-client-go +wire):\n%s", round, d)
			}
			slices.SortFunc(gotSlim, func(a, b *kubetest.PodSlim) int { return strings.Compare(a.Name, b.Name) })
			for i, p := range want {
				if d := cmp.Diff(projectPod(p), gotSlim[i]); d != "" {
					t.Fatalf("%s: projection of %s differs from client-go's object projected (-client-go +wire):\n%s", round, p.Name, d)
				}
			}
			return
		}
	}
	compare("initial sync", nil)
	rvs := map[string]string{}
	for i := 0; i < n; i += 3 {
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, variedPod(i).Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Labels["round"] = "2"
		p.Annotations["note"] = "changed"
		p.Spec.Containers[0].Image = "registry.example/app:new"
		if p, err = c.Kube.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		rvs[p.Name] = p.ResourceVersion
	}
	compare("after updates", rvs)
}

// projectPod copies p's fields into a kubetest.PodSlim, as the projection's definition says.
func projectPod(p *corev1.Pod) *kubetest.PodSlim {
	s := &kubetest.PodSlim{}
	m := p.ObjectMeta
	s.Name, s.GenerateName, s.Namespace, s.UID, s.ResourceVersion = m.Name, m.GenerateName, m.Namespace, m.UID, m.ResourceVersion
	s.Generation, s.CreationTimestamp, s.DeletionTimestamp, s.DeletionGracePeriodSeconds = m.Generation, m.CreationTimestamp, m.DeletionTimestamp, m.DeletionGracePeriodSeconds
	s.Labels, s.Annotations, s.OwnerReferences, s.Finalizers = m.Labels, m.Annotations, m.OwnerReferences, m.Finalizers
	s.Spec.NodeName = p.Spec.NodeName
	for _, c := range p.Spec.Containers {
		s.Spec.Containers = append(s.Spec.Containers, kubetest.ContainerSlim{Name: c.Name, Image: c.Image})
	}
	s.Status.Phase = p.Status.Phase
	return s
}

var _ = reflect.TypeOf
