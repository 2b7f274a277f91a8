package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"

	"github.com/typedkube/informer"
)

// The controller rolls a Deployment out again when a ConfigMap it names changes: a Deployment
// annotated configMapAnnotation=NAME gets, in its Pod template, hashAnnotation=the hash of that
// ConfigMap's data (of its namespace), so that a change of the data changes the template.
const (
	configMapAnnotation = "reload.example.typedkube.io/configmap"
	hashAnnotation      = "reload.example.typedkube.io/config-hash"
	configMapIndex      = "configmap" // Deployments by the namespace/name of the ConfigMap they name
)

// UpdateFunc writes a Deployment: the API server's Update in a program (see main.go), an
// in-memory server's in a unit test.
type UpdateFunc func(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error)

// Controller is a client-go-style controller: typed informers from a Factory, handlers that
// queue keys, and workers that read listers and write.
type Controller struct {
	deployments *informer.SharedIndexInformer[*appsv1.Deployment]
	configMaps  *informer.SharedIndexInformer[*corev1.ConfigMap]
	synced      []informer.Syncer
	queue       workqueue.TypedRateLimitingInterface[string] // Deployment keys, namespace/name
	update      UpdateFunc
}

// byConfigMap indexes a Deployment by the ConfigMap it names.
func byConfigMap(d *appsv1.Deployment) ([]string, error) {
	name := d.Annotations[configMapAnnotation]
	if name == "" {
		return nil, nil
	}
	return []string{d.Namespace + "/" + name}, nil
}

// New gets the informers it needs from f and registers its handlers. Call Run, or Close if
// Run is never called.
func New(f *informer.Factory, update UpdateFunc) (*Controller, error) {
	deployments, err := informer.For(f, informer.ForOptions[*appsv1.Deployment]{
		Indexers: informer.Indexers[*appsv1.Deployment]{configMapIndex: byConfigMap},
	})
	if err != nil {
		return nil, err
	}
	configMaps, err := informer.For[*corev1.ConfigMap](f)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		deployments: deployments,
		configMaps:  configMaps,
		update:      update,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "config-reload"}),
	}
	enqueue := func(d *appsv1.Deployment) { c.queue.Add(d.Namespace + "/" + d.Name) }
	deploymentsReg, err := deployments.AddEventHandler(informer.ResourceEventHandlerFuncs[*appsv1.Deployment]{
		AddFunc:    func(d *appsv1.Deployment, _ bool) { enqueue(d) },
		UpdateFunc: func(_, d *appsv1.Deployment) { enqueue(d) },
	})
	if err != nil {
		c.Close()
		return nil, err
	}
	// A ConfigMap's change queues the Deployments that name it, found through the index.
	configMapChanged := func(key string) {
		for _, d := range c.deploymentsNaming(key) {
			enqueue(d)
		}
	}
	configMapsReg, err := configMaps.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.ConfigMap]{
		AddFunc:    func(cm *corev1.ConfigMap, _ bool) { configMapChanged(cm.Namespace + "/" + cm.Name) },
		UpdateFunc: func(_, cm *corev1.ConfigMap) { configMapChanged(cm.Namespace + "/" + cm.Name) },
		DeleteFunc: func(d informer.DeletedObject[*corev1.ConfigMap]) { configMapChanged(d.Key) },
	})
	if err != nil {
		c.Close()
		return nil, err
	}
	c.synced = []informer.Syncer{deployments, configMaps, deploymentsReg, configMapsReg}
	return c, nil
}

func (c *Controller) deploymentsNaming(configMapKey string) []*appsv1.Deployment {
	ds, err := c.deployments.GetIndexer().ByIndex(configMapIndex, configMapKey)
	if err != nil {
		panic(err) // the index is ours: a missing one is a bug
	}
	return ds
}

// Run waits for the caches to sync, then runs workers goroutines until ctx ends. It returns
// after every worker has stopped, or at once with the reason the caches cannot sync.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if err := informer.WaitForCacheSync(ctx, c.synced...); err != nil {
		return fmt.Errorf("config-reload: %w", err)
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// Close releases the queue of a controller whose Run is never called.
func (c *Controller) Close() { c.queue.ShutDown() }

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// sync brings the hash annotation of the Deployment key up to date.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := informer.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key of ours: nothing to retry
	}
	d, err := c.deployments.Lister().ByNamespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	cmName := d.Annotations[configMapAnnotation]
	if cmName == "" {
		return nil
	}
	want := "missing"
	cm, err := c.configMaps.Lister().ByNamespace(ns).Get(cmName)
	switch {
	case err == nil:
		want = hashData(cm)
	case !apierrors.IsNotFound(err):
		return err
	}
	if d.Spec.Template.Annotations[hashAnnotation] == want {
		return nil
	}
	// Objects from a lister are shared with the cache: change a copy.
	d = d.DeepCopy()
	if d.Spec.Template.Annotations == nil {
		d.Spec.Template.Annotations = map[string]string{}
	}
	d.Spec.Template.Annotations[hashAnnotation] = want
	if _, err := c.update(ctx, d); err != nil {
		if apierrors.IsConflict(err) {
			return errors.New("conflict: the cache has not seen the last write yet")
		}
		return fmt.Errorf("update %s: %w", key, err)
	}
	return nil
}

// hashData is a short hash of a ConfigMap's data, in key order.
func hashData(cm *corev1.ConfigMap) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		fmt.Fprintf(h, "%q=%q;", k, cm.Data[k])
	}
	for _, k := range slices.Sorted(maps.Keys(cm.BinaryData)) {
		fmt.Fprintf(h, "%q=%x;", k, cm.BinaryData[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
