package informer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// shared is one shared informer of a Factory and what it was made with.
type shared[T Object] struct {
	informer   *SharedIndexInformer[T]
	name       string
	namespaced bool
	// namespaces are the namespaces it watches, sorted: {""} for all (or
	// a cluster-scoped resource), one, or several.
	namespaces                   []string
	labelSelector, fieldSelector string                    // normalized; "" for none
	tweak                        func(*metav1.ListOptions) // ForOptions.TweakListOptions
	// requests edits the options of every request: the factory's
	// TweakListOptions, then the selectors, then tweak.
	requests  func(*metav1.ListOptions)
	resync    time.Duration
	transform TransformFunc[T]                        // ForOptions.Transform, not the factory's default
	wrap      func(ListerWatcher[T]) ListerWatcher[T] // ForOptions.WrapListWatch
	compact   bool                                    // the informer keeps a compact store
	codec     recordCodec[T]                          // its codec, shared with its source; nil: its own
	objType   reflect.Type                            // the Go type of its objects: T, or for ForType one that implements T
}

// existing returns the informer the factory already has for w, joined
// with o (found is then true), or the error of a factory that makes no
// more informers (found is true too).
func existing[T Object](f *Factory, w what, o ForOptions[T]) (inf *SharedIndexInformer[T], found bool, err error) {
	f.mu.Lock()
	if err := f.usableLocked(); err != nil {
		f.mu.Unlock()
		return nil, true, err
	}
	e := f.types[w.typ]
	if w.typ == nil {
		e = f.entries[flavoredName(w.gvr, w.flavor)]
	}
	f.mu.Unlock()
	if e == nil {
		return nil, false, nil
	}
	inf, err = join(f, e, o)
	return inf, true, err
}

// usableLocked returns ErrFactoryStopped once the factory makes no more
// informers. The caller holds mu.
func (f *Factory) usableLocked() error {
	switch {
	case f.down:
		return fmt.Errorf("%w: shut down", ErrFactoryStopped)
	case f.runCtx != nil && f.runCtx.Err() != nil:
		return fmt.Errorf("%w: the context of Start ended: %w", ErrFactoryStopped, context.Cause(f.runCtx))
	}
	return nil
}

// register makes the informer of s over lw, wrapped by o.WrapListWatch,
// adds it to the factory under the Go type w.typ, if any, gives it to d,
// if not nil, which reads its transform and cache, and starts it if the
// factory runs. If another call has made the informer meanwhile, it joins
// that one instead.
func register[T Object](f *Factory, w what, r *apiResource, s *shared[T], lw ListerWatcher[T], o ForOptions[T], d *wireDecoding[T]) (*SharedIndexInformer[T], error) {
	f.mu.Lock()
	if err := f.usableLocked(); err != nil {
		f.mu.Unlock()
		return nil, err
	}
	if e := f.entries[s.name]; e != nil {
		f.mu.Unlock()
		return join(f, e, o)
	}
	s.resync = cmp.Or(o.ResyncPeriod, f.opts.DefaultResync)
	s.transform, s.wrap = o.Transform, o.WrapListWatch
	// Wrapped here, under the lock, once the informer is sure to be made:
	// never twice for one informer, nor for a call that joins another's.
	if s.wrap != nil {
		lw = s.wrap(lw)
	}
	opts := SharedIndexInformerOptions[T]{
		Name:                s.name,
		Resource:            r.mapping.Resource.GroupResource(),
		Indexers:            o.Indexers,
		DefaultResyncPeriod: s.resync,
		Transform:           transformFor(f, o),
		Queue:               f.opts.Informer.Queue,
		Reflector:           f.opts.Informer.Reflector,
		HandlerPanic:        f.opts.Informer.HandlerPanic,
		Metrics:             f.opts.Informer.metricsFor(s.name),
		NoLabelIndex:        f.opts.Informer.NoLabelIndex,
		Compact:             s.compact,
		codec:               s.codec,
		objType:             s.objType,
	}
	if d != nil {
		opts.sizer = d.objectSizer() // counts what the decoder shares once
	}
	inf, err := NewSharedIndexInformer(lw, opts)
	if err != nil {
		f.mu.Unlock()
		return nil, err
	}
	inf.byFactory = true
	s.informer = inf
	if d != nil {
		d.inf.Store(inf)
	}
	e := &factoryEntry{name: s.name, informer: inf, shared: s, done: make(chan struct{})}
	f.entries[s.name] = e
	f.order = append(f.order, e)
	if w.typ != nil {
		f.types[w.typ] = e
	}
	if f.runCtx != nil {
		f.startLocked(e)
	}
	f.mu.Unlock()
	return inf, nil
}

// transformFor returns the transform of the informers made with o: o's,
// or else the factory's default, converted to T, or nil.
func transformFor[T Object](f *Factory, o ForOptions[T]) TransformFunc[T] {
	dt := f.opts.DefaultTransform
	if o.Transform != nil || dt == nil {
		return o.Transform
	}
	return func(obj T) (T, error) {
		var zero T
		out, err := dt(obj)
		if err != nil {
			return zero, err
		}
		t, ok := out.(T)
		if !ok {
			return zero, fmt.Errorf("%w: DefaultTransform returned %T for a %T", ErrUnexpectedObject, out, obj)
		}
		return t, nil
	}
}

// metricsFor returns the Metrics of the informer name that o makes.
func (o InformerOptions) metricsFor(name string) Metrics {
	if o.Metrics == nil {
		return nil
	}
	return o.Metrics(name)
}

// join returns the informer of e to a caller asking for it with o, if o
// agrees with it (see ForOptions), after adding o's new indexers.
func join[T Object](f *Factory, e *factoryEntry, o ForOptions[T]) (*SharedIndexInformer[T], error) {
	s, ok := e.shared.(*shared[T])
	if !ok {
		return nil, fmt.Errorf("%w: %s has an informer of another Go type than %v", ErrOptionsConflict, e.name, reflect.TypeFor[T]())
	}
	ns, err := f.namespaces(s.name, s.namespaced, o)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(ns, s.namespaces) {
		return nil, fmt.Errorf("%w: %s watches %s, not %s", ErrOptionsConflict, s.name, namespaceText(s.namespaces), namespaceText(ns))
	}
	if o.LabelSelector != "" && o.LabelSelector != s.labelSelector {
		return nil, fmt.Errorf("%w: %s selects labels %q, not %q", ErrOptionsConflict, s.name, s.labelSelector, o.LabelSelector)
	}
	if o.FieldSelector != "" && o.FieldSelector != s.fieldSelector {
		return nil, fmt.Errorf("%w: %s selects fields %q, not %q", ErrOptionsConflict, s.name, s.fieldSelector, o.FieldSelector)
	}
	if o.TweakListOptions != nil && (s.tweak == nil || !sameFunc(o.TweakListOptions, s.tweak)) {
		return nil, fmt.Errorf("%w: %s was made with another TweakListOptions, or none", ErrOptionsConflict, s.name)
	}
	if o.ResyncPeriod != 0 && o.ResyncPeriod != s.resync {
		return nil, fmt.Errorf("%w: %s resyncs every %v, not %v (a handler may have its own period: HandlerOptions.ResyncPeriod)",
			ErrOptionsConflict, s.name, s.resync, o.ResyncPeriod)
	}
	if o.Transform != nil && (s.transform == nil || !sameFunc(o.Transform, s.transform)) {
		return nil, fmt.Errorf("%w: %s was made with another transform, or none", ErrOptionsConflict, s.name)
	}
	if o.WrapListWatch != nil && (s.wrap == nil || !sameFunc(o.WrapListWatch, s.wrap)) {
		return nil, fmt.Errorf("%w: %s was made with another WrapListWatch, or none", ErrOptionsConflict, s.name)
	}
	if o.Compact && !s.compact {
		return nil, fmt.Errorf("%w: %s keeps decoded objects, not a compact store", ErrOptionsConflict, s.name)
	}
	if err := addIndexers(s, o.Indexers); err != nil {
		return nil, err
	}
	return s.informer, nil
}

// namespaceText names what an informer watching namespaces watches.
func namespaceText(namespaces []string) string {
	switch {
	case len(namespaces) == 1 && namespaces[0] == metav1.NamespaceAll:
		return "every namespace"
	case len(namespaces) == 1:
		return fmt.Sprintf("namespace %q", namespaces[0])
	}
	return fmt.Sprintf("namespaces %q", strings.Join(namespaces, ", "))
}

// sameFunc reports whether a and b, of a func type, are the very same
// function value: one closure record, so the same code over the same
// captured variables (reflect.Value.Pointer compares the code alone).
func sameFunc[F any](a, b F) bool { return samePointer(a, b) }

// addIndexers adds to the informer of s the indexers of want it does not
// have. An index it has must have the same function.
func addIndexers[T Object](s *shared[T], want Indexers[T]) error {
	for {
		have := s.informer.GetIndexer().GetIndexers()
		add := make(Indexers[T], len(want))
		for name, fn := range want {
			old, ok := have[name]
			if !ok {
				add[name] = fn
			} else if !sameFunc(old, fn) && !(name == NamespaceIndex && indexesNamespace(s.objType, old) && indexesNamespace(s.objType, fn)) {
				return fmt.Errorf("%w: %s has an index %q with another function: %w", ErrOptionsConflict, s.name, name, ErrIndexConflict)
			}
		}
		if len(add) == 0 {
			return nil
		}
		err := s.informer.AddIndexers(add)
		if !errors.Is(err, ErrIndexConflict) {
			return err
		}
		// Another call added one of these names meanwhile: look again.
	}
}

// indexesNamespace reports whether f indexes objects by namespace, as
// MetaNamespaceIndexFunc does, judged by what it returns for two probe
// objects: function values cannot be compared across packages, and an
// index means what it computes.
func indexesNamespace[T Object](typ reflect.Type, f IndexFunc[T]) bool {
	if typ == nil || typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return false
	}
	for _, ns := range []string{"informer-probe-namespace", ""} {
		obj, ok := reflect.New(typ.Elem()).Interface().(T)
		if !ok {
			return false
		}
		obj.SetNamespace(ns)
		obj.SetName("informer-probe")
		vals, err := callIndexFunc(f, obj)
		if err != nil || len(vals) != 1 || vals[0] != ns {
			return false
		}
	}
	return true
}

// callIndexFunc calls f, turning a panic into an error.
func callIndexFunc[T Object](f IndexFunc[T], obj T) (vals []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("informer: index function panicked: %v", r)
		}
	}()
	return f(obj)
}
