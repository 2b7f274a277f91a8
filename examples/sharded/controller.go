package main

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/shard"
)

// ReconcileFunc handles one Pod of this replica's share: p is nil once the Pod is deleted.
type ReconcileFunc func(ctx context.Context, key string, p *corev1.Pod) error

// Controller is a workqueue controller over one replica's share of the Pods: package shard
// splits the Pods among the replicas of a group (Leases in the cluster, no webhook, no label on
// the Pods), and this replica's informer caches and delivers its share only.
//
// shard fences handler calls: no OnAdd, OnUpdate or OnDelete of an object starts on two
// replicas at once. Work a handler puts in a queue needs the same care, which OnRelease gives:
// when a Pod's bucket moves to another replica, OnRelease (called before the other replica gets
// the Pod) drops the key from the queue's work and waits for a reconcile of it in progress.
type Controller struct {
	pods      *shard.Informer[*corev1.Pod]
	queue     workqueue.TypedRateLimitingInterface[string]
	reconcile ReconcileFunc

	mu    sync.Mutex
	cond  *sync.Cond      // signalled when a reconcile ends; uses mu
	owned map[string]bool // keys this replica was told of and has not released; guarded by mu
	busy  map[string]bool // keys being reconciled; guarded by mu
}

// New makes the sharded Pod informer from f on member m and registers the controller's
// handler. Call Run, or Close if Run is never called.
func New(f *informer.Factory, m *shard.Member, reconcile ReconcileFunc) (*Controller, error) {
	pods, err := shard.For[*corev1.Pod](f, m)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		pods:      pods,
		reconcile: reconcile,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "sharded-pods"}),
		owned: map[string]bool{},
		busy:  map[string]bool{},
	}
	c.cond = sync.NewCond(&c.mu)
	if _, err := pods.AddEventHandler(handler{c}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// handler queues the keys of this replica's share, and lets go of those that move away.
type handler struct{ c *Controller }

func (h handler) OnAdd(p *corev1.Pod, _ bool)                    { h.c.add(p.Namespace + "/" + p.Name) }
func (h handler) OnUpdate(_, p *corev1.Pod)                      { h.c.add(p.Namespace + "/" + p.Name) }
func (h handler) OnDelete(d informer.DeletedObject[*corev1.Pod]) { h.c.add(d.Key) }

// OnRelease is shard.Releaser's: the Pod's bucket moves to another replica.
func (h handler) OnRelease(p *corev1.Pod) {
	c, key := h.c, p.Namespace+"/"+p.Name
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.owned, key) // a worker that dequeues the key now skips it
	for c.busy[key] {
		c.cond.Wait()
	}
}

func (c *Controller) add(key string) {
	c.mu.Lock()
	c.owned[key] = true
	c.mu.Unlock()
	c.queue.Add(key)
}

// Run runs workers goroutines until ctx ends (the factory and the member run on their own),
// and returns after every worker has stopped.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if err := informer.WaitForCacheSync(ctx, c.pods.Informer()); err != nil {
		return err
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
	c.mu.Lock()
	if !c.owned[key] {
		c.mu.Unlock()
		c.queue.Forget(key) // released: another replica has it now
		return true
	}
	c.busy[key] = true
	c.mu.Unlock()
	err := c.sync(ctx, key)
	c.mu.Lock()
	delete(c.busy, key)
	c.cond.Broadcast()
	c.mu.Unlock()
	if err != nil {
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := informer.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	p, err := c.pods.Lister().ByNamespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		delete(c.owned, key)
		c.mu.Unlock()
		return c.reconcile(ctx, key, nil)
	}
	if err != nil {
		return err
	}
	return c.reconcile(ctx, key, p)
}

// Status is the replica's view of its share.
func (c *Controller) Status() shard.Status { return c.pods.Status() }
