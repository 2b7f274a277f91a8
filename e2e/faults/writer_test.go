package faults

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// writer creates, updates and deletes objects of one resource in one namespace, one write at a
// time, through the dynamic client, and goes on through failures: the faults make some writes
// fail, and a write that fails may still have happened, so it keeps no exact model of the
// server. The tests compare the informers with the server, not with the writer.
type writer struct {
	res    dynamic.ResourceInterface
	gvr    schema.GroupVersionResource
	object func(name string) *unstructured.Unstructured
	min    int // fewer objects than this: create
	max    int // more than this: delete
	rng    *rand.Rand

	// gate is held for each write; hold takes it to pause the writer.
	gate sync.Mutex
	// Used only by the goroutine that holds gate.
	live map[string]bool
	seq  int

	mu       sync.Mutex // guards writes, failures
	writes   int
	failures int
}

func newWriter(dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string, object func(string) *unstructured.Unstructured, seed uint64) *writer {
	return &writer{
		res:    dyn.Resource(gvr).Namespace(ns),
		gvr:    gvr,
		object: object,
		min:    20,
		max:    60,
		rng:    rand.New(rand.NewPCG(seed, 0)),
		live:   make(map[string]bool),
	}
}

// run writes every interval until ctx ends.
func (w *writer) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.gate.Lock()
		err := w.writeOne(ctx)
		w.gate.Unlock()
		if ctx.Err() != nil {
			return
		}
		w.mu.Lock()
		w.writes++
		if err != nil {
			w.failures++
		}
		w.mu.Unlock()
	}
}

// hold pauses the writer: it returns once the write in progress, if any, has ended, and the
// writer writes no more until release.
func (w *writer) hold() { w.gate.Lock() }

// release ends hold.
func (w *writer) release() { w.gate.Unlock() }

// writeOne makes one create, update or delete. The caller holds gate, or is the only user of w.
func (w *writer) writeOne(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	names := slices.Sorted(maps.Keys(w.live)) // sorted, for choices that follow the seed
	op := w.rng.IntN(3)
	switch {
	case len(names) < w.min:
		op = 0
	case len(names) > w.max:
		op = 2
	}
	if op == 0 {
		name := fmt.Sprintf("%s-%05d", w.gvr.Resource[:len(w.gvr.Resource)-1], w.seq)
		w.seq++
		_, err := w.res.Create(ctx, w.object(name), metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			w.live[name] = true
		}
		return err
	}
	name := names[w.rng.IntN(len(names))]
	var err error
	if op == 1 {
		patch := fmt.Appendf(nil, `{"metadata":{"labels":{"gen":"%d"}}}`, w.rng.IntN(1000))
		_, err = w.res.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	} else {
		err = w.res.Delete(ctx, name, metav1.DeleteOptions{})
		if err == nil {
			delete(w.live, name)
		}
	}
	if apierrors.IsNotFound(err) {
		delete(w.live, name)
	}
	return err
}

// counts returns the writes made and how many of them failed.
func (w *writer) counts() (writes, failures int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes, w.failures
}
