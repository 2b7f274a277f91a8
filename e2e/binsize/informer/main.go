// Command informer is one of the four programs whose binaries package binsize measures: the same
// program on the library and on client-go or controller-runtime (see binsize_test.go).
package main

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/typedkube/informer"
)

func main() {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		panic(err)
	}
	f, err := informer.NewFactory(cfg, informer.FactoryOptions{})
	if err != nil {
		panic(err)
	}
	pods, err := informer.For[*corev1.Pod](f)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	f.Start(ctx)
	if _, err := f.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}
	fmt.Println(len(pods.GetIndexer().List()))
}
