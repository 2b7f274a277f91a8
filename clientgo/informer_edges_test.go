package clientgo

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
	"github.com/typedkube/informer/internal/fakeapi"
)

// newAdapted returns the adapter over an informer of src that retries
// quickly.
func newAdapted(t *testing.T, src *informertest.Source[*corev1.Pod]) cache.SharedIndexInformer {
	t.Helper()
	typed, err := informer.NewSharedIndexInformer(src, informer.SharedIndexInformerOptions[*corev1.Pod]{
		Reflector: informer.ReflectorOptions{Backoff: informer.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return SharedIndexInformer(typed)
}

// start runs inf until the test ends, and returns a function that stops it
// and waits for Run to return.
func start(t *testing.T, inf cache.SharedIndexInformer) (stop func()) {
	t.Helper()
	stopCh := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(stopCh) }()
	var once sync.Once
	stop = func() { once.Do(func() { close(stopCh); <-done }) }
	t.Cleanup(stop)
	return stop
}

// A transform is client-go code: whatever it returns that is not a T is an
// error the watch error handler hears, never a panic.
func TestSharedIndexInformerTransformWrongType(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    cache.TransformFunc
		want error
	}{
		{"another type", func(any) (any, error) { return &corev1.Service{}, nil }, ErrWrongType},
		{"untyped nil", func(any) (any, error) { return nil, nil }, ErrWrongType},
		{"nil *Pod", func(any) (any, error) { return (*corev1.Pod)(nil), nil }, informer.ErrNilObject},
		{"its own error", func(any) (any, error) { return nil, errTransform }, errTransform},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inf := newAdapted(t, informertest.NewSource(srcPod("web", "")))
			reported := make(chan error, 1)
			if err := inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
				select {
				case reported <- err:
				default:
				}
			}); err != nil {
				t.Fatal(err)
			}
			if err := inf.SetTransform(tc.f); err != nil {
				t.Fatal(err)
			}
			start(t, inf)
			if err := <-reported; !errors.Is(err, tc.want) {
				t.Errorf("reported %v, want %v", err, tc.want)
			}
			if inf.HasSynced() || len(inf.GetStore().List()) != 0 {
				t.Errorf("HasSynced %v with %d objects, after every object failed its transform", inf.HasSynced(), len(inf.GetStore().List()))
			}
		})
	}
}

var errTransform = errors.New("transform failed")

// A nil watch error handler brings back the default one, as in client-go,
// rather than a call of nil on the first error.
func TestSharedIndexInformerNilWatchErrorHandler(t *testing.T) {
	for _, withContext := range []bool{false, true} {
		src := informertest.NewSource(srcPod("web", ""))
		src.SetListError(apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no")))
		src.SetWatchError(apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no")))
		inf := newAdapted(t, src)
		var err error
		if withContext {
			_ = inf.SetWatchErrorHandlerWithContext(func(context.Context, *cache.Reflector, error) { t.Error("replaced handler called") })
			err = inf.SetWatchErrorHandlerWithContext(nil)
		} else {
			_ = inf.SetWatchErrorHandler(func(*cache.Reflector, error) { t.Error("replaced handler called") })
			err = inf.SetWatchErrorHandler(nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		stop := start(t, inf)
		// The handler is called before each retry: a third request means
		// two errors were handled.
		deadline := time.Now().Add(30 * time.Second)
		for src.Lists()+src.Watches() < 3 {
			if time.Now().After(deadline) {
				t.Fatalf("%d lists and %d watches after 30s", src.Lists(), src.Watches())
			}
			time.Sleep(time.Millisecond)
		}
		src.SetListError(nil)
		src.SetWatchError(nil)
		if !cache.WaitForCacheSync(t.Context().Done(), inf.HasSynced) {
			t.Fatal("not synced")
		}
		stop()
	}
}

// The life cycle through the adapter: options, registrations, checkers,
// the controller, and what is refused once the informer has stopped.
func TestSharedIndexInformerLifeCycle(t *testing.T) {
	src := informertest.NewSource(srcPod("web", "n1"))
	inf := newAdapted(t, src)
	rec := newRecorder()
	logger := klog.Background()
	never := time.Duration(0)
	reg, err := inf.AddEventHandlerWithOptions(rec, cache.HandlerOptions{Logger: &logger, ResyncPeriod: &never})
	if err != nil {
		t.Fatal(err)
	}
	if inf.HasSynced() || reg.HasSynced() || inf.LastSyncResourceVersion() != "" || inf.IsStopped() {
		t.Error("synced, or with a resource version, or stopped before Run")
	}
	if err := inf.AddIndexers(cache.Indexers{"node": func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	stop := start(t, inf)
	if !cache.WaitFor(t.Context(), "pods", inf.HasSyncedChecker(), reg.HasSyncedChecker(), inf.GetController().HasSyncedChecker()) {
		t.Fatal("not synced")
	}
	if !inf.GetController().HasSynced() || inf.GetController().LastSyncResourceVersion() != inf.LastSyncResourceVersion() {
		t.Error("the controller disagrees with the informer")
	}
	if got, err := inf.GetIndexer().ByIndex("node", "n1"); err != nil || len(got) != 1 {
		t.Errorf("ByIndex(node, n1) = %v, %v", got, err)
	}
	if rv := inf.GetIndexer().LastStoreSyncResourceVersion(); rv != src.ResourceVersion() {
		t.Errorf("LastStoreSyncResourceVersion = %q, want the source's %q", rv, src.ResourceVersion())
	}
	if inf.GetStore() != inf.GetIndexer() {
		t.Error("GetStore and GetIndexer differ")
	}
	if err := inf.SetTransform(nil); err == nil {
		t.Error("SetTransform after Run succeeded")
	}
	if err := inf.SetWatchErrorHandler(nil); err == nil {
		t.Error("SetWatchErrorHandler after Run succeeded")
	}
	// A second Run returns at once.
	inf.RunWithContext(t.Context())

	stop()
	if !inf.IsStopped() {
		t.Error("not stopped after Run returned")
	}
	if _, err := inf.AddEventHandler(rec); err == nil {
		t.Error("AddEventHandler after stop succeeded")
	}
	if err := inf.AddIndexers(cache.Indexers{"other": cache.MetaNamespaceIndexFunc}); err == nil {
		t.Error("AddIndexers after stop succeeded")
	}
	select {
	case <-reg.(interface{ ShutdownChan() <-chan struct{} }).ShutdownChan():
	default:
		t.Error("a registration's ShutdownChan is open after Run returned")
	}
	if err := inf.RemoveEventHandler(reg); err != nil {
		t.Errorf("RemoveEventHandler after stop = %v, want nil", err)
	}
	if err := inf.RemoveEventHandler(nil); !errors.Is(err, ErrForeignRegistration) {
		t.Errorf("RemoveEventHandler(nil) = %v, want ErrForeignRegistration", err)
	}
	if _, err := inf.AddEventHandler(nil); err == nil {
		t.Error("AddEventHandler(nil) succeeded")
	}
}

// client-go's idiom, SetTransform on a factory's informer before Start,
// works on ours through the adapter: the transform may edit each object in
// place, and no other object changes with it (the factory's objects would
// otherwise share equal label maps).
func TestSharedIndexInformerSetTransformOnFactoryInformer(t *testing.T) {
	srv := fakeapi.New(scheme.Scheme, fakeapi.Resource{GVK: corev1.SchemeGroupVersion.WithKind("Pod"), Name: "pods", Namespaced: true, Protobuf: true})
	defer srv.Close()
	for _, name := range []string{"web", "db"} {
		if err := srv.Create(pod("a", name, map[string]string{"app": "same"})); err != nil {
			t.Fatal(err)
		}
	}
	f, err := informer.NewFactory(srv.Config(), informer.FactoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
	pods, err := informer.For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	err = SharedIndexInformer(pods).SetTransform(func(obj any) (any, error) {
		p := obj.(*corev1.Pod)
		p.Labels["name"] = p.Name // in place
		return p, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(t.Context())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.GetIndexer().List() {
		if p.Labels["name"] != p.Name {
			t.Errorf("%s has labels %v: another object's transform changed them", p.Name, p.Labels)
		}
	}
}
