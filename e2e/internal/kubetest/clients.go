package kubetest

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// Clients are the typed, dynamic and metadata clients of one identity, sharing one HTTP client.
type Clients struct {
	Config   *rest.Config // the config they were made from, client-side rate limits off
	HTTP     *http.Client
	Kube     kubernetes.Interface
	Dynamic  dynamic.Interface
	Metadata metadata.Interface
}

// NewClients makes Clients from a copy of cfg with client-side rate limiting turned off (the
// tests measure the server and the informer, not client-go's token bucket).
func NewClients(cfg *rest.Config) (*Clients, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = -1
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubetest: HTTP client: %w", err)
	}
	kube, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("kubetest: clientset: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("kubetest: dynamic client: %w", err)
	}
	md, err := metadata.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("kubetest: metadata client: %w", err)
	}
	return &Clients{Config: cfg, HTTP: hc, Kube: kube, Dynamic: dyn, Metadata: md}, nil
}

// Close closes the idle connections of the clients' HTTP client, so that no connection
// goroutine outlives a test that checks for leaks.
func (c *Clients) Close() { utilnet.CloseIdleConnectionsFor(c.HTTP.Transport) }

// NewNamespace creates a namespace named prefix plus a random suffix and returns its name. The
// harness runs no namespace controller, so a deleted namespace would stay Terminating: tests
// leave theirs to the server's teardown.
func NewNamespace(ctx context.Context, kube kubernetes.Interface, prefix string) (string, error) {
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("kubetest: create namespace %s-*: %w", prefix, err)
	}
	return ns.Name, nil
}
