// Command informer is a program on the library that hack/consumer-check.sh builds in a module
// outside the repository, after `go get github.com/typedkube/informer@VERSION` alone.
package main

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/clientgo"
	"github.com/typedkube/informer/informertest"
	"github.com/typedkube/informer/shard"
	"github.com/typedkube/informer/wire"
)

// podPhase is a projection: the informer decodes these fields only.
type podPhase struct {
	wire.Meta[podPhase]
	Status struct{ Phase corev1.PodPhase }
}

func main() {
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	f, err := informer.NewFactory(cfg, informer.FactoryOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pods, err := informer.ForProjection[podPhase, corev1.Pod](f)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = clientgo.Indexer(pods.GetIndexer())
	_ = shard.Assign([]string{"a", "b"}, 128)
	_ = informertest.NewServer(nil)
	f.Start(ctx)
	defer f.Shutdown()
	if _, err := f.WaitForCacheSync(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	list, _ := pods.Lister().List(nil)
	fmt.Println(len(list), "pods")
}
