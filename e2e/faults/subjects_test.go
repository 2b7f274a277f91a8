package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"github.com/typedkube/informer/wire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// subject is one informer under test, with the handler that mirrors its cache and the errors
// its watch error handler was told, behind an interface free of its type parameter so that
// informers of different types can sit in one list.
type subject struct {
	name   string
	gvr    schema.GroupVersionResource
	run    kubetest.Runner
	syncs  []informer.Syncer
	errs   *kubetest.WatchErrors
	caches []kubetest.Cache // the informer's cache, and the state its handler rebuilt
	check  func() error     // the handler's consistency errors
	counts func() map[kubetest.EventKind]int
}

// newSubject makes an informer of lw called name, with opts, and a Mirror handler.
func newSubject[T informer.Object](name string, gvr schema.GroupVersionResource, lw informer.ListerWatcher[T], opts informer.SharedIndexInformerOptions[T]) (*subject, error) {
	errs := &kubetest.WatchErrors{}
	opts.Name = name
	opts.Resource = gvr.GroupResource()
	opts.Reflector.WatchErrorHandler = errs.Handle
	inf, err := informer.NewSharedIndexInformer(lw, opts)
	if err != nil {
		return nil, fmt.Errorf("informer %s: %w", name, err)
	}
	return subjectOf(name, gvr, inf, inf, errs)
}

// subjectOf adds a Mirror handler to inf, which run runs (the informer itself, or its Factory),
// and whose watch errors go to errs.
func subjectOf[T informer.Object](name string, gvr schema.GroupVersionResource, inf *informer.SharedIndexInformer[T], run kubetest.Runner, errs *kubetest.WatchErrors) (*subject, error) {
	mirror := kubetest.NewMirror[T]()
	reg, err := inf.AddEventHandler(mirror, informer.HandlerOptions{Name: name + "/mirror"})
	if err != nil {
		return nil, fmt.Errorf("informer %s: %w", name, err)
	}
	return &subject{
		name:  name,
		gvr:   gvr,
		run:   run,
		syncs: []informer.Syncer{inf, reg},
		errs:  errs,
		caches: []kubetest.Cache{
			{Name: name + " cache", GVR: gvr, State: func() kubetest.State { return kubetest.CacheState(inf) }},
			{Name: name + " handler", GVR: gvr, State: mirror.State},
		},
		check:  mirror.Err,
		counts: mirror.Counts,
	}, nil
}

// startSubjects runs every subject and waits until all have synced. The returned stop ends them
// and returns the first error of their Runs.
func startSubjects(ctx context.Context, subjects []*subject, timeout time.Duration) (stop func() error, err error) {
	var stops []func(time.Duration) error
	stop = func() error {
		var first error
		for _, s := range stops {
			if err := s(30 * time.Second); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	var syncs []informer.Syncer
	for _, s := range subjects {
		stops = append(stops, kubetest.Start(ctx, s.run))
		syncs = append(syncs, s.syncs...)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := informer.WaitForCacheSync(wctx, syncs...); err != nil {
		return stop, err
	}
	return stop, nil
}

// factoryRunner runs a Factory as a kubetest.Runner: Start, then Shutdown when ctx ends.
type factoryRunner struct{ f *informer.Factory }

func (r factoryRunner) Run(ctx context.Context) error {
	r.f.Start(ctx)
	<-ctx.Done()
	r.f.Shutdown()
	return nil
}

// idleRunner runs nothing: for a second informer of a Factory that another subject runs.
type idleRunner struct{}

func (idleRunner) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// The projections the fault suite caches: a few fields, decoded from protobuf.
type (
	podSlim struct {
		wire.Meta[podSlim]
		Spec struct {
			NodeName   string
			Containers []struct{ Name, Image string }
		}
		Status struct{ Phase corev1.PodPhase }
	}
	configMapSlim struct {
		wire.Meta[configMapSlim]
		Data map[string]string
	}
)
