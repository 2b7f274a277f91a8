package benchmarks

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/typedkube/informer/e2e/internal/kubetest"
	"github.com/typedkube/informer/e2e/internal/widget"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// benchConfig is the config both implementations use: the admin identity, straight to the API
// server, without client-side rate limits.
func benchConfig() *rest.Config {
	cfg := srv.AdminConfig()
	cfg.Host = srv.APIServerURL()
	cfg.QPS = -1
	return cfg
}

// benchPod is a Pod of about 1.5 KB, as DESIGN.md's benchmarks use: labels, an annotation, a
// container with environment variables, ports and resources.
func benchPod(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("pod-%05d", i),
			Labels: map[string]string{
				"app": "bench", "tier": []string{"web", "api", "db"}[i%3], "shard": fmt.Sprint(i % 16),
				"app.kubernetes.io/part-of": "informer-bench", "app.kubernetes.io/version": "v1.2.3",
			},
			Annotations: map[string]string{"bench.typedkube.io/note": strings.Repeat("x", 300)},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "main",
			Image: "registry.k8s.io/pause:3.10",
			Args:  []string{"--listen=:8080", "--verbose", fmt.Sprintf("--id=%d", i)},
			Env: []corev1.EnvVar{
				{Name: "POD_INDEX", Value: fmt.Sprint(i)},
				{Name: "MODE", Value: "benchmark"},
				{Name: "LOG_LEVEL", Value: "info"},
			},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
		}}},
	}
}

// Objects shared by the benchmarks of one binary, created once.
var (
	podsMu    sync.Mutex
	podsNS    = map[int]string{} // namespace of n Pods, by n
	realNS    = map[int]string{} // namespace of n realistic Pods, by n
	harshNS   = map[int]string{} // namespace of n harsh Pods, by n
	ownNS     = map[int]string{} // namespace of n own-token Pods, by n
	widgetsNS = map[int]string{} // namespace of n Widgets, by n

	configMapsOnce sync.Once
	configMapsNS   string
	configMapsErr  error
)

const (
	coldStartPods  = 10000
	watchedConfigs = 1000
	createWorkers  = 16
)

// pods creates n Pods in a namespace of their own, once per benchmark binary and n.
func pods(b *testing.B, n int) string {
	b.Helper()
	return populatedOnce(b, podsNS, n, func() (string, error) {
		return populate(b, fmt.Sprintf("bench-pods-%dk", n/1000), n, func(ctx context.Context, c *kubetest.Clients, ns string, i int) error {
			_, err := c.Kube.CoreV1().Pods(ns).Create(ctx, benchPod(i), metav1.CreateOptions{})
			return err
		})
	})
}

// realisticPods creates n realistic Pods (testobj.RealisticPods) in a namespace of their own, as a
// cluster writes them (kubetest.CreateRealisticPod), once per benchmark binary and n.
func realisticPods(b *testing.B, n int) string {
	b.Helper()
	return populatedOnce(b, realNS, n, func() (string, error) {
		return populate(b, fmt.Sprintf("bench-realistic-%dk", n/1000), n, func(ctx context.Context, c *kubetest.Clients, ns string, i int) error {
			return kubetest.CreateRealisticPod(ctx, c.Kube, ns, i)
		})
	})
}

// harshPods creates n harsh Pods (testobj.HarshPods: realistic Pods whose creating manager's
// managedFields entry names a volume generated for each) in a namespace of their own, as a
// cluster writes them (kubetest.CreateHarshPod), once per benchmark binary and n.
func harshPods(b *testing.B, n int) string {
	b.Helper()
	return populatedOnce(b, harshNS, n, func() (string, error) {
		return populate(b, fmt.Sprintf("bench-harsh-%dk", n/1000), n, func(ctx context.Context, c *kubetest.Clients, ns string, i int) error {
			return kubetest.CreateHarshPod(ctx, c.Kube, ns, i)
		})
	})
}

// ownTokenPods creates n own-token Pods (testobj.OwnTokenPods: realistic Pods each given a token
// volume of its own by ServiceAccount admission, as in a cluster) in a namespace of their own,
// with their ServiceAccounts, through the harness's admitting server (kubetest.CreateOwnTokenPod),
// once per benchmark binary and n.
func ownTokenPods(b *testing.B, n int) string {
	b.Helper()
	return populatedOnce(b, ownNS, n, func() (string, error) {
		var admitting *kubetest.Clients
		defer func() {
			if admitting != nil {
				admitting.Close()
			}
		}()
		return populate(b, fmt.Sprintf("bench-owntoken-%dk", n/1000), n, func(ctx context.Context, c *kubetest.Clients, ns string, i int) error {
			return kubetest.CreateOwnTokenPod(ctx, admitting.Kube, ns, i)
		}, func(ctx context.Context, c *kubetest.Clients, ns string) error {
			if err := kubetest.CreateRealisticServiceAccounts(ctx, c.Kube, ns); err != nil {
				return err
			}
			cfg, err := srv.AdmittingConfig(ctx)
			if err != nil {
				return err
			}
			cfg.QPS = -1
			admitting, err = kubetest.NewClients(cfg)
			return err
		})
	})
}

// populatedOnce returns cache[n], made by create under podsMu the first time: a namespace of n
// objects made once per benchmark binary.
func populatedOnce(b *testing.B, cache map[int]string, n int, create func() (string, error)) string {
	b.Helper()
	podsMu.Lock()
	defer podsMu.Unlock()
	if ns, ok := cache[n]; ok {
		return ns
	}
	ns, err := create()
	if err != nil {
		b.Fatal(err)
	}
	cache[n] = ns
	return ns
}

// widgets installs the Widget CRD and creates n Widgets with labels and an annotation in a
// namespace of their own, once per benchmark binary and n.
func widgets(b *testing.B, n int) string {
	b.Helper()
	return populatedOnce(b, widgetsNS, n, func() (string, error) {
		var client *widget.Client
		return populate(b, fmt.Sprintf("bench-widgets-%dk", n/1000), n, func(ctx context.Context, c *kubetest.Clients, ns string, i int) error {
			_, err := client.Create(ctx, widget.Sample(i), metav1.CreateOptions{})
			return err
		}, func(ctx context.Context, c *kubetest.Clients, ns string) error {
			if err := widget.Install(ctx, c.Dynamic, ns, time.Minute); err != nil {
				return err
			}
			var err error
			client, err = widget.NewClient(c.Config, ns)
			return err
		})
	})
}

// configMaps creates watchedConfigs small ConfigMaps in a namespace of their own, once per
// benchmark binary.
func configMaps(b *testing.B) string {
	b.Helper()
	configMapsOnce.Do(func() {
		configMapsNS, configMapsErr = populate(b, "bench-configmaps", watchedConfigs, func(ctx context.Context, c *kubetest.Clients, ns string, i int) error {
			_, err := c.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i)},
				Data:       map[string]string{"ts": "0"},
			}, metav1.CreateOptions{})
			return err
		})
	})
	if configMapsErr != nil {
		b.Fatal(configMapsErr)
	}
	return configMapsNS
}

// populate creates a namespace and n objects in it with create, createWorkers at a time, after
// running setup, if any, in the new namespace.
func populate(b *testing.B, prefix string, n int, create func(ctx context.Context, c *kubetest.Clients, ns string, i int) error,
	setup ...func(ctx context.Context, c *kubetest.Clients, ns string) error) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := kubetest.NewClients(benchConfig())
	if err != nil {
		return "", err
	}
	defer c.Close()
	ns, err := kubetest.NewNamespace(ctx, c.Kube, prefix)
	if err != nil {
		return "", err
	}
	for _, f := range setup {
		if err := f(ctx, c, ns); err != nil {
			return "", fmt.Errorf("populate %s: %w", ns, err)
		}
	}
	start := time.Now()
	err = kubetest.Parallel(ctx, n, createWorkers, func(ctx context.Context, i int) error { return create(ctx, c, ns, i) })
	if err != nil {
		return "", fmt.Errorf("populate %s: %w", ns, err)
	}
	d := time.Since(start)
	b.Logf("created %d objects in %s in %v (%.0f/s, %d at a time)", n, ns, d.Round(time.Millisecond), float64(n)/d.Seconds(), createWorkers)
	return ns, nil
}
