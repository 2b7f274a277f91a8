package informer_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/internal/fakeapi"
)

func ExampleFactory() {
	// A fake API server stands in for a cluster here; a program passes the
	// *rest.Config of its kubeconfig, or rest.InClusterConfig().
	srv := fakeapi.New(scheme.Scheme, fakeapi.Resource{
		GVK: corev1.SchemeGroupVersion.WithKind("Pod"), Name: "pods", Namespaced: true, Protobuf: true,
	})
	defer srv.Close()
	srv.Create(pod("default", "web-1", "node-a"))
	srv.Create(pod("default", "web-2", "node-b"))

	f, err := informer.NewFactory(srv.Config(), informer.FactoryOptions{Namespace: "default"})
	if err != nil {
		panic(err)
	}
	defer f.Shutdown()

	byNode := func(p *corev1.Pod) ([]string, error) { return []string{p.Spec.NodeName}, nil }
	pods, err := informer.For(f, informer.ForOptions[*corev1.Pod]{
		Indexers: informer.Indexers[*corev1.Pod]{"node": byNode},
	})
	if err != nil {
		panic(err)
	}
	reg, _ := pods.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, initial bool) {
			fmt.Println("add", p.Name, "on", p.Spec.NodeName, "initial:", initial)
		},
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f.Start(ctx)
	synced, err := f.WaitForCacheSync(ctx)
	informer.WaitForCacheSync(ctx, reg) // and the handler has seen the initial list
	fmt.Println(synced, err)

	p, _ := pods.Lister().ByNamespace("default").Get("web-2")
	fmt.Println(p.Name, "runs on", p.Spec.NodeName) // typed: no assertion
	onA, _ := pods.GetIndexer().ByIndex("node", "node-a")
	fmt.Println(len(onA), "pod on node-a:", onA[0].Name)
	// Output:
	// add web-1 on node-a initial: true
	// add web-2 on node-b initial: true
	// map[v1/pods:true] <nil>
	// web-2 runs on node-b
	// 1 pod on node-a: web-1
}

// DecodeClientGo decodes with client-go's codecs instead of package wire;
// the objects are the same, only the cost differs.
func ExampleDecodingMode() {
	srv := fakeapi.New(scheme.Scheme, fakeapi.Resource{
		GVK: corev1.SchemeGroupVersion.WithKind("Pod"), Name: "pods", Namespaced: true, Protobuf: true,
	})
	defer srv.Close()
	srv.Create(pod("default", "web-1", "node-a"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, mode := range []informer.DecodingMode{informer.DecodeWire, informer.DecodeClientGo} {
		f, err := informer.NewFactory(srv.Config(), informer.FactoryOptions{Decoding: mode})
		if err != nil {
			panic(err)
		}
		pods, _ := informer.For[*corev1.Pod](f)
		f.Start(ctx)
		f.WaitForCacheSync(ctx)
		p, _ := pods.Lister().ByNamespace("default").Get("web-1")
		fmt.Println(p.Name, p.Spec.NodeName)
		f.Shutdown()
	}
	// Output:
	// web-1 node-a
	// web-1 node-a
}
