package typedcache

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// multiInformer is the informers of one kind in several scopes (namespaces
// configured apart) as one: a handler is added to each, so it hears of
// every namespace the cache caches.
type multiInformer struct {
	informers []cache.Informer
	synced    *allDone
}

func newMultiInformer(informers []cache.Informer, stop <-chan struct{}) *multiInformer {
	checkers := make([]toolscache.DoneChecker, len(informers))
	for i, inf := range informers {
		checkers[i] = inf.HasSyncedChecker()
	}
	return &multiInformer{informers: informers, synced: newAllDone(checkers, stop)}
}

// multiRegistration is a handler's registrations on each informer.
type multiRegistration struct {
	regs   []toolscache.ResourceEventHandlerRegistration
	synced *allDone
}

func (r *multiRegistration) HasSynced() bool {
	for _, reg := range r.regs {
		if !reg.HasSynced() {
			return false
		}
	}
	return true
}

func (r *multiRegistration) HasSyncedChecker() toolscache.DoneChecker { return r.synced }

func (m *multiInformer) add(register func(cache.Informer) (toolscache.ResourceEventHandlerRegistration, error)) (toolscache.ResourceEventHandlerRegistration, error) {
	r := &multiRegistration{}
	checkers := make([]toolscache.DoneChecker, 0, len(m.informers))
	for _, inf := range m.informers {
		reg, err := register(inf)
		if err != nil {
			for i, done := range r.regs {
				_ = m.informers[i].RemoveEventHandler(done)
			}
			return nil, err
		}
		r.regs = append(r.regs, reg)
		checkers = append(checkers, reg.HasSyncedChecker())
	}
	r.synced = newAllDone(checkers, m.synced.stop)
	return r, nil
}

func (m *multiInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return m.add(func(inf cache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return inf.AddEventHandler(h)
	})
}

func (m *multiInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return m.add(func(inf cache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return inf.AddEventHandlerWithResyncPeriod(h, resync)
	})
}

func (m *multiInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return m.add(func(inf cache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return inf.AddEventHandlerWithOptions(h, opts)
	})
}

func (m *multiInformer) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	r, ok := handle.(*multiRegistration)
	if !ok || len(r.regs) != len(m.informers) {
		return fmt.Errorf("typedcache: registration %T was not made by this informer", handle)
	}
	var errs []error
	for i, inf := range m.informers {
		errs = append(errs, inf.RemoveEventHandler(r.regs[i]))
	}
	return errors.Join(errs...)
}

func (m *multiInformer) AddIndexers(indexers toolscache.Indexers) error {
	for _, inf := range m.informers {
		if err := inf.AddIndexers(indexers); err != nil {
			return err
		}
	}
	return nil
}

func (m *multiInformer) HasSynced() bool {
	for _, inf := range m.informers {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

func (m *multiInformer) HasSyncedChecker() toolscache.DoneChecker { return m.synced }

func (m *multiInformer) IsStopped() bool {
	for _, inf := range m.informers {
		if !inf.IsStopped() {
			return false
		}
	}
	return true
}

// allDone is a DoneChecker done once all of its checkers are. Its channel
// is made on first use, by a goroutine that waits for them in turn, or for
// stop (the cache's end).
type allDone struct {
	checkers []toolscache.DoneChecker
	stop     <-chan struct{}
	once     sync.Once
	done     chan struct{}
}

func newAllDone(checkers []toolscache.DoneChecker, stop <-chan struct{}) *allDone {
	return &allDone{checkers: checkers, stop: stop, done: make(chan struct{})}
}

func (a *allDone) Name() string {
	names := make([]string, len(a.checkers))
	for i, c := range a.checkers {
		names[i] = c.Name()
	}
	return strings.Join(names, ", ")
}

func (a *allDone) Done() <-chan struct{} {
	a.once.Do(func() {
		go func() {
			for _, c := range a.checkers {
				select {
				case <-c.Done():
				case <-a.stop:
					return
				}
			}
			close(a.done)
		}()
	})
	return a.done
}
