package clientgo

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/internal/seam"
)

// ErrForeignRegistration reports a registration that the adapter did not
// hand out, given to RemoveEventHandler.
var ErrForeignRegistration = errors.New("clientgo: registration not made by this informer")

// SharedIndexInformer returns inf as a client-go cache.SharedIndexInformer,
// for code written against client-go: handlers registered through it get
// the objects as client-go's informers hand them (T in an interface{},
// cache.DeletedFinalStateUnknown for a deletion whose final state is
// unknown), GetIndexer and GetStore read inf's cache (see Indexer; their
// LastStoreSyncResourceVersion is inf.AppliedResourceVersion, as client-go's
// with its AtomicFIFO gate, and "" in QueueDeltaFIFO mode), and
// cache.WaitForCacheSync works on its HasSynced and on its registrations'.
// A registration can be given back to RemoveEventHandler and to
// cache.ShutDownEventHandler; one made by another informer is an error
// wrapping ErrForeignRegistration. Run and RunWithContext run inf; a
// program may run inf itself instead, but not both. On an informer a
// Factory made, they log a warning and return at once: the factory runs
// it.
//
// What differs from client-go's informer:
//   - A handler's resync period on an informer made without one is ignored
//     with a warning, as client-go does, though our own AddEventHandler
//     refuses it (informer.ErrResyncUnsupported). A period under a second,
//     or under the check period of a running informer, is raised as in
//     client-go, but without its warning. HandlerOptions.Logger is not
//     used.
//   - A handler that panics does not crash the program, as client-go's
//     default (utilruntime.ReallyCrash) does: the panic is reported as inf's
//     HandlerPanic option says, and the handler gets the next notification
//     at once.
//   - The *cache.Reflector a watch error handler gets is a stand-in that
//     carries the informer's name, for cache.DefaultWatchErrorHandler and
//     logging; it never runs. The errors are ours: a 410 is still
//     apierrors.IsResourceExpired, a wrong object an *informer.EventError.
//     A nil handler restores the default, as in client-go.
//   - A transform that returns another type than T is an error wrapping
//     ErrWrongType, never a panic: like a transform's own error, it fails
//     the list or watch event that carried the object, and the informer
//     reports it to the watch error handler.
//   - GetController's Run and RunWithContext run the informer, as its own
//     Run does; client-go's are no-ops. Either way, run the informer once.
//   - Run logs the error that stopped the informer, if any (client-go's
//     has none to log); a second Run logs a warning and returns, as
//     client-go's does.
func SharedIndexInformer[T informer.Object](inf *informer.SharedIndexInformer[T]) cache.SharedIndexInformer {
	typ := seam.ObjectType(inf)
	stand := cache.NewReflectorWithOptions(noLW{}, expectedType[T](typ), cache.NewStore(cache.MetaNamespaceKeyFunc), cache.ReflectorOptions{Name: inf.Name()})
	x := &indexer[T]{x: inf.GetIndexer(), typ: typ, applied: func() string {
		rv, _ := inf.AppliedResourceVersion()
		return rv
	}}
	return &sharedIndexInformer[T]{inf: inf, indexer: x, reflector: stand}
}

// expectedType is an empty object of typ (T, or the type of ForType's objects) for the stand-in Reflector, which reads its
// type: a new value rather than a nil pointer, which client-go calls
// methods on (an *unstructured.Unstructured's GroupVersionKind).
func expectedType[T informer.Object](typ reflect.Type) any {
	var zero T
	if typ != nil && typ.Kind() == reflect.Pointer {
		return reflect.New(typ.Elem()).Interface()
	}
	return zero
}

type sharedIndexInformer[T informer.Object] struct {
	inf       *informer.SharedIndexInformer[T]
	indexer   cache.Indexer
	reflector *cache.Reflector // the stand-in passed to watch error handlers
}

var _ cache.SharedIndexInformer = (*sharedIndexInformer[informer.Object])(nil)

// registration is a client-go registration of one of our handlers.
type registration[T informer.Object] struct {
	r   *informer.Registration[T]
	inf *informer.SharedIndexInformer[T] // the informer it was made on
}

func (r registration[T]) HasSynced() bool { return r.r.HasSynced() }

func (r registration[T]) HasSyncedChecker() cache.DoneChecker {
	return doneChecker{name: r.r.Name(), done: r.r.Synced()}
}

// ShutdownChan returns a channel closed once the handler will not be called
// again, for cache.ShutDownEventHandler.
func (r registration[T]) ShutdownChan() <-chan struct{} { return r.r.Done() }

// doneChecker is a cache.DoneChecker over a channel.
type doneChecker struct {
	name string
	done <-chan struct{}
}

func (d doneChecker) Name() string          { return d.name }
func (d doneChecker) Done() <-chan struct{} { return d.done }

func (a *sharedIndexInformer[T]) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return a.add(h, nil)
}

func (a *sharedIndexInformer[T]) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return a.add(h, &resync)
}

func (a *sharedIndexInformer[T]) AddEventHandlerWithOptions(h cache.ResourceEventHandler, opts cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return a.add(h, opts.ResyncPeriod)
}

// add registers h with the resync period resync, if not nil.
func (a *sharedIndexInformer[T]) add(h cache.ResourceEventHandler, resync *time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	if h == nil {
		return nil, errors.New("clientgo: nil handler")
	}
	// Named after the client-go handler, not the adapter around it.
	opts := informer.HandlerOptions{Name: fmt.Sprintf("%T", h)}
	if resync != nil {
		// client-go: zero means no resync for this handler.
		opts.ResyncPeriod = *resync
		if *resync == 0 {
			opts.ResyncPeriod = -1
		}
	}
	r, err := a.inf.AddEventHandler(Handler[T](h), opts)
	if errors.Is(err, informer.ErrResyncUnsupported) {
		klog.Background().Info("Warning: the handler's resync period is ignored: the informer was made without one",
			"informer", a.inf.Name(), "resyncPeriod", opts.ResyncPeriod)
		opts.ResyncPeriod = -1
		r, err = a.inf.AddEventHandler(Handler[T](h), opts)
	}
	if err != nil {
		return nil, err
	}
	return registration[T]{r: r, inf: a.inf}, nil
}

func (a *sharedIndexInformer[T]) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	r, ok := handle.(registration[T])
	if !ok {
		return fmt.Errorf("%w: %T", ErrForeignRegistration, handle)
	}
	if r.inf != a.inf {
		return fmt.Errorf("%w: one of informer %s", ErrForeignRegistration, r.inf.Name())
	}
	return a.inf.RemoveEventHandler(r.r)
}

func (a *sharedIndexInformer[T]) GetStore() cache.Store     { return a.indexer }
func (a *sharedIndexInformer[T]) GetIndexer() cache.Indexer { return a.indexer }

func (a *sharedIndexInformer[T]) GetController() cache.Controller { return controller[T]{a} }

func (a *sharedIndexInformer[T]) Run(stopCh <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stopCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	a.RunWithContext(ctx)
}

func (a *sharedIndexInformer[T]) RunWithContext(ctx context.Context) {
	switch err := a.inf.Run(ctx); {
	case errors.Is(err, informer.ErrRunByFactory):
		klog.FromContext(ctx).Info("Warning: the informer's factory runs it (Factory.Start); Run does nothing", "informer", a.inf.Name())
	case errors.Is(err, informer.ErrStarted):
		klog.FromContext(ctx).Info("Warning: the informer has already been started; it runs only once", "informer", a.inf.Name())
	case err != nil && !errors.Is(err, context.Canceled):
		klog.FromContext(ctx).Error(err, "Informer stopped", "informer", a.inf.Name())
	}
}

func (a *sharedIndexInformer[T]) HasSynced() bool { return a.inf.HasSynced() }

func (a *sharedIndexInformer[T]) HasSyncedChecker() cache.DoneChecker {
	return doneChecker{name: a.inf.Name(), done: a.inf.Synced()}
}

func (a *sharedIndexInformer[T]) LastSyncResourceVersion() string {
	return a.inf.LastSyncResourceVersion()
}

func (a *sharedIndexInformer[T]) SetWatchErrorHandler(h cache.WatchErrorHandler) error {
	if h == nil {
		return a.inf.SetWatchErrorHandler(nil)
	}
	return a.inf.SetWatchErrorHandler(func(_ context.Context, err error) { h(a.reflector, err) })
}

func (a *sharedIndexInformer[T]) SetWatchErrorHandlerWithContext(h cache.WatchErrorHandlerWithContext) error {
	if h == nil {
		return a.inf.SetWatchErrorHandler(nil)
	}
	return a.inf.SetWatchErrorHandler(func(ctx context.Context, err error) { h(ctx, a.reflector, err) })
}

func (a *sharedIndexInformer[T]) SetTransform(f cache.TransformFunc) error {
	if f == nil {
		return a.inf.SetTransform(nil)
	}
	return a.inf.SetTransform(func(obj T) (T, error) {
		out, err := f(obj)
		if err != nil {
			var zero T
			return zero, err
		}
		t, ok := out.(T)
		if !ok {
			var zero T
			return zero, fmt.Errorf("%w: the transform returned %T for a %T", ErrWrongType, out, obj)
		}
		return t, nil
	})
}

func (a *sharedIndexInformer[T]) IsStopped() bool { return a.inf.IsStopped() }

func (a *sharedIndexInformer[T]) AddIndexers(indexers cache.Indexers) error {
	add, err := typedIndexers[T](indexers)
	if err != nil {
		return err
	}
	return a.inf.AddIndexers(add)
}

// controller is what GetController returns: the informer, as client-go's
// cache.Controller.
type controller[T informer.Object] struct{ a *sharedIndexInformer[T] }

func (c controller[T]) Run(stopCh <-chan struct{})         { c.a.Run(stopCh) }
func (c controller[T]) RunWithContext(ctx context.Context) { c.a.RunWithContext(ctx) }
func (c controller[T]) HasSynced() bool                    { return c.a.HasSynced() }
func (c controller[T]) HasSyncedChecker() cache.DoneChecker {
	return c.a.HasSyncedChecker()
}
func (c controller[T]) LastSyncResourceVersion() string { return c.a.LastSyncResourceVersion() }

// noLW is the ListerWatcher of the stand-in Reflector, which never runs.
type noLW struct{}

func (noLW) List(metav1.ListOptions) (runtime.Object, error) {
	return nil, errors.New("clientgo: the stand-in reflector does not list")
}

func (noLW) Watch(metav1.ListOptions) (watch.Interface, error) {
	return nil, errors.New("clientgo: the stand-in reflector does not watch")
}
