package informertest

import (
	"cmp"
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/typedkube/informer"
)

// Server is an in-memory API server for every kind, with one Source per
// kind, made when first used: the source of the informers of the factories
// it makes (NewFactory), so that a controller built on a Factory runs in a
// unit test unchanged. A test changes objects with Add, Update and Delete,
// which have the semantics of a Source's, and provokes failures through a
// kind's Source (Source: Expire, DropWatches, SetListError and the rest).
//
// The zero value is not usable; call NewServer. A Server is safe for
// concurrent use.
type Server struct {
	scheme *runtime.Scheme

	mu      sync.Mutex // guards sources
	sources map[schema.GroupVersionKind]*Source[informer.Object]
}

// NewServer returns a Server over the kinds of scheme (client-go's
// kubernetes/scheme if nil, which knows the built-in types), holding
// copies of objs, created in order. It panics if an object's Go type is
// not registered in scheme, or two objects have one kind and key: a
// programming error of the test.
func NewServer(scheme *runtime.Scheme, objs ...informer.Object) *Server {
	s := &Server{scheme: cmp.Or(scheme, clientgoscheme.Scheme), sources: map[schema.GroupVersionKind]*Source[informer.Object]{}}
	for _, obj := range objs {
		if _, err := s.Add(obj); err != nil {
			panic(err)
		}
	}
	return s
}

// NewFactory returns a Factory whose informers list and watch the Server,
// for For and ForProjection of every kind of its scheme. opts are honoured
// as by a factory over an API server: namespaces, label and field
// selectors, TweakListOptions, transforms, resync periods, per-type
// ForOptions, Queue, Reflector options (watch-list streams included). Its
// Scheme defaults to the Server's. Kinds map to resources as in
// informer.NewFactoryForClients: the built-in kinds by themselves, CRD Go
// types through opts.RESTMapper, which must then map every kind used.
//
// As the Source does, the Server serves only the metadata.name and
// metadata.namespace field selectors; a list with another field selector
// fails with BadRequest. ForUnstructured and ForMetadata are not served:
// they fail with informer.ErrInvalidOptions.
func (s *Server) NewFactory(opts informer.FactoryOptions) (*informer.Factory, error) {
	if opts.Scheme == nil {
		opts.Scheme = s.scheme
	}
	return informer.NewFactoryForClients(informer.FactoryClients{Source: s.listWatch}, opts)
}

// Add creates a copy of obj, in the Source of its kind, and returns it
// stamped with its resource version (see Source.Add).
func (s *Server) Add(obj informer.Object) (informer.Object, error) {
	src, err := s.sourceOf(obj)
	if err != nil {
		return nil, err
	}
	return src.Add(obj)
}

// Update replaces an object by a copy of obj, in the Source of its kind
// (see Source.Update).
func (s *Server) Update(obj informer.Object) (informer.Object, error) {
	src, err := s.sourceOf(obj)
	if err != nil {
		return nil, err
	}
	return src.Update(obj)
}

// Delete deletes the object with obj's kind and key, and returns its final
// state (see Source.Delete).
func (s *Server) Delete(obj informer.Object) (informer.Object, error) {
	src, err := s.sourceOf(obj)
	if err != nil {
		return nil, err
	}
	return src.Delete(obj)
}

// Source returns the Source of the objects of kind gvk, made empty if the
// Server has none yet. It fails for a kind the scheme does not know.
func (s *Server) Source(gvk schema.GroupVersionKind) (*Source[informer.Object], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if src := s.sources[gvk]; src != nil {
		return src, nil
	}
	if _, err := s.newObject(gvk); err != nil {
		return nil, err
	}
	src := NewSource[informer.Object]()
	src.newObject = func() informer.Object {
		obj, _ := s.newObject(gvk) // checked above
		return obj
	}
	s.sources[gvk] = src
	return src, nil
}

// newObject returns a new object of kind gvk.
func (s *Server) newObject(gvk schema.GroupVersionKind) (informer.Object, error) {
	obj, err := s.scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("informertest: %w", err)
	}
	o, ok := obj.(informer.Object)
	if !ok {
		return nil, fmt.Errorf("informertest: %v is a %T, which has no object metadata", gvk, obj)
	}
	return o, nil
}

// sourceOf returns the Source of obj's kind.
func (s *Server) sourceOf(obj informer.Object) (*Source[informer.Object], error) {
	if isNil(obj) {
		return nil, fmt.Errorf("informertest: a nil object")
	}
	gvks, _, err := s.scheme.ObjectKinds(obj)
	switch {
	case err != nil:
		return nil, fmt.Errorf("informertest: %w", err)
	case len(gvks) != 1:
		return nil, fmt.Errorf("informertest: %T has %d kinds %v, want one", obj, len(gvks), gvks)
	}
	return s.Source(gvks[0])
}

// listWatch is the informer.FactoryClients.Source of the Server's
// factories: the Source of mapping's kind, seen through a namespace as a
// namespaced client sees the API server.
func (s *Server) listWatch(mapping *meta.RESTMapping, namespace string) (informer.ListerWatcher[informer.Object], error) {
	src, err := s.Source(mapping.GroupVersionKind)
	if err != nil || namespace == "" {
		return src, err
	}
	inNamespace := fields.OneTermEqualSelector("metadata.namespace", namespace).String()
	scoped := func(opts *metav1.ListOptions) {
		if opts.FieldSelector == "" {
			opts.FieldSelector = inNamespace
		} else {
			opts.FieldSelector += "," + inNamespace
		}
	}
	return informer.ListWatchFuncs[informer.Object]{
		ListFunc: func(ctx context.Context, opts metav1.ListOptions) (*informer.ListPage[informer.Object], error) {
			scoped(&opts)
			return src.List(ctx, opts)
		},
		WatchFunc: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			scoped(&opts)
			return src.Watch(ctx, opts)
		},
	}, nil
}
