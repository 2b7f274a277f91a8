package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func deployment(name, configMap string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	if configMap != "" {
		d.Annotations = map[string]string{configMapAnnotation: configMap}
	}
	return d
}

func configMap(name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: map[string]string{"value": value}}
}

// TestController runs the controller as main does, over informertest's in-memory API server
// instead of a cluster: the Server's factory feeds its informers, and its writes go to the
// Server, which checks resource versions as the API server does. The test waits for what the
// controller writes, through a Recorder on the same (shared) informer: no sleep, no polling.
func TestController(t *testing.T) {
	srv := informertest.NewServer(nil,
		configMap("app-config", "v1"),
		deployment("web", "app-config"),
		deployment("plain", ""),             // names no ConfigMap: never written
		deployment("early", "later-config"), // names one that does not exist yet
	)
	f, err := srv.NewFactory(informer.FactoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(f, func(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
		obj, err := srv.Update(d) // a Conflict if d is not the latest version, as from the API server
		if err != nil {
			return nil, err
		}
		return obj.(*appsv1.Deployment), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	deployments, err := informer.For[*appsv1.Deployment](f) // the controller's informer: For shares it
	if err != nil {
		t.Fatal(err)
	}
	var rec informertest.Recorder[*appsv1.Deployment]
	if _, err := deployments.AddEventHandler(&rec); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	f.Start(runCtx)
	go func() { done <- c.Run(runCtx, 2) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
		f.Shutdown()
	}()

	// waitHash waits until the informer has told of Deployment name with the hash want in its
	// template.
	waitHash := func(name, want string) {
		t.Helper()
		err := rec.WaitFor(ctx, fmt.Sprintf("%s's template annotated %s=%s", name, hashAnnotation, want), func(calls []informertest.Call[*appsv1.Deployment]) bool {
			return slices.ContainsFunc(calls, func(c informertest.Call[*appsv1.Deployment]) bool {
				return c.Kind == informertest.OnUpdate && c.New.Name == name && c.New.Spec.Template.Annotations[hashAnnotation] == want
			})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	waitHash("web", hashData(configMap("app-config", "v1")))
	waitHash("early", "missing")

	// A change of the data rolls "web" out again; a ConfigMap that appears, "early".
	if _, err := srv.Update(configMap("app-config", "v2")); err != nil {
		t.Fatal(err)
	}
	waitHash("web", hashData(configMap("app-config", "v2")))
	if _, err := srv.Add(configMap("later-config", "x")); err != nil {
		t.Fatal(err)
	}
	waitHash("early", hashData(configMap("later-config", "x")))

	// Every update the informer told of was one of the controller's writes (the test writes no
	// Deployment): one per version of the ConfigMap named, none of "plain". A write from a stale
	// cache would have been a Conflict, and is not among them.
	updates := map[string]int{}
	for _, c := range rec.Calls() {
		if c.Kind == informertest.OnUpdate {
			updates[c.New.Name]++
		}
	}
	if want := map[string]int{"web": 2, "early": 2}; !maps.Equal(updates, want) {
		t.Errorf("updates per Deployment %v, want %v", updates, want)
	}
}
