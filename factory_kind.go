package informer

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/typedkube/informer/wire"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// what is what a For* hands to step 1 of the pipeline: the Go type whose
// kind the informer lists, or the resource, and how its name is flavored.
type what struct {
	// typ is the Go type an informer of For or ForProjection is shared
	// by: T, or PP; nil for ForUnstructured and ForMetadata, whose
	// informers are shared by name.
	typ reflect.Type
	// api is the Go type whose kind is listed: T, or TP; nil for
	// ForUnstructured and ForMetadata, which name gvr.
	api    reflect.Type
	gvr    schema.GroupVersionResource
	flavor string // "" for For; "PodSlim", "unstructured", "metadata"
}

// apiResource is step 1's answer: the informer's name, and the resource it
// lists and watches.
type apiResource struct {
	name    string // "v1/pods", "v1/pods (PodSlim)", "v1/pods (metadata)"
	mapping *meta.RESTMapping
	list    reflect.Type // the Go type of api's list kind; nil without api
}

// resolve maps w to its resource: the kind of w.api in the factory's
// scheme, or the kind of w.gvr, and its REST mapping.
func (w what) resolve(ctx context.Context, f *Factory) (*apiResource, error) {
	r := new(apiResource)
	var gvk schema.GroupVersionKind
	about := resourceName(w.gvr)
	if w.api != nil {
		var err error
		if gvk, r.list, err = kindOf(f.opts.Scheme, w.api); err != nil {
			return nil, err
		}
		about = gvk.GroupVersion().String() + "/" + gvk.Kind
	}
	err := f.discover(ctx, about, func(ctx context.Context) (err error) {
		if w.api == nil {
			if gvk, err = f.mapper.KindForWithContext(ctx, w.gvr); err != nil {
				return err
			}
		}
		r.mapping, err = f.mapper.RESTMappingWithContext(ctx, gvk.GroupKind(), gvk.Version)
		return err
	})
	if err != nil {
		return nil, err
	}
	r.name = flavoredName(r.mapping.Resource, w.flavor) // canonical, if gvr named it otherwise
	return r, nil
}

// flavoredName names an informer of gvr: "v1/pods", "apps/v1/deployments",
// or with a flavor "v1/pods (metadata)".
func flavoredName(gvr schema.GroupVersionResource, flavor string) string {
	if flavor == "" {
		return resourceName(gvr)
	}
	return resourceName(gvr) + " (" + flavor + ")"
}

// resourceName names gvr: "v1/pods", "apps/v1/deployments".
func resourceName(gvr schema.GroupVersionResource) string {
	return gvr.GroupVersion().String() + "/" + gvr.Resource
}

// kindOf returns the kind of typ in scheme, and the Go type of its list
// kind (Kind+"List").
func kindOf(scheme *runtime.Scheme, typ reflect.Type) (schema.GroupVersionKind, reflect.Type, error) {
	var gvk schema.GroupVersionKind
	switch typ {
	case reflect.TypeFor[*unstructured.Unstructured]():
		return gvk, nil, fmt.Errorf("%w: %v: use ForUnstructured", ErrNotRegistered, typ)
	case reflect.TypeFor[*metav1.PartialObjectMetadata]():
		return gvk, nil, fmt.Errorf("%w: %v: use ForMetadata", ErrNotRegistered, typ)
	}
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return gvk, nil, fmt.Errorf("%w: %v is not a pointer to a struct", ErrNotRegistered, typ)
	}
	obj := reflect.New(typ.Elem()).Interface().(runtime.Object)
	gvks, unversioned, err := scheme.ObjectKinds(obj)
	switch {
	case err != nil && isProjection(typ):
		return gvk, nil, fmt.Errorf("%w: %v is a projection (it embeds wire.Meta): use ForProjection[%s, T], T being the API type it projects, such as corev1.Pod",
			ErrNotRegistered, typ, typ.Elem().Name())
	case err != nil:
		return gvk, nil, fmt.Errorf("%w: %v: %w", ErrNotRegistered, typ, err)
	case unversioned:
		return gvk, nil, fmt.Errorf("%w: %v is unversioned, not a resource", ErrNotRegistered, typ)
	case len(gvks) != 1:
		return gvk, nil, fmt.Errorf("%w: %v has %d kinds %v, want one", ErrNotRegistered, typ, len(gvks), gvks)
	}
	gvk = gvks[0]
	listKind := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	list, err := scheme.New(listKind)
	if err != nil {
		return gvk, nil, fmt.Errorf("%w: %v has no list kind %s: %w", ErrNotRegistered, typ, listKind.Kind, err)
	}
	return gvk, reflect.TypeOf(list), nil
}

// isProjection reports whether typ, a pointer to a struct, is a
// projection: whether the struct embeds a wire.Meta.
func isProjection(typ reflect.Type) bool {
	for i := range typ.Elem().NumField() {
		f := typ.Elem().Field(i)
		if f.Anonymous && f.Type.PkgPath() == reflect.TypeFor[wire.Options]().PkgPath() && strings.HasPrefix(f.Type.Name(), "Meta[") {
			return true
		}
	}
	return false
}

// discover runs lookup, a RESTMapper query about what, and, if the mapper
// knew no match, resets the mapper, if it can be, and runs lookup again.
// It gives up when ctx or the factory's context ends.
func (f *Factory) discover(ctx context.Context, what string, lookup func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(f.ctx, func() { cancel(ErrFactoryStopped) })
	defer stop()
	err := lookup(ctx)
	if meta.IsNoMatchError(err) && ctx.Err() == nil {
		if f.resetMapper != nil {
			f.opts.Logger.V(4).Info("Discovering again: no match", "resource", what)
			f.resetMapper(ctx)
			err = lookup(ctx)
		}
	}
	switch {
	case err == nil:
		return nil
	case f.ctx.Err() != nil:
		return fmt.Errorf("%w: shut down during discovery of %s", ErrFactoryStopped, what)
	case ctx.Err() != nil:
		return fmt.Errorf("informer: discover %s: %w", what, context.Cause(ctx))
	case meta.IsNoMatchError(err):
		return fmt.Errorf("%w: %s: %w", ErrUnknownResource, what, err)
	}
	return fmt.Errorf("informer: discover %s: %w", what, err)
}
