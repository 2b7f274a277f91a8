package informer

import (
	"fmt"
	"reflect"

	"github.com/typedkube/informer/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
)

// how is what a For* hands to step 3 of the pipeline: the ways its
// informer of T may list and watch, of which source chooses one.
type how[T Object] struct {
	// decoder makes package wire's decoder of T from the bytes of the API
	// type; nil where package wire does not serve (ForUnstructured,
	// ForMetadata).
	decoder func(wire.Options) (*wire.Decoder[T], error)
	// protobuf tells whether the API type has protobuf (see
	// protobufDecodable).
	protobuf bool
	// projection: T is a projection (ForProjection), which only package
	// wire makes, and which a compact store does not keep.
	projection bool
	// client makes the ListerWatcher of one scope without package wire,
	// through client-go: the clients of a factory made by
	// NewFactoryForClients, a REST client with client-go's codecs, or the
	// dynamic or metadata client. d is the informer's decoding, or nil.
	client func(f *Factory, r *apiResource, sc scope, d *wireDecoding[T]) (ListerWatcher[T], error)
}

// typedHow is how For lists and watches T: with package wire, if the
// factory decodes with it and it can decode T, and else with client-go's
// codecs, or through the factory's clients.
func typedHow[T Object]() how[T] {
	return how[T]{
		decoder:  wire.NewDecoder[T, T],
		protobuf: reflect.TypeFor[T]().Implements(reflect.TypeFor[protobufDecodable]()),
		client: func(f *Factory, r *apiResource, sc scope, _ *wireDecoding[T]) (ListerWatcher[T], error) {
			if f.clients != nil {
				return clientListWatchFor[T](f, r, sc)
			}
			return newRESTListWatch[T](f, r, sc)
		},
	}
}

// projectionHow is how ForProjection lists and watches projections PP of
// TP: with package wire, or through the factory's clients, projecting each
// object through its protobuf encoding.
func projectionHow[PP, TP Object]() how[PP] {
	return how[PP]{
		decoder: func(opts wire.Options) (*wire.Decoder[PP], error) {
			dec, err := wire.NewDecoder[PP, TP](opts)
			if err != nil {
				return nil, fmt.Errorf("informer: projection %v of %v: %w", reflect.TypeFor[PP]().Elem(), reflect.TypeFor[TP]().Elem(), err)
			}
			return dec, nil
		},
		protobuf:   reflect.TypeFor[TP]().Implements(reflect.TypeFor[protobufDecodable]()),
		projection: true,
		client: func(f *Factory, r *apiResource, sc scope, d *wireDecoding[PP]) (ListerWatcher[PP], error) {
			full, err := clientListWatchFor[TP](f, r, sc)
			if err != nil {
				return nil, err
			}
			return projectedListWatch(full, d), nil
		},
	}
}

// dynamicHow is how ForUnstructured lists and watches: through the
// factory's dynamic client, in JSON.
func dynamicHow() how[*unstructured.Unstructured] {
	return how[*unstructured.Unstructured]{
		client: func(f *Factory, r *apiResource, sc scope, _ *wireDecoding[*unstructured.Unstructured]) (ListerWatcher[*unstructured.Unstructured], error) {
			return dynamicListWatch(f.dynamic, r.mapping.Resource, sc), nil
		},
	}
}

// metadataHow is how ForMetadata lists and watches: through the factory's
// metadata client.
func metadataHow() how[*metav1.PartialObjectMetadata] {
	return how[*metav1.PartialObjectMetadata]{
		client: func(f *Factory, r *apiResource, sc scope, _ *wireDecoding[*metav1.PartialObjectMetadata]) (ListerWatcher[*metav1.PartialObjectMetadata], error) {
			var c metadata.ResourceInterface = f.metadata.Resource(r.mapping.Resource)
			if sc.namespace != "" {
				c = f.metadata.Resource(r.mapping.Resource).Namespace(sc.namespace)
			}
			return markedLike(f.metadata, ListWatchFromMetadata(c, sc.tweak)), nil
		},
	}
}

// source returns the ListerWatcher of the informer of s: with package
// wire when d is set, over REST, and otherwise through client-go. For
// several namespaces it merges one ListerWatcher a namespace. It settles
// whether the informer keeps a compact store, and the store's codec.
func source[T Object](f *Factory, r *apiResource, s *shared[T], o ForOptions[T], h how[T], d *wireDecoding[T]) (ListerWatcher[T], error) {
	s.compact = !h.projection && (o.Compact || f.opts.Informer.Compact)
	var raw *wire.Compact[T] // a compact store's codec, for a source that lists records
	if s.compact && d != nil {
		raw = wire.NewCompact(d.dec, wire.DecodedCacheSize)
		s.codec = raw
		if !d.reuse || o.WrapListWatch != nil || f.opts.Informer.Reflector.WatchList == WatchListOn {
			// Objects are what a transform, a wrapper or a watch-list
			// stream reads; a transform set later is found when d settles.
			raw = nil
		}
	}
	mk := func(sc scope) (ListerWatcher[T], error) {
		if f.clients != nil || d == nil {
			return h.client(f, r, sc, d)
		}
		return newWireListWatch(f, r.mapping, sc, h.protobuf, d, raw)
	}
	if len(s.namespaces) == 1 {
		return mk(scope{namespace: s.namespaces[0], tweak: s.requests})
	}
	return MultiNamespaceListWatch(s.namespaces, func(ns string) (ListerWatcher[T], error) {
		return mk(scope{namespace: ns, tweak: s.requests})
	})
}

// dynamicListWatch lists and watches gvr in sc through c.
func dynamicListWatch(c dynamic.Interface, gvr schema.GroupVersionResource, sc scope) ListerWatcher[*unstructured.Unstructured] {
	var rc dynamic.ResourceInterface = c.Resource(gvr)
	if sc.namespace != "" {
		rc = c.Resource(gvr).Namespace(sc.namespace)
	}
	return markedLike(c, ListWatchFromDynamic(rc, sc.tweak))
}

// markedLike returns lw, marked as not supporting watch-list streams if
// client is (see watchListUnsupported): a per-resource client of a
// clientset that carries the marker may not.
func markedLike[T Object](client any, lw ListerWatcher[T]) ListerWatcher[T] {
	if watchListUnsupported(client) {
		return WithoutWatchList(lw)
	}
	return lw
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
