package typedcache

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/typedkube/informer"
)

// entry is the informer of one kind in one scope, and the reads it serves.
type entry interface {
	// get copies the cached object of key into out; unsafe hands out the
	// cached object's fields instead of a deep copy.
	get(key client.ObjectKey, out client.Object, unsafe bool) error
	// list fills out with the cached objects o selects.
	list(out client.ObjectList, o *client.ListOptions, unsafe bool) error
	// informer returns the informer as controller-runtime's.
	informer() cache.Informer
	// indexField adds the index List answers field selectors on field from.
	indexField(field string, extract client.IndexerFunc) error
	// waitForSync returns once the informer has synced, or as soon as it
	// meets a sync failure, or when ctx ends.
	waitForSync(ctx context.Context) error
	// synced returns a channel closed once the informer has synced.
	synced() <-chan struct{}
	// waitForResourceVersion returns once the cache has applied every
	// change up to rv.
	waitForResourceVersion(ctx context.Context, rv string) error
	// applied returns the resource version the cache has applied.
	applied() (rv string, ok bool)
	// holds reports whether the cache has the object of key with uid, not
	// being deleted.
	holds(key client.ObjectKey, uid types.UID) bool
	// remove stops the informer and forgets it.
	remove(ctx context.Context) error
}

// converter copies the objects an informer caches (S) into those readers
// ask for (O): the same type, or a projection into its full type.
type converter[S informer.Object, O client.Object] struct {
	deep    func(src S, dst O) // a deep copy of src into dst
	shallow func(src S, dst O) // src into dst, sharing what src references
	view    func(src S) O      // src as an O, sharing what it can: for handlers and index functions
}

// sameConverter is the converter of a type to itself.
func sameConverter[T client.Object]() converter[T, T] {
	c := converter[T, T]{
		view:    func(t T) T { return t },
		shallow: func(src, dst T) { reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem()) },
		deep: func(src, dst T) {
			reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src.DeepCopyObject()).Elem())
		},
	}
	if _, ok := any(*new(T)).(interface{ DeepCopyInto(T) }); ok {
		// The generated DeepCopyInto copies into the reader's object, with
		// no object of its own in between.
		c.deep = func(src, dst T) { any(src).(interface{ DeepCopyInto(T) }).DeepCopyInto(dst) }
	}
	return c
}

// typedEntry is an entry over one of our informers, caching S and serving
// O.
type typedEntry[S informer.Object, O client.Object] struct {
	inf        *informer.SharedIndexInformer[S]
	gvk        schema.GroupVersionKind
	namespaced bool
	conv       converter[S, O]
	// elem is the struct type O points to, that readers' objects and list
	// items have.
	elem    reflect.Type
	adapter cache.Informer
	stop    func(context.Context) error
}

// newTypedEntry returns the entry of inf; elem is the struct type of the
// objects readers pass (k.obj's).
func newTypedEntry[S informer.Object, O client.Object](inf *informer.SharedIndexInformer[S], k kind, conv converter[S, O], adapter cache.Informer, stop func(context.Context) error) *typedEntry[S, O] {
	return &typedEntry[S, O]{
		inf: inf, gvk: k.gvk, namespaced: k.namespaced, conv: conv,
		elem: reflect.TypeOf(k.obj).Elem(), adapter: adapter, stop: stop,
	}
}

func (e *typedEntry[S, O]) informer() cache.Informer { return e.adapter }

func (e *typedEntry[S, O]) waitForSync(ctx context.Context) error { return e.inf.WaitForSync(ctx) }

func (e *typedEntry[S, O]) synced() <-chan struct{} { return e.inf.Synced() }

func (e *typedEntry[S, O]) waitForResourceVersion(ctx context.Context, rv string) error {
	return e.inf.WaitForResourceVersion(ctx, rv)
}

func (e *typedEntry[S, O]) applied() (string, bool) { return e.inf.AppliedResourceVersion() }

func (e *typedEntry[S, O]) remove(ctx context.Context) error { return e.stop(ctx) }

// storeKey is the key the cache keeps the object of key under.
func (e *typedEntry[S, O]) storeKey(key client.ObjectKey) string {
	if !e.namespaced || key.Namespace == "" {
		return key.Name
	}
	return key.Namespace + "/" + key.Name
}

func (e *typedEntry[S, O]) holds(key client.ObjectKey, uid types.UID) bool {
	obj, ok := e.inf.GetIndexer().GetByKey(e.storeKey(key))
	return ok && obj.GetUID() == uid && !deleting(obj)
}

// target returns out as an O, if it is of the Go type the entry serves.
func (e *typedEntry[S, O]) target(out client.Object) (O, error) {
	dst, ok := out.(O)
	if !ok || reflect.TypeOf(out).Elem() != e.elem {
		return dst, fmt.Errorf("typedcache: the cache holds *%v, but %T was asked for", e.elem, out)
	}
	return dst, nil
}

func (e *typedEntry[S, O]) get(key client.ObjectKey, out client.Object, unsafe bool) error {
	// A compact store's object decoded for this read is the reader's own:
	// it needs no deep copy (see informer.Store.GetByKeyOwned). A read
	// without a deep copy gets the object the store keeps decoded instead
	// (GetByKey), as controller-runtime's cache gives its cached object:
	// such reads of one object share its maps, and see what an earlier
	// one wrote, as long as the store's codec holds it decoded.
	var src S
	var owned, ok bool
	if unsafe {
		src, ok = e.inf.GetIndexer().GetByKey(e.storeKey(key))
	} else {
		src, owned, ok = e.inf.GetIndexer().GetByKeyOwned(e.storeKey(key))
	}
	if !ok {
		// As controller-runtime's: the kind where the resource would be.
		return apierrors.NewNotFound(schema.GroupResource{Group: e.gvk.Group, Resource: e.gvk.Kind}, key.Name)
	}
	dst, err := e.target(out)
	if err != nil {
		return err
	}
	if unsafe {
		e.conv.shallow(src, dst)
		return nil
	}
	if owned {
		e.conv.shallow(src, dst)
	} else {
		e.conv.deep(src, dst)
	}
	dst.GetObjectKind().SetGroupVersionKind(e.gvk)
	return nil
}

func (e *typedEntry[S, O]) list(out client.ObjectList, o *client.ListOptions, unsafe bool) error {
	objs, err := e.collect(o)
	if err != nil {
		return err
	}
	ptr, err := apimeta.GetItemsPtr(out)
	if err != nil {
		return err
	}
	items := reflect.ValueOf(ptr).Elem()
	// Items is []T, or []*T as some CRD list types declare it.
	pointers := items.Kind() == reflect.Slice && items.Type().Elem().Kind() == reflect.Pointer && items.Type().Elem().Elem() == e.elem
	if items.Kind() != reflect.Slice || (items.Type().Elem() != e.elem && !pointers) {
		return fmt.Errorf("typedcache: the cache holds *%v, but %T was asked for", e.elem, out)
	}
	// The items are filled in place: one allocation for all of them, and
	// one per item for []*T.
	s := reflect.MakeSlice(items.Type(), len(objs), len(objs))
	for i, src := range objs {
		var dst O
		switch {
		case pointers && unsafe:
			// As controller-runtime: the cached object itself.
			s.Index(i).Set(reflect.ValueOf(e.conv.view(src)))
			continue
		case pointers:
			item := reflect.New(e.elem)
			s.Index(i).Set(item)
			dst = item.Interface().(O)
		default:
			dst = s.Index(i).Addr().Interface().(O)
		}
		if unsafe {
			e.conv.shallow(src, dst)
			continue
		}
		e.conv.deep(src, dst)
		dst.GetObjectKind().SetGroupVersionKind(e.gvk)
	}
	items.Set(s)
	// As controller-runtime's cache: no continuation, ever.
	out.SetContinue("continue-not-supported")
	return nil
}

// collect returns the cached objects o selects, at most o.Limit if set:
// through the field indexes for a field selector, through the label index
// otherwise.
func (e *typedEntry[S, O]) collect(o *client.ListOptions) ([]S, error) {
	sel := o.LabelSelector
	if sel == nil {
		sel = labels.Everything()
	}
	var out []S
	full := func() bool { return o.Limit > 0 && int64(len(out)) >= o.Limit }
	if o.FieldSelector != nil {
		return e.collectByFields(o, sel)
	}
	l := e.inf.Lister()
	seq := l.Select(sel)
	if o.Namespace != "" {
		seq = l.ByNamespace(o.Namespace).Select(sel)
	}
	for obj := range seq {
		if full() {
			break
		}
		out = append(out, obj)
	}
	return out, nil
}

// collectByFields answers a field selector from the indexes IndexField
// added: the first requirement's index gives the candidates, the others'
// index functions and the label selector test them.
func (e *typedEntry[S, O]) collectByFields(o *client.ListOptions, sel labels.Selector) ([]S, error) {
	reqs := o.FieldSelector.Requirements()
	if !exactMatch(reqs) {
		return nil, fmt.Errorf("typedcache: field selector %q: %w", o.FieldSelector, errNonExactField)
	}
	indexers := e.inf.GetIndexer().GetIndexers()
	tests := make([]informer.IndexFunc[S], len(reqs))
	for i, r := range reqs {
		f, ok := indexers[fieldIndexName(r.Field)]
		if !ok {
			return nil, fmt.Errorf("typedcache: field selector %q: no index of field %q: add one with IndexField: %w", o.FieldSelector, r.Field, informer.ErrNoSuchIndex)
		}
		tests[i] = f
	}
	var out []S
	for _, obj := range e.inf.GetIndexer().ByIndexSeq(fieldIndexName(reqs[0].Field), namespacedKey(o.Namespace, reqs[0].Value)) {
		if o.Limit > 0 && int64(len(out)) >= o.Limit {
			break
		}
		ok := true
		for i := 1; i < len(reqs) && ok; i++ {
			vals, err := tests[i](obj)
			if err != nil {
				return nil, err
			}
			ok = slices.Contains(vals, namespacedKey(o.Namespace, reqs[i].Value))
		}
		if ok && sel.Matches(labels.Set(obj.GetLabels())) {
			out = append(out, obj)
		}
	}
	return out, nil
}

func (e *typedEntry[S, O]) indexField(field string, extract client.IndexerFunc) error {
	return e.inf.AddIndexers(informer.Indexers[S]{fieldIndexName(field): func(obj S) ([]string, error) {
		return fieldValues(obj.GetNamespace(), extract(e.conv.view(obj))), nil
	}})
}
