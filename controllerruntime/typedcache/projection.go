package typedcache

import (
	"context"
	"fmt"
	"reflect"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/clientgo"
)

// projectionMaker makes the entry of a kind read as TP but cached as its
// projection PP: the factory's informer of PP, decoded straight from the
// wire, whose objects are copied into TPs for readers and handlers.
func projectionMaker[P, T any, PP interface {
	*P
	informer.Object
}, TP interface {
	*T
	client.Object
}](_ context.Context, s *scope, k kind) (entry, error) {
	conv, err := projectionConverter[PP, TP]()
	if err != nil {
		return nil, err
	}
	inf, err := informer.ForProjection[P, T, PP, TP](s.factory, forOptions[PP](s, k, nil))
	if err != nil {
		return nil, fmt.Errorf("typedcache: informer of %v (projection %v): %w", k.gvk, reflect.TypeFor[P](), err)
	}
	adapter := viewInformer[PP, TP]{Informer: clientgo.SharedIndexInformer(inf), view: conv.view}
	return newTypedEntry(inf, k, conv, adapter, removeFrom(s.factory, inf.Name())), nil
}

// projectionConverter returns the converter of projections PP into TP.
// A deep copy fills a TP from the projection, sharing its maps and slices,
// and then deep-copies that with TP's own DeepCopyInto.
func projectionConverter[PP informer.Object, TP client.Object]() (converter[PP, TP], error) {
	copyFn, err := projectionCopier(reflect.TypeFor[TP]().Elem(), reflect.TypeFor[PP]().Elem())
	if err != nil {
		return converter[PP, TP]{}, err
	}
	tElem := reflect.TypeFor[TP]().Elem()
	c := converter[PP, TP]{}
	c.shallow = func(src PP, dst TP) {
		d := reflect.ValueOf(dst).Elem()
		d.SetZero()
		copyFn(d, reflect.ValueOf(src).Elem())
	}
	c.view = func(src PP) TP {
		dst := reflect.New(tElem).Interface().(TP)
		if v := reflect.ValueOf(src); v.IsValid() && !v.IsNil() {
			c.shallow(src, dst)
		}
		return dst
	}
	same := sameConverter[TP]()
	c.deep = func(src PP, dst TP) { same.deep(c.view(src), dst) }
	return c, nil
}

// viewInformer is an informer of projections S as controller-runtime's
// Informer of their full type O: handlers and index functions get each
// object as an O with the projection's fields (see Projection).
type viewInformer[S informer.Object, O client.Object] struct {
	cache.Informer // of S
	view           func(S) O
}

func (v viewInformer[S, O]) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return v.Informer.AddEventHandler(viewHandler[S, O]{h: h, view: v.view})
}

func (v viewInformer[S, O]) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return v.Informer.AddEventHandlerWithResyncPeriod(viewHandler[S, O]{h: h, view: v.view}, resync)
}

func (v viewInformer[S, O]) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return v.Informer.AddEventHandlerWithOptions(viewHandler[S, O]{h: h, view: v.view}, opts)
}

func (v viewInformer[S, O]) AddIndexers(indexers toolscache.Indexers) error {
	out := make(toolscache.Indexers, len(indexers))
	for name, f := range indexers {
		out[name] = func(obj any) ([]string, error) {
			if s, ok := obj.(S); ok {
				return f(v.view(s))
			}
			return f(obj)
		}
	}
	return v.Informer.AddIndexers(out)
}

// viewHandler passes each object to h as an O.
type viewHandler[S informer.Object, O client.Object] struct {
	h    toolscache.ResourceEventHandler
	view func(S) O
}

func (v viewHandler[S, O]) as(obj any) any {
	switch o := obj.(type) {
	case S:
		return v.view(o)
	case toolscache.DeletedFinalStateUnknown:
		if s, ok := o.Obj.(S); ok {
			o.Obj = v.view(s)
		}
		return o
	}
	return obj
}

func (v viewHandler[S, O]) OnAdd(obj any, isInInitialList bool) {
	v.h.OnAdd(v.as(obj), isInInitialList)
}
func (v viewHandler[S, O]) OnUpdate(oldObj, newObj any) { v.h.OnUpdate(v.as(oldObj), v.as(newObj)) }
func (v viewHandler[S, O]) OnDelete(obj any)            { v.h.OnDelete(v.as(obj)) }
