package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/typedkube/informer"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
)

// Controller keeps a pod-summary ConfigMap in each opted-in namespace. It is built only from the
// informer library's public API (a Factory, typed informers, listers and handlers) and
// client-go's typed workqueue: no code generation, no type assertions.
//
// Its queue holds namespace names. Any change to a Pod, to an opted-in Namespace or to a
// pod-summary ConfigMap queues the namespace; a worker then computes the summary from the Pod
// lister and writes the ConfigMap if the ConfigMap lister shows it differs.
type Controller struct {
	client     kubernetes.Interface
	pods       *informer.SharedIndexInformer[*podPhase]
	namespaces *informer.SharedIndexInformer[*corev1.Namespace]
	configMaps *informer.SharedIndexInformer[*corev1.ConfigMap]
	synced     []informer.Syncer
	queue      workqueue.TypedRateLimitingInterface[string]
	logf       func(format string, args ...any)

	mu     sync.Mutex // guards writes
	writes int        // ConfigMaps created or updated
}

// keepSummaryData is the ConfigMap informer's transform: the controller reads only the
// pod-summary ConfigMaps, so the cache drops the data of the others.
func keepSummaryData(cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	if cm.Name != summaryName {
		cm.Data, cm.BinaryData = nil, nil
	}
	return cm, nil
}

// NewController gets the informers it needs from f and registers its handlers. logf receives a
// line per ConfigMap write.
func NewController(f *informer.Factory, client kubernetes.Interface, logf func(format string, args ...any)) (*Controller, error) {
	c := &Controller{client: client, logf: logf}
	var err error
	if c.pods, err = informer.ForProjection[podPhase, corev1.Pod](f); err != nil {
		return nil, fmt.Errorf("pod informer: %w", err)
	}
	if c.namespaces, err = informer.For[*corev1.Namespace](f); err != nil {
		return nil, fmt.Errorf("namespace informer: %w", err)
	}
	if c.configMaps, err = informer.For(f, informer.ForOptions[*corev1.ConfigMap]{Transform: keepSummaryData}); err != nil {
		return nil, fmt.Errorf("configmap informer: %w", err)
	}

	// The queue has goroutines of its own: Run shuts it down, or Close if Run is never called.
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: summaryName})

	// The handlers are typed: the Pod's phase and the Namespace's labels are read without a cast.
	podHandler := informer.ResourceEventHandlerFuncs[*podPhase]{
		AddFunc: func(p *podPhase, _ bool) { c.queue.Add(p.Namespace) },
		UpdateFunc: func(old, new *podPhase) {
			if phase(old) != phase(new) {
				c.queue.Add(new.Namespace)
			}
		},
		DeleteFunc: func(d informer.DeletedObject[*podPhase]) {
			ns, _, _ := informer.SplitMetaNamespaceKey(d.Key)
			c.queue.Add(ns)
		},
	}
	nsHandler := informer.ResourceEventHandlerFuncs[*corev1.Namespace]{
		AddFunc: func(ns *corev1.Namespace, _ bool) { c.queue.Add(ns.Name) },
		UpdateFunc: func(old, new *corev1.Namespace) {
			if old.Labels[optInLabel] != new.Labels[optInLabel] {
				c.queue.Add(new.Name)
			}
		},
	}
	// A summary edited or deleted by someone else is put right.
	cmHandler := informer.FilteringResourceEventHandler[*corev1.ConfigMap]{
		FilterFunc: func(cm *corev1.ConfigMap) bool { return cm.Name == summaryName },
		Handler: informer.ResourceEventHandlerFuncs[*corev1.ConfigMap]{
			UpdateFunc: func(_, new *corev1.ConfigMap) { c.queue.Add(new.Namespace) },
			DeleteFunc: func(d informer.DeletedObject[*corev1.ConfigMap]) {
				ns, _, _ := informer.SplitMetaNamespaceKey(d.Key)
				c.queue.Add(ns)
			},
		},
	}
	regs := make([]informer.Syncer, 0, 3)
	for _, add := range []func() (informer.Syncer, error){
		func() (informer.Syncer, error) { return c.pods.AddEventHandler(podHandler) },
		func() (informer.Syncer, error) { return c.namespaces.AddEventHandler(nsHandler) },
		func() (informer.Syncer, error) { return c.configMaps.AddEventHandler(cmHandler) },
	} {
		reg, err := add()
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("add handler: %w", err)
		}
		regs = append(regs, reg)
	}
	c.synced = append(regs, c.pods, c.namespaces, c.configMaps)
	return c, nil
}

// Run waits until the caches have synced (or until syncTimeout), then handles the queue with
// workers goroutines until ctx ends. It returns after every worker has stopped.
func (c *Controller) Run(ctx context.Context, workers int, syncTimeout time.Duration) error {
	defer c.queue.ShutDown()
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	err := informer.WaitForCacheSync(syncCtx, c.synced...)
	cancel()
	if err != nil {
		return fmt.Errorf("pod-summary controller: %w", err)
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

// Close releases the queue of a controller whose Run is not called.
func (c *Controller) Close() { c.queue.ShutDown() }

// processNext handles one namespace from the queue; false once the queue is shut down.
func (c *Controller) processNext(ctx context.Context) bool {
	ns, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(ns)
	if err := c.sync(ctx, ns); err != nil {
		if ctx.Err() == nil {
			c.logf("pod-summary %-16s %v; requeued", ns, err)
		}
		c.queue.AddRateLimited(ns)
		return true
	}
	c.queue.Forget(ns)
	return true
}

// sync brings the summary of namespace ns up to date.
func (c *Controller) sync(ctx context.Context, ns string) error {
	namespace, err := c.namespaces.Lister().Get(ns)
	if apierrors.IsNotFound(err) || (err == nil && (namespace.Labels[optInLabel] != "true" || namespace.DeletionTimestamp != nil)) {
		return nil // not ours (a summary left from before an opt-out stays: deleting is not needed here)
	}
	if err != nil {
		return err
	}
	pods, err := c.pods.Lister().ByNamespace(ns).List(nil)
	if err != nil {
		return err
	}
	want := summaryData(pods)
	cm, err := c.configMaps.Lister().ByNamespace(ns).Get(summaryName)
	switch {
	case apierrors.IsNotFound(err):
		_, err = c.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: summaryName, Labels: map[string]string{"app.kubernetes.io/managed-by": managedBy}},
			Data:       want,
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create %s: %w", summaryName, err)
		}
		c.wrote("pod-summary %-16s created: %s", ns, describe(want))
		return nil
	case err != nil:
		return err
	case maps.Equal(cm.Data, want):
		return nil
	}
	// Objects from a lister are shared with the cache: change a copy.
	updated := cm.DeepCopy()
	updated.Data = want
	if _, err := c.client.CoreV1().ConfigMaps(ns).Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) {
			return errors.New("update conflict: the cache has not seen the last write yet")
		}
		return fmt.Errorf("update %s: %w", summaryName, err)
	}
	c.wrote("pod-summary %-16s updated: %s", ns, describe(want))
	return nil
}

func (c *Controller) wrote(format string, args ...any) {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	c.logf(format, args...)
}

// Writes returns how many ConfigMaps the controller has created or updated.
func (c *Controller) Writes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes
}
