// Command clientgo is one of the four programs whose binaries package binsize measures: the same
// program on the library and on client-go or controller-runtime (see binsize_test.go).
package main

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		panic(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	f := informers.NewSharedInformerFactory(cs, 0)
	pods := f.Core().V1().Pods()
	inf := pods.Informer()
	ctx := context.Background()
	f.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	l, _ := pods.Lister().List(labels.Everything())
	fmt.Println(len(l))
}
