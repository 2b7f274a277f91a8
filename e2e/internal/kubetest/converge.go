package kubetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/typedkube/informer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

// State is what a cache or a LIST holds: the resource version of each object, by key
// ("namespace/name", or "name" for a cluster-scoped object).
type State map[string]string

// StateOf returns the state of objs.
func StateOf[T informer.Object](objs []T) State {
	s := make(State, len(objs))
	for _, obj := range objs {
		s[key(obj)] = obj.GetResourceVersion()
	}
	return s
}

// CacheState returns the state of an informer's cache.
func CacheState[T informer.Object](inf *informer.SharedIndexInformer[T]) State {
	s := make(State)
	for k, obj := range inf.GetIndexer().All() {
		s[k] = obj.GetResourceVersion()
	}
	return s
}

func key(obj metav1.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}

// Diff is how a cache differs from the server.
type Diff struct {
	Missing []string // on the server, not in the cache (lost)
	Ghosts  []string // in the cache, not on the server
	Stale   []string // in both, at different resource versions ("key cache=rv server=rv")
}

// Empty reports whether there is no difference.
func (d Diff) Empty() bool { return len(d.Missing)+len(d.Ghosts)+len(d.Stale) == 0 }

func (d Diff) String() string {
	if d.Empty() {
		return "no difference"
	}
	var parts []string
	add := func(what string, keys []string) {
		if len(keys) == 0 {
			return
		}
		shown := keys[:min(len(keys), 5)]
		more := ""
		if len(keys) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(keys)-len(shown))
		}
		parts = append(parts, fmt.Sprintf("%d %s (%s%s)", len(keys), what, strings.Join(shown, ", "), more))
	}
	add("missing", d.Missing)
	add("ghosts", d.Ghosts)
	add("stale", d.Stale)
	return strings.Join(parts, "; ")
}

// Compare returns how cache differs from server.
func Compare(cache, server State) Diff {
	var d Diff
	for _, k := range slices.Sorted(maps.Keys(server)) {
		switch rv, ok := cache[k]; {
		case !ok:
			d.Missing = append(d.Missing, k)
		case rv != server[k]:
			d.Stale = append(d.Stale, fmt.Sprintf("%s cache=%s server=%s", k, rv, server[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cache)) {
		if _, ok := server[k]; !ok {
			d.Ghosts = append(d.Ghosts, k)
		}
	}
	return d
}

// ListState lists resource gvr in namespace ("" for all) from the server, consistently
// (resource version ""), in pages of 500, through the metadata client: a fresh LIST that shares
// no code with the informer under test.
func ListState(ctx context.Context, md metadata.Interface, gvr schema.GroupVersionResource, namespace string) (State, error) {
	s := make(State)
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := md.Resource(gvr).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("kubetest: list %s in %q: %w", gvr.Resource, namespace, err)
		}
		for i := range l.Items {
			s[key(&l.Items[i])] = l.Items[i].ResourceVersion
		}
		if l.Continue == "" {
			return s, nil
		}
		opts.Continue = l.Continue
	}
}

// ErrNotConverged is returned by WaitConverged when the deadline passes first.
var ErrNotConverged = errors.New("kubetest: cache did not converge")

// Cache is a state to compare with the server: an informer's cache, or the state its handler
// rebuilt, of one resource.
type Cache struct {
	Name  string
	GVR   schema.GroupVersionResource
	State func() State
}

// ServerLister lists the state of a resource from the server.
type ServerLister func(ctx context.Context, gvr schema.GroupVersionResource) (State, error)

// MetadataLister returns a ServerLister that lists namespace ("" for all) with ListState.
func MetadataLister(md metadata.Interface, namespace string) ServerLister {
	return func(ctx context.Context, gvr schema.GroupVersionResource) (State, error) {
		return ListState(ctx, md, gvr, namespace)
	}
}

// WaitConverged polls until every one of caches equals what list returns for its resource, or
// until timeout, and returns how long it took. Each round lists each resource once and compares
// every cache of it to that LIST. LIST errors (the server restarting) are retried until the
// deadline; the last differences or error are in the returned error.
func WaitConverged(ctx context.Context, timeout time.Duration, list ServerLister, caches ...Cache) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = compareAll(ctx, list, caches); last == nil {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("%w within %v: %w", ErrNotConverged, timeout, last)
		case <-tick.C:
		}
	}
}

// compareAll lists each resource of caches once and returns how the caches differ, nil if they
// do not.
func compareAll(ctx context.Context, list ServerLister, caches []Cache) error {
	listed := make(map[schema.GroupVersionResource]State)
	var errs []error
	for _, c := range caches {
		want, ok := listed[c.GVR]
		if !ok {
			var err error
			if want, err = list(ctx, c.GVR); err != nil {
				return err
			}
			listed[c.GVR] = want
		}
		if d := Compare(c.State(), want); !d.Empty() {
			errs = append(errs, fmt.Errorf("%s: %v (server has %d %s)", c.Name, d, len(want), c.GVR.Resource))
		}
	}
	return errors.Join(errs...)
}
