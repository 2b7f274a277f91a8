package typedcache

import (
	"context"
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// router is the scopes that serve one set of kinds (the cache's defaults,
// or one ByObject entry), and which of them serves what: one scope serves
// everything unless namespaces are configured, as controller-runtime's
// multi-namespace cache does with a cache per namespace.
type router struct {
	scopes  []*scope
	byNS    map[string]*scope // the scope of each namespace named in the options
	rest    *scope            // the scope of the other namespaces; nil if none
	cluster *scope            // the scope of cluster-scoped kinds; nil if none
	// single is the one scope serving every kind and namespace, if so: then
	// no read needs to know whether a kind is namespaced.
	single *scope
}

// newRouter returns the router of spec, over the scopes made of its specs.
func newRouter(spec *routerSpec, scopes map[*scopeSpec]*scope) *router {
	r := &router{byNS: make(map[string]*scope, len(spec.byNS))}
	for _, s := range spec.scopes {
		r.scopes = append(r.scopes, scopes[s])
	}
	for ns, s := range spec.byNS {
		r.byNS[ns] = scopes[s]
	}
	if spec.rest != nil {
		r.rest = scopes[spec.rest]
	}
	if spec.cluster != nil {
		r.cluster = scopes[spec.cluster]
	}
	if len(r.scopes) == 1 && r.rest == r.scopes[0] && r.cluster == r.rest {
		r.single = r.rest
	}
	return r
}

// forNamespace returns the scope of namespace ns of a kind: the cluster
// scope for a cluster-scoped kind, then the namespace's own scope, then the
// scope of the other namespaces. op names the read for the error.
func (r *router) forNamespace(namespaced bool, ns, op string, what any) (*scope, error) {
	if r.single != nil {
		return r.single, nil
	}
	if !namespaced {
		if r.cluster == nil {
			return nil, fmt.Errorf("typedcache: unable to %s %v: the cache caches no cluster-scoped kind here", op, what)
		}
		return r.cluster, nil
	}
	if s := r.byNS[ns]; s != nil {
		return s, nil
	}
	if r.rest != nil {
		return r.rest, nil
	}
	// controller-runtime's words, for those who look for them.
	return nil, fmt.Errorf("unable to %s: %v because of unknown namespace for the cache", op, what)
}

// serving returns the scopes that cache a kind: every scope of namespaces
// for a namespaced one, the cluster scope for a cluster-scoped one.
func (r *router) serving(namespaced bool) []*scope {
	if r.single != nil {
		return r.scopes
	}
	if !namespaced {
		if r.cluster == nil {
			return nil
		}
		return []*scope{r.cluster}
	}
	out := make([]*scope, 0, len(r.scopes))
	for _, s := range r.scopes {
		if s == r.cluster && s != r.rest && !r.servesNamespaces(s) {
			continue // a scope for cluster-scoped kinds only
		}
		out = append(out, s)
	}
	return out
}

// caches reports whether some scope of r caches namespace ns of a
// namespaced kind.
func (r *router) caches(ns string) bool {
	return r.single != nil || r.rest != nil || r.byNS[ns] != nil
}

// servesNamespaces reports whether some namespace is routed to s.
func (r *router) servesNamespaces(s *scope) bool {
	for _, n := range r.byNS {
		if n == s {
			return true
		}
	}
	return false
}

// listAcross lists a namespaced kind in every scope of r into out, as one
// list: each scope's entry (got by entryOf) fills a copy of out, and the
// items are joined, counting o.Limit across them.
func (r *router) listAcross(ctx context.Context, out client.ObjectList, o *client.ListOptions, entryOf func(context.Context, *scope) (entry, error), unsafe func(*scope) bool) error {
	var all []runtime.Object
	limit := *o
	for _, s := range r.serving(true) {
		e, err := entryOf(ctx, s)
		if err != nil {
			return err
		}
		part := out.DeepCopyObject().(client.ObjectList)
		if err := e.list(part, &limit, unsafe(s)); err != nil {
			return err
		}
		items, err := apimeta.ExtractList(part)
		if err != nil {
			return err
		}
		all = append(all, items...)
		if o.Limit > 0 {
			if limit.Limit -= int64(len(items)); limit.Limit <= 0 {
				break
			}
		}
	}
	if err := apimeta.SetList(out, all); err != nil {
		return err
	}
	out.SetContinue("continue-not-supported")
	return nil
}
