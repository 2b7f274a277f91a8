package typedcache

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewClient is controller-runtime's client.NewClientFunc, for a manager
// whose cache is this one: with the client option
// Cache.EnableReadYourWritesConsistency, it gives controller-runtime's
// read-your-writes consistency on the informers' applied resource version
// instead of an event handler per kind,
//
//	ctrl.Options{
//		NewCache:  typedcache.New,
//		NewClient: typedcache.NewClient,
//		Client:    client.Options{Cache: &client.CacheOptions{EnableReadYourWritesConsistency: ptr.To(true)}},
//	}
//
// A read from the cache waits until the cache holds every write of the
// same kind and representation (typed, unstructured or metadata) this
// client made before it: the writes still in flight when the read started,
// the resource versions they returned, and the deletions it asked for.
// A Get waits for the writes of its object, a List for those of its kind.
// client.DisableReadYourWritesConsistency turns it off for one call, as in
// controller-runtime. Otherwise, and for any other cache, NewClient is
// client.New.
func NewClient(cfg *rest.Config, o client.Options) (client.Client, error) {
	if o.Cache == nil || o.Cache.Reader == nil || o.Cache.EnableReadYourWritesConsistency == nil || !*o.Cache.EnableReadYourWritesConsistency {
		return client.New(cfg, o)
	}
	c, ok := o.Cache.Reader.(*Cache)
	if !ok {
		return client.New(cfg, o)
	}
	inner := o
	co := *o.Cache
	co.EnableReadYourWritesConsistency = nil
	inner.Cache = &co
	cl, err := client.New(cfg, inner)
	if err != nil {
		return nil, err
	}
	cc := &consistentClient{Client: cl, cache: c, unstructured: co.Unstructured, uncached: map[schema.GroupVersionKind]bool{}, trackers: map[trackerKey]*writeTracker{}}
	for _, obj := range co.DisableFor {
		gvk, err := cl.GroupVersionKindFor(obj)
		if err != nil {
			return nil, err
		}
		cc.uncached[gvk] = true
	}
	return cc, nil
}

// consistentClient is a client whose reads from the cache wait for its
// own earlier writes.
type consistentClient struct {
	client.Client
	cache        *Cache
	unstructured bool                             // the client reads Unstructured from the cache
	uncached     map[schema.GroupVersionKind]bool // the kinds it never reads from the cache

	mu       sync.Mutex // guards trackers
	trackers map[trackerKey]*writeTracker
}

type trackerKey struct {
	gvk schema.GroupVersionKind
	rep representation
}

// target is what a call is about: its kind as the cache sees it, and
// whether the client reads that from the cache.
func (c *consistentClient) target(obj client.Object, list client.ObjectList) (request, bool, error) {
	var req request
	var err error
	if list != nil {
		req, err = c.cache.requestForList(list)
	} else {
		req, err = c.cache.requestFor(obj)
	}
	if err != nil {
		return req, false, err
	}
	cached := !c.uncached[req.gvk] && (req.rep != unstructuredRep || c.unstructured)
	return req, cached, nil
}

// tracker returns the write tracker of req's kind and representation; with
// create unset, nil if there is none.
func (c *consistentClient) tracker(req request, create bool) *writeTracker {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := trackerKey{req.gvk, req.rep}
	t := c.trackers[k]
	if t == nil && create {
		t = newWriteTracker()
		c.trackers[k] = t
	}
	return t
}

// write makes one write of obj, recording it for the reads that follow.
func (c *consistentClient) write(ctx context.Context, obj client.Object, disabled bool, do func() error) error {
	if disabled {
		return do()
	}
	req, cached, err := c.target(obj, nil)
	if err != nil || !cached {
		return do()
	}
	t := c.tracker(req, true)
	key := client.ObjectKeyFromObject(obj) // without a name yet, for a create with generateName
	done := t.begin(key)
	defer t.end(key, done)
	if err := do(); err != nil {
		return err
	}
	t.wrote(client.ObjectKeyFromObject(obj), obj.GetResourceVersion())
	return nil
}

func (c *consistentClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	o := (&client.CreateOptions{}).ApplyOptions(opts)
	return c.write(ctx, obj, o.DisableReadYourWritesConsistency, func() error { return c.Client.Create(ctx, obj, opts...) })
}

func (c *consistentClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	o := (&client.UpdateOptions{}).ApplyOptions(opts)
	return c.write(ctx, obj, o.DisableReadYourWritesConsistency, func() error { return c.Client.Update(ctx, obj, opts...) })
}

func (c *consistentClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	o := (&client.PatchOptions{}).ApplyOptions(opts)
	return c.write(ctx, obj, o.DisableReadYourWritesConsistency, func() error { return c.Client.Patch(ctx, obj, patch, opts...) })
}

func (c *consistentClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	o := (&client.ApplyOptions{}).ApplyOptions(opts)
	return c.apply(ctx, obj, o.DisableReadYourWritesConsistency, func() error { return c.Client.Apply(ctx, obj, opts...) })
}

// apply makes one apply of obj: an unstructured apply configuration is an
// object itself; a typed one's kind, name and returned resource version
// are read from its fields.
func (c *consistentClient) apply(ctx context.Context, obj runtime.ApplyConfiguration, disabled bool, do func() error) error {
	if o, ok := obj.(client.Object); ok {
		return c.write(ctx, o, disabled, do)
	}
	if disabled {
		return do()
	}
	target, err := c.applyTarget(obj)
	if err != nil {
		return err
	}
	err = c.write(ctx, target, false, func() error {
		if err := do(); err != nil {
			return err
		}
		target.SetResourceVersion(stringField(obj, "ResourceVersion"))
		return nil
	})
	return err
}

// applyTarget returns an object of the kind, namespace and name of a typed
// apply configuration.
func (c *consistentClient) applyTarget(obj runtime.ApplyConfiguration) (client.Object, error) {
	gv, err := schema.ParseGroupVersion(stringField(obj, "APIVersion"))
	if err != nil {
		return nil, fmt.Errorf("typedcache: apply configuration %T: %w", obj, err)
	}
	raw, err := c.Scheme().New(gv.WithKind(stringField(obj, "Kind")))
	if err != nil {
		return nil, fmt.Errorf("typedcache: apply configuration %T: %w", obj, err)
	}
	target, ok := raw.(client.Object)
	if !ok {
		return nil, fmt.Errorf("typedcache: apply configuration %T: %T is not a client.Object", obj, raw)
	}
	target.SetName(stringField(obj, "Name"))
	target.SetNamespace(stringField(obj, "Namespace"))
	return target, nil
}

// stringField returns the *string field name of a struct (or pointer to
// one), promoted fields included, or "".
func stringField(obj any, name string) string {
	v := reflect.Indirect(reflect.ValueOf(obj))
	if v.Kind() != reflect.Struct {
		return ""
	}
	f := v.FieldByName(name)
	if !f.IsValid() || f.Kind() != reflect.Pointer || f.IsNil() || f.Elem().Kind() != reflect.String {
		return ""
	}
	return f.Elem().String()
}

func (c *consistentClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	o := (&client.DeleteOptions{}).ApplyOptions(opts)
	if o.DisableReadYourWritesConsistency {
		return c.Client.Delete(ctx, obj, opts...)
	}
	req, cached, err := c.target(obj, nil)
	if err != nil || !cached {
		return c.Client.Delete(ctx, obj, opts...)
	}
	key := client.ObjectKeyFromObject(obj)
	uid := obj.GetUID()
	if o.Preconditions != nil && o.Preconditions.UID != nil {
		uid = *o.Preconditions.UID
	}
	if uid == "" {
		// The object as this client last wrote or read it.
		current := obj.DeepCopyObject().(client.Object)
		if err := c.Get(ctx, key, current); err == nil {
			uid = current.GetUID()
		}
	}
	t := c.tracker(req, true)
	done := t.begin(key)
	defer t.end(key, done)
	if uid != "" {
		// Before the call: its event may reach the cache before it returns.
		t.deleting(key, uid)
	}
	if err := c.Client.Delete(ctx, obj, opts...); err != nil {
		if uid != "" {
			t.forgetDelete(key, uid)
		}
		return err
	}
	return nil
}

// DeleteAllOf is refused, as by controller-runtime's consistent client: the
// objects it deletes are not known, so reads could not wait for them. Use
// List and Delete, or client.DisableReadYourWritesConsistency.
func (c *consistentClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	o := (&client.DeleteAllOfOptions{}).ApplyOptions(opts)
	if o.DeleteOptions.DisableReadYourWritesConsistency || o.ListOptions.DisableReadYourWritesConsistency {
		return c.Client.DeleteAllOf(ctx, obj, opts...)
	}
	return errors.New("typedcache: DeleteAllOf is not supported with read-your-writes consistency: use List and Delete, or client.DisableReadYourWritesConsistency")
}

func (c *consistentClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	o := (&client.GetOptions{}).ApplyOptions(opts)
	if !o.DisableReadYourWritesConsistency {
		if err := c.waitFor(ctx, obj, nil, &key, key.Namespace); err != nil {
			return err
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *consistentClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := (&client.ListOptions{}).ApplyOptions(opts)
	if !o.DisableReadYourWritesConsistency {
		if err := c.waitFor(ctx, nil, list, nil, o.Namespace); err != nil {
			return err
		}
	}
	return c.Client.List(ctx, list, opts...)
}

// waitFor waits until the cache holds this client's writes that a read of
// obj's key (or of list's kind in namespace ns, with key nil) must see.
func (c *consistentClient) waitFor(ctx context.Context, obj client.Object, list client.ObjectList, key *client.ObjectKey, ns string) error {
	req, cached, err := c.target(obj, list)
	if err != nil || !cached {
		return nil // the read goes to the server, or fails on its own
	}
	t := c.tracker(req, false)
	if t == nil {
		return nil // no write of the kind yet
	}
	for _, done := range t.inFlight(key) {
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("typedcache: wait for writes in flight: %w", context.Cause(ctx))
		}
	}
	rvs, deletes := t.pending(key, ns)
	if len(rvs) > 0 {
		if err := c.cache.waitApplied(ctx, req, rvs); err != nil {
			return fmt.Errorf("typedcache: wait for the cache to catch up: %w", err)
		}
		t.seen(rvs)
	}
	for k, uids := range deletes {
		if err := c.cache.waitGone(ctx, req, k, uids); err != nil {
			return fmt.Errorf("typedcache: wait for the cache to catch up: %w", err)
		}
		t.deleted(k, uids)
	}
	return nil
}

func (c *consistentClient) Status() client.SubResourceWriter { return c.SubResource("status") }

func (c *consistentClient) SubResource(sub string) client.SubResourceClient {
	return &consistentSubResource{SubResourceClient: c.Client.SubResource(sub), c: c}
}

// consistentSubResource records the writes of a subresource client, but
// for Create, as controller-runtime does: its results (an eviction, a
// binding, a token) are not the object.
type consistentSubResource struct {
	client.SubResourceClient
	c *consistentClient
}

func (s *consistentSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	o := (&client.SubResourceUpdateOptions{}).ApplyOptions(opts)
	return s.c.write(ctx, obj, o.DisableReadYourWritesConsistency, func() error { return s.SubResourceClient.Update(ctx, obj, opts...) })
}

func (s *consistentSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	o := (&client.SubResourcePatchOptions{}).ApplyOptions(opts)
	return s.c.write(ctx, obj, o.DisableReadYourWritesConsistency, func() error { return s.SubResourceClient.Patch(ctx, obj, patch, opts...) })
}

func (s *consistentSubResource) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	o := (&client.SubResourceApplyOptions{}).ApplyOpts(opts)
	return s.c.apply(ctx, obj, o.DisableReadYourWritesConsistency, func() error { return s.SubResourceClient.Apply(ctx, obj, opts...) })
}
