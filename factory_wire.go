package informer

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/typedkube/informer/wire"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// DecodingMode chooses how the informers of a Factory made by NewFactory
// decode the API server's responses into typed objects.
type DecodingMode int

const (
	// DecodeWire, the default, decodes with package wire, straight from
	// the response bytes into each object, which equals client-go's
	// decoding under go-cmp (checked on every built-in type): a LIST's
	// items are decoded one by one into objects of their own (no list to
	// copy them out of), short repeated strings are shared
	// (FactoryOptions.Wire), and on a relist an object whose namespace,
	// name and resourceVersion, read from the bytes, match the cached
	// object's is not decoded at all: the cached object is used, and its
	// handlers' OnUpdate receives the same pointer twice. An informer with
	// a transform (ForOptions.Transform, FactoryOptions.DefaultTransform, or
	// one set with SetTransform before it runs) decodes every object, since
	// its cached objects are the transform's output, and shares no maps
	// between them, since a transform may edit them in place. A type whose
	// Go struct package wire cannot mirror falls back to DecodeClientGo.
	DecodeWire DecodingMode = iota
	// DecodeClientGo decodes with client-go's codecs and the factory's
	// scheme, as client-go's informers do.
	DecodeClientGo
)

// wireListWatch lists and watches through a wire.Source, opened at its
// first request.
type wireListWatch[T Object] struct {
	src func() *wire.Source[T]
}

func (lw *wireListWatch[T]) List(ctx context.Context, opts metav1.ListOptions) (*ListPage[T], error) {
	items, lm, err := lw.src().List(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &ListPage[T]{Items: items, ListMeta: lm}, nil
}

func (lw *wireListWatch[T]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return lw.src().Watch(ctx, opts)
}

// IsWatchListSemanticsUnSupported returns false, as for restListWatch.
func (lw *wireListWatch[T]) IsWatchListSemanticsUnSupported() bool { return false }

// newWireListWatch returns a ListerWatcher of mapping's resource in sc,
// decoding as d settles at its first request.
func newWireListWatch[T Object](f *Factory, mapping *meta.RESTMapping, sc scope, protobuf bool, d *wireDecoding[T]) (*wireListWatch[T], error) {
	client, err := f.restClient(mapping, protobuf)
	if err != nil {
		return nil, err
	}
	opts := wire.SourceOptions[T]{Protobuf: protobuf, Tweak: sc.tweak}
	if protobuf {
		// As for client-go's typed clients: the config's content types
		// apply as given when it sets them.
		if opts.Accept = f.cfg.AcceptContentTypes; opts.Accept == "" {
			opts.Accept = f.cfg.ContentType
		}
	}
	return &wireListWatch[T]{src: sync.OnceValue(func() *wire.Source[T] {
		dec, reuse := d.settle()
		if reuse {
			opts.Reuse = d.cached
		}
		return wire.NewSource(client, mapping.Resource.Resource, sc.namespace, dec, opts)
	})}, nil
}

// wireDecoding is how one informer of the factory decodes with package
// wire. What its objects may share is settled at its first request, when
// its transform is final (ForOptions.Transform, the factory's default, or
// one set with SetTransform before it runs): without a transform, objects
// share equal label and annotation maps, and a relist reuses the cached
// objects it finds unchanged; a transform may edit objects in place, and
// must not get its own output again, so with one, neither.
type wireDecoding[T Object] struct {
	inf        atomic.Pointer[SharedIndexInformer[T]] // set once registered
	newDecoder func(wire.Options) (*wire.Decoder[T], error)
	opts       wire.Options // dec's: NoMapSharing if the informer has a transform
	dec        *wire.Decoder[T]
	reuse      bool // the informer has no transform; settled by settle
	once       sync.Once
}

// newWireDecoding returns the decoding of an informer made with o, with
// newDecoder, such as wire.NewDecoder[T, T].
func newWireDecoding[T Object](f *Factory, o ForOptions[T], newDecoder func(wire.Options) (*wire.Decoder[T], error)) (*wireDecoding[T], error) {
	d := &wireDecoding[T]{newDecoder: newDecoder, opts: f.opts.Wire, reuse: transformFor(f, o) == nil}
	d.opts.NoMapSharing = d.opts.NoMapSharing || !d.reuse
	var err error
	d.dec, err = newDecoder(d.opts)
	return d, err
}

// settle decides, once, what the informer's objects may share, and returns
// its decoder and whether a relist may reuse cached objects.
func (d *wireDecoding[T]) settle() (*wire.Decoder[T], bool) {
	d.once.Do(func() {
		if inf := d.inf.Load(); inf != nil { // else not given out yet: as made
			d.reuse = !inf.hasTransform()
		}
		if !d.reuse && !d.opts.NoMapSharing { // a transform set after For
			d.opts.NoMapSharing = true
			if dec, err := d.newDecoder(d.opts); err == nil { // as the first one
				d.dec = dec
			}
		}
	})
	return d.dec, d.reuse
}

// cached returns the cached object of ref's namespace and name, if it has
// ref's resource version, for a relist to reuse.
func (d *wireDecoding[T]) cached(ref wire.ObjectRef) (T, bool) {
	var zero T
	inf := d.inf.Load()
	if inf == nil || inf.GetIndexer().Len() == 0 || len(ref.ResourceVersion) == 0 {
		return zero, false
	}
	key := string(ref.Name)
	if len(ref.Namespace) > 0 {
		key = string(ref.Namespace) + "/" + key
	}
	obj, ok := inf.GetIndexer().GetByKey(key)
	if !ok || obj.GetResourceVersion() != string(ref.ResourceVersion) {
		return zero, false
	}
	return obj, true
}

// ForProjection returns the factory's shared informer of projections PP
// (*P) of the kind of TP (*T), such as *corev1.Pod: P is a struct the user
// writes, with an embedded wire.Meta[P] and a subset of T's fields at every
// level, each of T's type or a projection of it; no tags, no methods, no
// generated code. The informer decodes each object straight from the
// response bytes into a P, never building a T, and caches only P:
//
//	type PodSlim struct {
//		wire.Meta[PodSlim]
//		Spec struct {
//			NodeName   string
//			Containers []struct{ Name, Image string }
//		}
//	}
//	pods, err := informer.ForProjection[PodSlim, corev1.Pod](f)
//
// The mapping is checked here: a field T lacks, a type that does not
// match, or a wire.Meta other than P's own (a Meta[Q] pasted from another
// projection) is an error wrapping wire.ErrMismatch that names the field's
// path (see wire.NewDecoder for what a projection may hold).
// Keys, namespaces, resource versions, label selectors, indexers, listers,
// handlers and tombstones work with PP as with any type. The informer is
// shared per P, named like "v1/pods (PodSlim)"; FactoryOptions.Wire
// configures its decoding; on a relist it reuses unchanged cached objects
// as DecodeWire does. Other errors and opts are as for For.
//
// In a factory made by NewFactoryForClients, the informer lists and
// watches T through the clients and projects each object by encoding it
// in protobuf and decoding that, which gives the same P.
//
// P and T are structs, not pointers (PP and TP are inferred): for
// ForProjection[*PodSlim, corev1.Pod] or [PodSlim, *corev1.Pod], Go reports
// that **PodSlim (or **v1.Pod) does not satisfy the constraint. For of a
// projection is ErrNotRegistered, naming ForProjection. Generated listers,
// which assert *T, cannot read the cache (see clientgo.Indexer).
func ForProjection[P, T any, PP interface {
	*P
	Object
}, TP interface {
	*T
	Object
}](f *Factory, opts ...ForOptions[PP]) (*SharedIndexInformer[PP], error) {
	o, err := forOptions(f, opts)
	if err != nil {
		return nil, err
	}
	typ := reflect.TypeFor[PP]()
	if inf, found, err := existingFor(f, typ, o); found {
		return inf, err
	}
	d, err := newWireDecoding(f, o, wire.NewDecoder[PP, TP])
	if err != nil {
		return nil, fmt.Errorf("informer: projection %v of %v: %w", reflect.TypeFor[P](), reflect.TypeFor[T](), err)
	}
	s, mapping, list, err := sharedFor[TP](context.Background(), f, o, func(gvr schema.GroupVersionResource) string {
		return flavoredName(gvr, reflect.TypeFor[P]().Name())
	})
	if err != nil {
		return nil, err
	}
	lw, err := scopedListWatch(f, s, func(sc scope) (ListerWatcher[PP], error) {
		if f.clients != nil {
			full, err := clientListWatchFor[TP](f, mapping, list, sc)
			if err != nil {
				return nil, err
			}
			return projectedListWatch(full, d), nil
		}
		_, protobuf := any(TP(nil)).(protobufDecodable)
		return orNil(newWireListWatch(f, mapping, sc, protobuf, d))
	})
	if err != nil {
		return nil, err
	}
	return registerDecoded(f, s, typ, mapping, lw, o, d)
}

// projectedListWatch lists and watches T through full and projects each
// object into PP through its protobuf encoding.
func projectedListWatch[PP, TP Object](full ListerWatcher[TP], d *wireDecoding[PP]) ListerWatcher[PP] {
	return convertedListWatch(full, nil, func(obj TP) (PP, error) {
		var zero PP
		m, ok := any(obj).(interface{ Marshal() ([]byte, error) })
		if !ok {
			return zero, fmt.Errorf("informer: %T has no protobuf encoding to project", obj)
		}
		b, err := m.Marshal()
		if err != nil {
			return zero, err
		}
		dec, _ := d.settle()
		return dec.Protobuf(b)
	})
}
