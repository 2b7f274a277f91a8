package informer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
	"github.com/typedkube/informer/wire"
)

func labelled(ns, name, app string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}}}
}

// A factory over client-go's fake clientset, as in a controller's unit
// test, with an informer over two namespaces and a label selector.
func ExampleNewFactoryForClients() {
	cs := fake.NewClientset(
		labelled("team-a", "web-1", "web"), labelled("team-a", "db-1", "db"),
		labelled("team-b", "web-2", "web"), labelled("team-c", "web-3", "web"),
	)
	f, err := informer.NewFactoryForClients(informer.FactoryClients{Kube: cs}, informer.FactoryOptions{})
	if err != nil {
		panic(err)
	}
	defer f.Shutdown()
	pods, err := informer.For(f, informer.ForOptions[*corev1.Pod]{
		Namespaces:    []string{"team-a", "team-b"},
		LabelSelector: "app=web",
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f.Start(ctx)
	fmt.Println(f.WaitForCacheSync(ctx))
	fmt.Println(slices.Sorted(pods.GetIndexer().Keys()))
	inB, _ := pods.Lister().ByNamespace("team-b").List(labels.Everything())
	fmt.Println(len(inB), "in team-b")
	// Output:
	// map[v1/pods:true] <nil>
	// [team-a/web-1 team-b/web-2]
	// 1 in team-b
}

// A list the server refuses ends the wait at once, with the cause.
func ExampleSyncError() {
	cs := fake.NewClientset()
	cs.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC: access denied"))
	})
	quiet := informer.InformerOptions{Reflector: informer.ReflectorOptions{WatchErrorHandler: func(context.Context, error) {}}}
	f, err := informer.NewFactoryForClients(informer.FactoryClients{Kube: cs}, informer.FactoryOptions{Informer: quiet})
	if err != nil {
		panic(err)
	}
	defer f.Shutdown()
	if _, err := informer.For[*corev1.Pod](f); err != nil {
		panic(err)
	}
	f.Start(context.Background())
	synced, err := f.WaitForCacheSync(context.Background()) // no deadline needed
	var se *informer.SyncError
	fmt.Println(synced, apierrors.IsForbidden(err), errors.As(err, &se) && se.Informer == "v1/pods")
	// Output:
	// map[v1/pods:false] true true
}

// Remove stops one informer and forgets it; For makes a new one later.
func ExampleFactory_Remove() {
	cs := fake.NewClientset(labelled("default", "web-1", "web"))
	f, err := informer.NewFactoryForClients(informer.FactoryClients{Kube: cs}, informer.FactoryOptions{})
	if err != nil {
		panic(err)
	}
	defer f.Shutdown()
	pods, _ := informer.For[*corev1.Pod](f)
	ctx := context.Background()
	f.Start(ctx)
	f.WaitForCacheSync(ctx)
	fmt.Println(f.Remove(ctx, pods.Name()), pods.IsStopped())
	fmt.Println(f.WaitForCacheSync(ctx))
	again, _ := informer.For[*corev1.Pod](f)
	fmt.Println(again != pods)
	// Output:
	// <nil> true
	// map[] <nil>
	// true
}

// A handler that sees only the Pods of one app, and waits for the
// initial list through its registration.
func ExampleFilteringResourceEventHandler() {
	src := informertest.NewSource(labelled("default", "web-1", "web"), labelled("default", "db-1", "db"))
	inf, err := informer.NewSharedIndexInformer[*corev1.Pod](src, informer.SharedIndexInformerOptions[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	deleted := make(chan struct{})
	reg, _ := inf.AddEventHandler(informer.FilteringResourceEventHandler[*corev1.Pod]{
		FilterFunc: func(p *corev1.Pod) bool { return p.Labels["app"] == "web" },
		Handler: informer.ResourceEventHandlerFuncs[*corev1.Pod]{
			AddFunc: func(p *corev1.Pod, initial bool) { fmt.Println("add", p.Name, initial) },
			DeleteFunc: func(d informer.DeletedObject[*corev1.Pod]) {
				fmt.Println("delete", d.Key, "final state unknown:", d.FinalStateUnknown)
				close(deleted)
			},
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = inf.Run(ctx) }()
	informer.WaitForCacheSync(ctx, reg)
	src.Delete(labelled("default", "db-1", "db")) // filtered out
	src.Delete(labelled("default", "web-1", "web"))
	<-deleted
	cancel()
	<-done
	// Output:
	// add web-1 true
	// delete default/web-1 final state unknown: false
}

// Read-your-writes: wait until the cache has applied a write before
// reading it.
func ExampleLister_AtLeast() {
	src := informertest.NewSource[*corev1.Pod]()
	inf, _ := informer.NewSharedIndexInformer[*corev1.Pod](src, informer.SharedIndexInformerOptions[*corev1.Pod]{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	done := make(chan struct{})
	go func() { defer close(done); _ = inf.Run(ctx) }()
	informer.WaitForCacheSync(ctx, inf)

	created, _ := src.Add(labelled("default", "web-1", "web")) // as a client's Create returns it
	lister, err := inf.Lister().AtLeast(ctx, created.ResourceVersion)
	if err != nil {
		panic(err)
	}
	p, err := lister.ByNamespace("default").Get("web-1")
	fmt.Println(p.Name, err)
	cancel()
	<-done
	// Output:
	// web-1 <nil>
}

// Select iterates over the Pods a selector matches, from the label
// index, without allocating.
func ExampleLister_Select() {
	src := informertest.NewSource(labelled("a", "web-1", "web"), labelled("a", "db-1", "db"), labelled("b", "web-2", "web"))
	inf, _ := informer.NewSharedIndexInformer[*corev1.Pod](src, informer.SharedIndexInformerOptions[*corev1.Pod]{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = inf.Run(ctx) }()
	informer.WaitForCacheSync(ctx, inf)

	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	var names []string
	for p := range inf.Lister().Select(web) {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	slices.Sort(names)
	fmt.Println(names)
	for p := range inf.Lister().ByNamespace("b").Select(web) {
		fmt.Println(p.Name)
	}
	cancel()
	<-done
	// Output:
	// [a/web-1 b/web-2]
	// web-2
}

// PodSlim is a projection of a Pod: the informer decodes these fields
// straight from the wire, and caches nothing else.
type PodSlim struct {
	wire.Meta[PodSlim]
	Spec struct {
		NodeName   string
		Containers []struct{ Name, Image string }
	}
	Status struct{ Phase corev1.PodPhase }
}

func ExampleForProjection() {
	full := labelled("default", "web-1", "web")
	full.Spec = corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27", Args: []string{"-g", "daemon off;"}}}}
	full.Status.Phase = corev1.PodRunning
	cs := fake.NewClientset(full)
	f, err := informer.NewFactoryForClients(informer.FactoryClients{Kube: cs}, informer.FactoryOptions{})
	if err != nil {
		panic(err)
	}
	defer f.Shutdown()
	pods, err := informer.ForProjection[PodSlim, corev1.Pod](f)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	f.Start(ctx)
	fmt.Println(f.WaitForCacheSync(ctx))
	p, _ := pods.Lister().ByNamespace("default").Get("web-1")
	fmt.Println(p.Name, p.Labels, p.Spec.NodeName, p.Spec.Containers, p.Status.Phase)
	// Output:
	// map[v1/pods (PodSlim):true] <nil>
	// web-1 map[app:web] node-a [{app nginx:1.27}] Running
}

// One informer over two namespaces of a source.
func ExampleMultiNamespaceListWatch() {
	src := informertest.NewSource(labelled("a", "p1", "web"), labelled("b", "p2", "web"), labelled("c", "p3", "web"))
	lw, err := informer.MultiNamespaceListWatch([]string{"a", "b"}, func(ns string) (informer.ListerWatcher[*corev1.Pod], error) {
		// A program passes a namespaced client, such as
		// informer.ListWatchFromClient[corev1.Pod](cs.CoreV1().Pods(ns), nil).
		inNS := fields.OneTermEqualSelector("metadata.namespace", ns).String()
		return informer.ListWatchFuncs[*corev1.Pod]{
			ListFunc: func(ctx context.Context, o metav1.ListOptions) (*informer.ListPage[*corev1.Pod], error) {
				o.FieldSelector = inNS
				return src.List(ctx, o)
			},
			WatchFunc: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.FieldSelector = inNS
				return src.Watch(ctx, o)
			},
		}, nil
	})
	if err != nil {
		panic(err)
	}
	inf, _ := informer.NewSharedIndexInformer(lw, informer.SharedIndexInformerOptions[*corev1.Pod]{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = inf.Run(ctx) }()
	informer.WaitForCacheSync(ctx, inf)
	fmt.Println(slices.Sorted(inf.GetIndexer().Keys()))
	cancel()
	<-done
	// Output:
	// [a/p1 b/p2]
}
