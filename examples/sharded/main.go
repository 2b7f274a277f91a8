// Command sharded runs N replicas of a Pod controller that split the Pods among themselves
// with package shard: each replica holds a Lease in -lease-namespace, computes its buckets of
// the Pods' UID hash space, and caches and handles only the Pods of its buckets. Start it
// several times (with the same -group) and stop some: the others take their Pods over.
//
//	go run . -kubeconfig ~/.kube/config -lease-namespace default
//
// With the API server's ShardedListAndWatch feature gate on, the server sends each replica its
// share only (Status().Mode == shard.ModeServer); without it, each replica drops the others'
// Pods as they arrive (shard.ModeClient). controller_test.go tests the split and the handover
// with informertest's in-memory server and client-go's fake Leases.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/shard"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig `file` (default: $KUBECONFIG, or the in-cluster config)")
	leaseNamespace := flag.String("lease-namespace", "default", "`namespace` of the replicas' Leases")
	group := flag.String("group", "sharded-example", "`name` of the replica group")
	identity := flag.String("identity", "", "this replica's `name` in the group (default: host name and random hex)")
	flag.Parse()
	if err := run(*kubeconfig, *leaseNamespace, *group, *identity); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(kubeconfig, leaseNamespace, group, identity string) error {
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
	m, err := shard.NewMember(shard.Options{
		Leases: clientset.CoordinationV1(), Namespace: leaseNamespace, Group: group, Identity: identity,
	})
	if err != nil {
		return err
	}
	f, err := informer.NewFactory(cfg, informer.FactoryOptions{})
	if err != nil {
		return err
	}
	defer f.Shutdown()
	c, err := New(f, m, func(ctx context.Context, key string, p *corev1.Pod) error {
		if p == nil {
			fmt.Printf("%s: %s deleted\n", m.Identity(), key)
			return nil
		}
		fmt.Printf("%s: %s is %s on %q\n", m.Identity(), key, p.Status.Phase, p.Spec.NodeName)
		return nil
	})
	if err != nil {
		return err
	}
	memberDone := make(chan error, 1)
	go func() { memberDone <- m.Run(ctx) }() // holds the Lease; gives the Pods up when ctx ends
	f.Start(ctx)
	go func() {
		for t := time.NewTicker(30 * time.Second); ; {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
				st := c.Status()
				fmt.Printf("%s: %d Pods, %d of %d buckets, members %v, filtered by the %v\n",
					m.Identity(), st.Objects, st.Owned.Len(), st.Owned.N(), st.Members, st.Mode)
			}
		}
	}()
	err = c.Run(ctx, 2)
	stop()
	if merr := <-memberDone; err == nil {
		err = merr
	}
	return err
}
