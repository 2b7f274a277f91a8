package informer

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
)

// FactoryClients are the clients a Factory made by NewFactoryForClients
// lists and watches through. Each may be nil, which makes the calls that
// need it fail with ErrInvalidOptions.
type FactoryClients struct {
	// Kube serves For for the types it has typed clients of: the built-in
	// ones. client-go's fake Clientset works, reactors included.
	Kube kubernetes.Interface
	// Dynamic serves ForUnstructured, and For for the types Kube has no
	// typed client of, such as CRD Go types, converting each object from
	// its unstructured form.
	Dynamic dynamic.Interface
	// Metadata serves ForMetadata.
	Metadata metadata.Interface
	// Source, if set, serves For and ForProjection of every type, in
	// place of Kube and Dynamic: it returns the ListerWatcher of the
	// objects of mapping's kind in namespace ("" for every namespace, or a
	// cluster-scoped resource), each of the Go type the factory's scheme
	// gives that kind. The factory adds its selectors and tweaks to the
	// options of each request, and copies each object (DeepCopyObject), so
	// that a transform may edit it in place, as it may one decoded from a
	// server's response. informertest.Server.NewFactory sets it.
	Source func(mapping *meta.RESTMapping, namespace string) (ListerWatcher[Object], error)
}

// NewFactoryForClients returns a Factory that lists and watches through
// clients instead of a *rest.Config, for example client-go's fake
// clientsets in a controller's unit tests:
//
//	f, err := informer.NewFactoryForClients(informer.FactoryClients{Kube: fake.NewClientset(pod)}, informer.FactoryOptions{})
//	pods, err := informer.For[*corev1.Pod](f)
//
// Kinds map to resources through FactoryOptions.RESTMapper if set, and
// otherwise through the resources of client-go's typed clients: the
// built-in kinds, with their scope, found without discovery. Give a RESTMapper (such
// as meta.NewDefaultRESTMapper with the kinds added) to use For of CRD Go
// types, ForUnstructured or ForMetadata with CRDs. Clients that carry client-go's marker for lacking
// watch-list semantics (its fakes do) are listed and watched instead of
// being asked for a watch-list stream.
func NewFactoryForClients(clients FactoryClients, opts FactoryOptions) (*Factory, error) {
	if clients.Kube == nil && clients.Dynamic == nil && clients.Metadata == nil && clients.Source == nil {
		return nil, fmt.Errorf("%w: no client in FactoryClients", ErrInvalidOptions)
	}
	if err := validateFactoryOptions(&opts); err != nil {
		return nil, err
	}
	f := newFactory(opts)
	f.clients = &clients
	f.dynamic, f.metadata = clients.Dynamic, clients.Metadata
	typed := &typedClientMapper{clients: clients.Kube, scheme: opts.Scheme}
	if opts.RESTMapper != nil {
		f.setMapper(opts.RESTMapper)
	} else {
		// Not Kube's discovery: client-go's fake serves none, and the
		// deferred discovery mapper then never returns.
		f.mapper = meta.ToRESTMapperWithContext(typed)
	}
	if clients.Kube != nil {
		// Set here, so that only a program that calls NewFactoryForClients
		// links the reflection over the clientset's methods, which keeps
		// the linker from dropping any exported method of any type.
		f.typedClients = typed.listWatch
	}
	return f, nil
}

// clientListWatchFor returns the ListerWatcher of For[T] in a factory made
// by NewFactoryForClients: its Source's, T's typed client in Kube, or else
// the dynamic client converting from unstructured objects. typ is the Go
// type of the objects: T, or for ForType a type that implements T.
func clientListWatchFor[T Object](f *Factory, r *apiResource, sc scope, typ reflect.Type) (ListerWatcher[T], error) {
	if f.clients.Source != nil {
		lw, err := f.clients.Source(r.mapping, sc.namespace)
		if err != nil || lw == nil {
			return nil, fmt.Errorf("informer: FactoryClients.Source of %s: %w", r.mapping.Resource, cmp.Or(err, ErrInvalidOptions))
		}
		return convertedListWatch(lw, sc.tweak, func(obj Object) (T, error) {
			return objectOf[T](obj.DeepCopyObject(), typ) // as from a server: its own, to transform in place
		}), nil
	}
	if f.typedClients != nil {
		if lw, ok := f.typedClients(typ.Elem(), sc); ok {
			return markedLike(f.clients.Kube, convertedListWatch(lw, nil, func(obj Object) (T, error) {
				return objectOf[T](obj, typ)
			})), nil
		}
	}
	if f.clients.Dynamic == nil {
		return nil, fmt.Errorf("%w: %v has no typed client in FactoryClients.Kube, and FactoryClients.Dynamic is nil", ErrInvalidOptions, typ)
	}
	toT := func(u *unstructured.Unstructured) (T, error) { return fromUnstructured[T](u.Object, typ) }
	return convertedListWatch(dynamicListWatch(f.clients.Dynamic, r.mapping.Resource, sc), nil, toT), nil
}

// convertedListWatch lists and watches through full, after tweak (if not
// nil) has edited the options, and converts each object with conv. A
// listed object that does not convert fails the list; a watched one ends
// the watch with an ERROR event (see undecodableEvent), so that the
// Reflector watches again from its last resource version rather than lose
// the change.
func convertedListWatch[From, To Object](full ListerWatcher[From], tweak func(*metav1.ListOptions), conv func(From) (To, error)) ListerWatcher[To] {
	lw := ListWatchFuncs[To]{
		ListFunc: func(ctx context.Context, opts metav1.ListOptions) (*ListPage[To], error) {
			if tweak != nil {
				tweak(&opts)
			}
			page, err := full.List(ctx, opts)
			if err != nil {
				return nil, err
			}
			return convertPage(page, conv)
		},
		WatchFunc: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if tweak != nil {
				tweak(&opts)
			}
			w, err := full.Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			return newConvertingWatch(w, func(ev watch.Event) watch.Event {
				obj, ok := ev.Object.(From)
				if !ok || ev.Type == watch.Error {
					return ev
				}
				to, err := conv(obj)
				if err != nil {
					return undecodableEvent(ev, err)
				}
				ev.Object = to
				return ev
			}), nil
		},
	}
	return markedLike[To](full, lw)
}

// undecodableEvent is the ERROR event that reports a watch event whose
// object does not convert, as client-go's watches (and package wire's)
// report one they cannot decode: the informer counts it in
// Stats.DecodeErrors, and tells its watch error handler.
func undecodableEvent(ev watch.Event, err error) watch.Event {
	return watch.Event{Type: watch.Error, Object: watchDecoding.AsObject(fmt.Errorf("a %s event does not convert: %w", ev.Type, err))}
}

// watchDecoding makes the Status of client-go's watch decoding errors.
var watchDecoding = apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", watchDecodingCause)

// convertPage returns page with each item converted by conv, or conv's
// first error.
func convertPage[From, To any](page *ListPage[From], conv func(From) (To, error)) (*ListPage[To], error) {
	out := &ListPage[To]{Items: make([]To, len(page.Items)), ListMeta: page.ListMeta}
	for i, obj := range page.Items {
		var err error
		if out.Items[i], err = conv(obj); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// objectOf returns obj as a T, if its Go type is typ (T, or for ForType a
// type that implements T), or an error wrapping ErrUnexpectedObject.
func objectOf[T Object](obj any, typ reflect.Type) (T, error) {
	t, ok := obj.(T)
	if !ok || reflect.TypeOf(obj) != typ {
		var zero T
		return zero, fmt.Errorf("%w: %T, want %v", ErrUnexpectedObject, obj, typ)
	}
	return t, nil
}

// fromUnstructured converts u into a new object of typ, a pointer type
// that is T or implements it.
func fromUnstructured[T Object](u map[string]any, typ reflect.Type) (T, error) {
	obj := reflect.New(typ.Elem()).Interface().(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, obj); err != nil {
		var zero T
		return zero, fmt.Errorf("%w: convert an unstructured object to %T: %w", errUndecodable, obj, err)
	}
	return obj, nil
}

// reflectedListWatch lists and watches through a typed client found by
// reflection (a value with List and Watch methods, such as a PodInterface),
// after tweak, if not nil, has edited the options; a list's items are
// handed out as pointers into it.
func reflectedListWatch(client reflect.Value, tweak func(*metav1.ListOptions)) ListerWatcher[Object] {
	call := func(method reflect.Value, ctx context.Context, opts metav1.ListOptions) (any, error) {
		if tweak != nil {
			tweak(&opts)
		}
		out := method.Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(opts)})
		err, _ := out[1].Interface().(error)
		return out[0].Interface(), err
	}
	listMethod, watchMethod := client.MethodByName("List"), client.MethodByName("Watch")
	return ListWatchFuncs[Object]{
		ListFunc: func(ctx context.Context, opts metav1.ListOptions) (*ListPage[Object], error) {
			out, err := call(listMethod, ctx, opts)
			if err != nil {
				return nil, err
			}
			list, ok := out.(runtime.Object)
			if !ok || isNil(list) {
				return nil, fmt.Errorf("informer: the typed client's List returned no list")
			}
			objs, err := meta.ExtractList(list)
			if err != nil {
				return nil, fmt.Errorf("informer: the typed client's list: %w", err)
			}
			page := &ListPage[Object]{Items: make([]Object, len(objs)), ListMeta: ListMetaOf(list.(metav1.ListInterface))}
			for i, o := range objs {
				if page.Items[i], ok = o.(Object); !ok {
					return nil, fmt.Errorf("%w: the typed client listed a %T", ErrUnexpectedObject, o)
				}
			}
			return page, nil
		},
		WatchFunc: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			out, err := call(watchMethod, ctx, opts)
			if err != nil {
				return nil, err
			}
			w, _ := out.(watch.Interface)
			return w, nil
		},
	}
}

// typedClient is one resource's typed client in a clientset, such as
// CoreV1().Pods.
type typedClient struct {
	gvr        schema.GroupVersionResource
	gvk        schema.GroupVersionKind
	namespaced bool
	method     reflect.Value // Pods(namespace) or Nodes()
}

// get returns the client for namespace ("" for all, or cluster-scoped).
func (c typedClient) get(namespace string) reflect.Value {
	if c.namespaced {
		return c.method.Call([]reflect.Value{reflect.ValueOf(namespace)})[0]
	}
	return c.method.Call(nil)[0]
}

// typedClientMapper is a RESTMapper of the kinds a clientset has typed
// clients of. It finds them by reflection once: every method of the
// clientset returning a group client (CoreV1), and every method of that
// returning a client whose List gives a list of a kind the scheme knows.
// The resource is the method's name in lower case (Pods: pods,
// NetworkPolicies: networkpolicies), and a method taking a namespace means
// a namespaced resource.
type typedClientMapper struct {
	clients kubernetes.Interface
	scheme  *runtime.Scheme

	once   sync.Once
	byType map[reflect.Type]typedClient // by the object's struct type
	byGVK  map[schema.GroupVersionKind]typedClient
}

var (
	contextType  = reflect.TypeFor[context.Context]()
	listOptsType = reflect.TypeFor[metav1.ListOptions]()
	errorType    = reflect.TypeFor[error]()
)

func (m *typedClientMapper) scan() {
	m.byType = map[reflect.Type]typedClient{}
	m.byGVK = map[schema.GroupVersionKind]typedClient{}
	if m.clients == nil || isNil(m.clients) {
		m.clients = kubernetes.New(nil) // for its types; never called
	}
	s := m.scheme
	if s == nil {
		s = scheme.Scheme
	}
	cs := reflect.ValueOf(m.clients)
	for i := range cs.NumMethod() {
		group := cs.Method(i)
		gt := group.Type()
		if gt.NumIn() != 0 || gt.NumOut() != 1 || gt.Out(0).Kind() != reflect.Interface || cs.Type().Method(i).Name == "Discovery" {
			continue
		}
		g := group.Call(nil)[0]
		if g.IsNil() {
			continue
		}
		g = g.Elem()
		for j := range g.NumMethod() {
			res := g.Method(j)
			rt := res.Type()
			namespaced := rt.NumIn() == 1 && rt.In(0).Kind() == reflect.String
			if !(rt.NumIn() == 0 || namespaced) || rt.NumOut() != 1 || rt.Out(0).Kind() != reflect.Interface {
				continue
			}
			list, ok := rt.Out(0).MethodByName("List")
			if !ok || !isListMethod(list.Type) {
				continue
			}
			items, ok := list.Type.Out(0).Elem().FieldByName("Items")
			if !ok || items.Type.Kind() != reflect.Slice || items.Type.Elem().Kind() != reflect.Struct {
				continue
			}
			elem := items.Type.Elem()
			obj, ok := reflect.New(elem).Interface().(runtime.Object)
			if !ok {
				continue
			}
			gvks, _, err := s.ObjectKinds(obj)
			if err != nil || len(gvks) != 1 {
				continue
			}
			gvk := gvks[0]
			c := typedClient{
				gvr:        gvk.GroupVersion().WithResource(strings.ToLower(g.Type().Method(j).Name)),
				gvk:        gvk,
				namespaced: namespaced,
				method:     res,
			}
			m.byType[elem] = c
			m.byGVK[gvk] = c
		}
	}
}

// isListMethod reports whether t is func(context.Context, metav1.ListOptions) (*L, error).
func isListMethod(t reflect.Type) bool {
	return t.NumIn() == 2 && t.In(0) == contextType && t.In(1) == listOptsType &&
		t.NumOut() == 2 && t.Out(0).Kind() == reflect.Pointer && t.Out(0).Elem().Kind() == reflect.Struct && t.Out(1) == errorType
}

func (m *typedClientMapper) clientFor(elem reflect.Type) (typedClient, bool) {
	m.once.Do(m.scan)
	c, ok := m.byType[elem]
	return c, ok
}

// listWatch returns the ListerWatcher of the typed client of the objects of
// struct type elem in sc, and false if the clientset has none.
func (m *typedClientMapper) listWatch(elem reflect.Type, sc scope) (ListerWatcher[Object], bool) {
	c, ok := m.clientFor(elem)
	if !ok {
		return nil, false
	}
	return reflectedListWatch(c.get(sc.namespace), sc.tweak), true
}

func (m *typedClientMapper) mapping(gk schema.GroupKind, versions ...string) (typedClient, error) {
	m.once.Do(m.scan)
	for gvk, c := range m.byGVK {
		if gvk.GroupKind() != gk {
			continue
		}
		if len(versions) == 0 || versions[0] == "" || versions[0] == gvk.Version {
			return c, nil
		}
	}
	return typedClient{}, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
}

func (m *typedClientMapper) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	kinds, err := m.KindsFor(resource)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return kinds[0], nil
}

func (m *typedClientMapper) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	m.once.Do(m.scan)
	var out []schema.GroupVersionKind
	for gvk, c := range m.byGVK {
		if c.gvr.Group == resource.Group && c.gvr.Resource == resource.Resource && (resource.Version == "" || c.gvr.Version == resource.Version) {
			out = append(out, gvk)
		}
	}
	if len(out) == 0 {
		return nil, &meta.NoResourceMatchError{PartialResource: resource}
	}
	return out, nil
}

func (m *typedClientMapper) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	kinds, err := m.KindsFor(input)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return m.byGVK[kinds[0]].gvr, nil
}

func (m *typedClientMapper) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	r, err := m.ResourceFor(input)
	if err != nil {
		return nil, err
	}
	return []schema.GroupVersionResource{r}, nil
}

func (m *typedClientMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c, err := m.mapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	scope := meta.RESTScopeRoot
	if c.namespaced {
		scope = meta.RESTScopeNamespace
	}
	return &meta.RESTMapping{Resource: c.gvr, GroupVersionKind: c.gvk, Scope: scope}, nil
}

func (m *typedClientMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	r, err := m.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	return []*meta.RESTMapping{r}, nil
}

func (m *typedClientMapper) ResourceSingularizer(resource string) (string, error) {
	return resource, nil
}
