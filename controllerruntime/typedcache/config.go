package typedcache

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// ErrUnsupported reports an option of controller-runtime's cache.Options
// that this cache cannot honour. It is returned wrapped, naming the option.
var ErrUnsupported = errors.New("typedcache: option not supported")

// defaultSyncPeriod is controller-runtime's default SyncPeriod.
const defaultSyncPeriod = 10 * time.Hour

// config is what the informers of one scope are made with: a cache.Config
// with every default applied.
type config struct {
	label     labels.Selector // nil: none
	field     fields.Selector // nil: none
	transform toolscache.TransformFunc
	// dropManagedFields is set when the transform was controller-runtime's
	// TransformStripManagedFields, which the informers do while decoding
	// instead (see stripsManagedFields); transform is then nil.
	dropManagedFields bool
	unsafe            bool // UnsafeDisableDeepCopy: reads hand out the cached objects
	syncPeriod        time.Duration
}

// scopeSpec describes one scope before its factory is made.
type scopeSpec struct {
	namespace string // the namespace it caches; "": every one
	// exclude are the namespaces other scopes of its router cache, left
	// out of this one (with namespace ""), as controller-runtime does for
	// the AllNamespaces entry of a namespace map.
	exclude []string
	cfg     config
}

// routerSpec describes the scopes that serve one set of kinds: the
// cache's defaults, or one ByObject entry.
type routerSpec struct {
	scopes  []*scopeSpec
	byNS    map[string]*scopeSpec // the scope of each namespace named in the map
	rest    *scopeSpec            // the scope of the other namespaces; nil if none
	cluster *scopeSpec            // the scope of cluster-scoped kinds; nil if none
}

func (r *routerSpec) add(s *scopeSpec) *scopeSpec {
	r.scopes = append(r.scopes, s)
	return s
}

// isZero reports whether c sets nothing, so that everything in it comes
// from the levels above.
func isZero(c cache.Config) bool {
	return c.LabelSelector == nil && c.FieldSelector == nil && c.Transform == nil &&
		c.UnsafeDisableDeepCopy == nil && c.EnableWatchBookmarks == nil && c.SyncPeriod == nil
}

// merge takes each setting from the first level that sets it, from the
// most specific.
func merge(levels ...cache.Config) cache.Config {
	var c cache.Config
	for _, l := range levels {
		if c.LabelSelector == nil {
			c.LabelSelector = l.LabelSelector
		}
		if c.FieldSelector == nil {
			c.FieldSelector = l.FieldSelector
		}
		if c.Transform == nil {
			c.Transform = l.Transform
		}
		if c.UnsafeDisableDeepCopy == nil {
			c.UnsafeDisableDeepCopy = l.UnsafeDisableDeepCopy
		}
		if c.EnableWatchBookmarks == nil {
			c.EnableWatchBookmarks = l.EnableWatchBookmarks
		}
		if c.SyncPeriod == nil {
			c.SyncPeriod = l.SyncPeriod
		}
	}
	return c
}

// resolve merges levels and applies controller-runtime's defaults to what
// none sets. A setting this cache cannot honour is an error naming where.
func resolve(where string, levels ...cache.Config) (config, error) {
	c := merge(levels...)
	out := config{label: c.LabelSelector, field: c.FieldSelector, transform: c.Transform, syncPeriod: defaultSyncPeriod}
	if stripsManagedFields(out.transform) {
		out.transform, out.dropManagedFields = nil, true
	}
	if c.UnsafeDisableDeepCopy != nil {
		out.unsafe = *c.UnsafeDisableDeepCopy
	}
	if c.EnableWatchBookmarks != nil && !*c.EnableWatchBookmarks {
		return out, fmt.Errorf("%w: EnableWatchBookmarks false (%s): the informers always ask for bookmarks", ErrUnsupported, where)
	}
	if c.SyncPeriod != nil {
		if *c.SyncPeriod < 0 {
			return out, fmt.Errorf("typedcache: negative SyncPeriod %v (%s)", *c.SyncPeriod, where)
		}
		out.syncPeriod = *c.SyncPeriod
	}
	return out, nil
}

// namespaceRouter lays out the scopes of a namespace map (DefaultNamespaces,
// or a ByObject's Namespaces). As in controller-runtime, the settings of a
// namespace come from its entry, then typeLevel (a ByObject's own), then
// outer(namespace) (its DefaultNamespaces entry), then defaults (the
// cache's Default* options). Each namespace gets a scope of its own. The
// AllNamespaces entry ("") makes a scope of every namespace the map does not
// configure otherwise, which the namespaces that set nothing join. With cluster set, the router also serves
// cluster-scoped kinds, with the settings of typeLevel and defaults.
func namespaceRouter(where string, namespaces map[string]cache.Config, typeLevel cache.Config, outer func(string) cache.Config, defaults cache.Config, cluster bool) (*routerSpec, error) {
	baseCfg, err := resolve(where, typeLevel, defaults)
	if err != nil {
		return nil, err
	}
	r := &routerSpec{byNS: make(map[string]*scopeSpec)}
	var plain, custom []string
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		if ns == cache.AllNamespaces {
			continue
		}
		if isZero(namespaces[ns]) && isZero(outer(ns)) {
			plain = append(plain, ns)
			continue
		}
		custom = append(custom, ns)
		cfg, err := resolve(fmt.Sprintf("%s, namespace %q", where, ns), namespaces[ns], typeLevel, outer(ns), defaults)
		if err != nil {
			return nil, err
		}
		r.byNS[ns] = r.add(&scopeSpec{namespace: ns, cfg: cfg})
	}
	var plainScope *scopeSpec
	if all, ok := namespaces[cache.AllNamespaces]; ok {
		if isZero(all) && isZero(outer(cache.AllNamespaces)) {
			// The plain namespaces are among the others: one scope.
			plainScope = r.add(&scopeSpec{exclude: custom, cfg: baseCfg})
			r.rest = plainScope
		} else {
			cfg, err := resolve(where+", AllNamespaces", all, typeLevel, outer(cache.AllNamespaces), defaults)
			if err != nil {
				return nil, err
			}
			r.rest = r.add(&scopeSpec{exclude: slices.Sorted(slices.Values(append(slices.Clone(plain), custom...))), cfg: cfg})
		}
	}
	if plainScope == nil {
		// A scope, and so an informer per kind, for each namespace, even
		// with the same settings: the server orders the events of one
		// watch only, so one informer over several namespaces' watches
		// has no resource version that says what it holds of each, and
		// read-your-writes in one namespace could return before its watch
		// has caught up.
		for _, ns := range plain {
			r.byNS[ns] = r.add(&scopeSpec{namespace: ns, cfg: baseCfg})
			if plainScope == nil {
				plainScope = r.byNS[ns]
			}
		}
	}
	if cluster {
		// A scope with the type's settings serves cluster-scoped kinds as
		// they are: a factory ignores its namespaces for those, and a
		// scope excludes namespaces from namespaced kinds only.
		if r.cluster = plainScope; r.cluster == nil {
			r.cluster = r.add(&scopeSpec{cfg: baseCfg})
		}
	}
	return r, nil
}

// singleRouter is a router of one scope, of every namespace.
func singleRouter(where string, levels ...cache.Config) (*routerSpec, error) {
	cfg, err := resolve(where, levels...)
	if err != nil {
		return nil, err
	}
	r := &routerSpec{byNS: map[string]*scopeSpec{}}
	r.rest = r.add(&scopeSpec{cfg: cfg})
	r.cluster = r.rest
	return r, nil
}

// defaultsConfig is the cache-wide level of settings.
func defaultsConfig(o *cache.Options) cache.Config {
	return cache.Config{
		LabelSelector:         o.DefaultLabelSelector,
		FieldSelector:         o.DefaultFieldSelector,
		Transform:             o.DefaultTransform,
		UnsafeDisableDeepCopy: o.DefaultUnsafeDisableDeepCopy,
		EnableWatchBookmarks:  o.DefaultEnableWatchBookmarks,
		SyncPeriod:            o.SyncPeriod,
	}
}

// byObjectConfig is the type-wide level of settings of a ByObject entry.
func byObjectConfig(b cache.ByObject) cache.Config {
	return cache.Config{
		LabelSelector:         b.Label,
		FieldSelector:         b.Field,
		Transform:             b.Transform,
		UnsafeDisableDeepCopy: b.UnsafeDisableDeepCopy,
		EnableWatchBookmarks:  b.EnableWatchBookmarks,
		SyncPeriod:            b.SyncPeriod,
	}
}

// defaultRouter lays out the scopes of the kinds no ByObject entry names.
func defaultRouter(o *cache.Options) (*routerSpec, error) {
	defaults := defaultsConfig(o)
	if len(o.DefaultNamespaces) == 0 {
		return singleRouter("defaults", defaults)
	}
	none := func(string) cache.Config { return cache.Config{} }
	return namespaceRouter("DefaultNamespaces", o.DefaultNamespaces, cache.Config{}, none, defaults, true)
}

// byObjectRouter lays out the scopes of one ByObject entry's kind.
func byObjectRouter(where string, o *cache.Options, b cache.ByObject, namespaced bool) (*routerSpec, error) {
	defaults := defaultsConfig(o)
	typeLevel := byObjectConfig(b)
	if !namespaced {
		if b.Namespaces != nil {
			return nil, fmt.Errorf("typedcache: %s is cluster-scoped, but its ByObject.Namespaces is set", where)
		}
		return singleRouter(where, typeLevel, defaults)
	}
	namespaces := b.Namespaces
	if namespaces == nil {
		namespaces = o.DefaultNamespaces
	}
	if len(namespaces) == 0 {
		return singleRouter(where, typeLevel, defaults)
	}
	outer := func(ns string) cache.Config { return o.DefaultNamespaces[ns] }
	return namespaceRouter(where, namespaces, typeLevel, outer, defaults, false)
}

// stripsManagedFields reports whether f is controller-runtime's
// TransformStripManagedFields. Operators keep it; as a transform it makes
// every object decoded in full, then edited, and shares nothing an edit
// could reach (no maps, no relist reuse), where Options.DropManagedFields
// leaves managedFields out while decoding and keeps sharing: the cache
// does the latter for it.
//
// The function it returns is a closure that the compiler copies into each
// caller it inlines TransformStripManagedFields into, so it has no one
// address: it is known by its name (a closure of a function named
// TransformStripManagedFields, inlined or not), and then by what it does to an object
// (the same object back, with its managedFields cleared and nothing else
// changed). A transform of the user's that does the same is not
// recognised, and runs as it is.
func stripsManagedFields(f toolscache.TransformFunc) bool {
	if f == nil {
		return false
	}
	fn := runtime.FuncForPC(reflect.ValueOf(f).Pointer())
	// Its name is that of the function it was made in, then
	// TransformStripManagedFields, then the closure's number: ".func1",
	// or ".1" inside another closure.
	if fn == nil || !strings.Contains(fn.Name(), "TransformStripManagedFields.") {
		return false
	}
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "probe", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1("{}")}}},
		Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}
	want := probe.DeepCopy()
	want.ManagedFields = nil
	out, err := f(probe)
	return err == nil && out == any(probe) && equality.Semantic.DeepEqual(probe, want)
}
