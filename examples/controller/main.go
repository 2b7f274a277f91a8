// Command controller is a client-go-style controller on github.com/typedkube/informer: a
// Factory's typed informers, an index, handlers that queue keys, and workers that read the
// listers and write. It rolls a Deployment out again when the ConfigMap it names in the
// annotation reload.example.typedkube.io/configmap changes.
//
//	go run . -kubeconfig ~/.kube/config
//
// controller_test.go tests it with package informertest, without an API server.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/typedkube/informer"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig `file` (default: $KUBECONFIG, or the in-cluster config)")
	namespace := flag.String("namespace", "", "watch one `namespace` (default: all)")
	workers := flag.Int("workers", 2, "worker goroutines")
	flag.Parse()
	if err := run(*kubeconfig, *namespace, *workers); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(kubeconfig, namespace string, workers int) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	f, err := informer.NewFactory(cfg, informer.FactoryOptions{Namespace: namespace})
	if err != nil {
		return err
	}
	defer f.Shutdown()
	c, err := New(f, func(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
		return clientset.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{})
	})
	if err != nil {
		return err
	}
	f.Start(ctx)
	return c.Run(ctx, workers) // until Ctrl-C; at once if a cache cannot sync (say, Forbidden)
}
