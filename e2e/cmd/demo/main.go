// Command demo runs a small, type-safe controller built on the informer library: for every
// namespace labelled pod-summary.typedkube.io/enabled=true it keeps a ConfigMap "pod-summary"
// that lists the namespace's Pods and their phase.
//
// By default it starts a local etcd and kube-apiserver (built from source on the first run,
// which takes some minutes), creates namespaces and Pods, shows the controller reacting to
// creates, updates and deletes, checks every summary against a fresh LIST, prints a summary and
// exits:
//
//	cd e2e && go run ./cmd/demo
//
// With --kubeconfig it runs against an existing cluster until interrupted (SIGINT or SIGTERM);
// label a namespace to opt it in:
//
//	go run ./cmd/demo --kubeconfig ~/.kube/config
//	kubectl label namespace NAME pod-summary.typedkube.io/enabled=true
//
// Exit status: 0 on success, 1 on an error, 2 for bad flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/harness"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the command's flags.
type options struct {
	kubeconfig  string
	namespaces  int
	pods        int
	workers     int
	syncTimeout time.Duration
}

// run is the command: it parses args, runs the demo until it is done (default mode) or ctx ends
// (--kubeconfig), and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "run against the cluster of this kubeconfig file until interrupted,\ninstead of starting a local API server")
	fs.IntVar(&o.namespaces, "namespaces", 3, "opted-in namespaces to create (local mode, 1-20)")
	fs.IntVar(&o.pods, "pods", 4, "pods to create in each namespace (local mode, 1-100)")
	fs.IntVar(&o.workers, "workers", 2, "controller workers (1-16)")
	fs.DurationVar(&o.syncTimeout, "sync-timeout", 30*time.Second, "how long to wait for the informers' caches to sync")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: demo [flags]\n\n"+
			"Runs a pod-summary controller built on the typed informer library. Without --kubeconfig it\n"+
			"starts a local etcd and kube-apiserver, drives a scenario, verifies the result and exits.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2 // the flag package has printed the error and the usage
	}
	if err := o.validate(fs.Args()); err != nil {
		fmt.Fprintf(stderr, "demo: %v\nRun 'demo -h' for usage.\n", err)
		return 2
	}
	var err error
	if o.kubeconfig != "" {
		err = runCluster(ctx, o, stdout)
	} else {
		err = runLocal(ctx, o, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	return 0
}

func (o options) validate(rest []string) error {
	switch {
	case len(rest) > 0:
		return fmt.Errorf("unexpected argument %q (flags only)", rest[0])
	case o.namespaces < 1 || o.namespaces > 20:
		return fmt.Errorf("--namespaces=%d: want 1 to 20", o.namespaces)
	case o.pods < 1 || o.pods > 100:
		return fmt.Errorf("--pods=%d: want 1 to 100", o.pods)
	case o.workers < 1 || o.workers > 16:
		return fmt.Errorf("--workers=%d: want 1 to 16", o.workers)
	case o.syncTimeout <= 0:
		return fmt.Errorf("--sync-timeout=%v: want a positive duration", o.syncTimeout)
	}
	return nil
}

// runLocal starts etcd and kube-apiserver as child processes, runs the scenario against them and
// stops them.
func runLocal(ctx context.Context, o options, stdout, stderr io.Writer) (err error) {
	p := newPrinter(stdout)
	p.say("starting etcd and kube-apiserver on 127.0.0.1 (the first run builds them from source: 5-9 minutes)")
	srv, err := harness.Start(ctx, harness.Options{Output: stderr})
	if err != nil {
		return fmt.Errorf("start the local API server: %w", err)
	}
	defer func() {
		p.say("stopping the local API server")
		err = errors.Join(err, srv.Stop())
	}()
	cfg := srv.AdminConfig()
	cfg.QPS, cfg.Burst = 50, 100
	return runScenario(ctx, cfg, o, p)
}

// runCluster runs the controller against the cluster of o.kubeconfig until ctx ends.
func runCluster(ctx context.Context, o options, stdout io.Writer) error {
	p := newPrinter(stdout)
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig %s: %w", o.kubeconfig, err)
	}
	version, err := serverVersion(ctx, cfg)
	if err != nil {
		return fmt.Errorf("cannot reach the API server at %s (kubeconfig %s): %w", cfg.Host, o.kubeconfig, err)
	}
	p.say("connected to %s (Kubernetes %s)", cfg.Host, version)
	c, stop, err := startController(ctx, cfg, o, p)
	if err != nil {
		return err
	}
	p.say("watching namespaces labelled %s=true; opt one in with", optInLabel)
	p.say("    kubectl label namespace NAME %s=true", optInLabel)
	p.say("press Ctrl-C to stop")
	<-ctx.Done()
	p.say("interrupted: stopping")
	if err := stop(); err != nil {
		return err
	}
	p.say("stopped after %d summary writes", c.Writes())
	return nil
}

// serverVersion asks the server for its version, within 15 s.
func serverVersion(ctx context.Context, cfg *rest.Config) (string, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	body, err := client.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", err
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return "", fmt.Errorf("decode /version: %w", err)
	}
	return info.GitVersion, nil
}

// startController makes a Factory and the controller over cfg, starts them, and returns the
// controller and a function that stops both and returns the controller's error.
func startController(ctx context.Context, cfg *rest.Config, o options, p *printer) (*Controller, func() error, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("client: %w", err)
	}
	f, err := informer.NewFactory(cfg, informer.FactoryOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("informer factory: %w", err)
	}
	c, err := NewController(f, client, p.say)
	if err != nil {
		f.Shutdown()
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	f.Start(ctx)
	start := time.Now()
	syncCtx, syncCancel := context.WithTimeout(ctx, o.syncTimeout)
	synced, err := f.WaitForCacheSync(syncCtx)
	syncCancel()
	if err != nil {
		cancel()
		c.Close()
		f.Shutdown()
		return nil, nil, fmt.Errorf("the informers did not sync within %v: %w", o.syncTimeout, err)
	}
	p.say("informers synced in %v: %v", time.Since(start).Round(time.Millisecond), names(synced))
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, o.workers, o.syncTimeout) }()
	stop := func() error {
		cancel()
		err := <-done
		f.Shutdown()
		return err
	}
	return c, stop, nil
}

// names returns the names of the informers, sorted.
func names(synced map[string]bool) []string { return slices.Sorted(maps.Keys(synced)) }
