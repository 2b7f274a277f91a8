package informer

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// scope is where one ListerWatcher of a factory's informer lists and
// watches: a namespace ("" for every namespace, or a cluster-scoped
// resource) and the edit of its requests' options.
type scope struct {
	namespace string
	tweak     func(*metav1.ListOptions)
}

// newShared returns the shared entry of the informer of r, scoped as o
// (validated by forOptions) and the factory's options ask.
func newShared[T Object](f *Factory, r *apiResource, o ForOptions[T]) (*shared[T], error) {
	s := &shared[T]{
		name:          r.name,
		namespaced:    r.mapping.Scope.Name() == meta.RESTScopeNameNamespace,
		labelSelector: o.LabelSelector,
		fieldSelector: o.FieldSelector,
		tweak:         o.TweakListOptions,
	}
	var err error
	if s.namespaces, err = f.namespaces(s.name, s.namespaced, o); err != nil {
		return nil, err
	}
	s.requests = composeTweak(f.opts.TweakListOptions, s.labelSelector, s.fieldSelector, s.tweak)
	return s, nil
}

// composeTweak returns the edit of list options that applies factory, then
// the selectors (added to any the factory's set), then own; nil if there
// is nothing to do.
func composeTweak(factory func(*metav1.ListOptions), labelSelector, fieldSelector string, own func(*metav1.ListOptions)) func(*metav1.ListOptions) {
	if labelSelector == "" && fieldSelector == "" && own == nil {
		return factory
	}
	return func(o *metav1.ListOptions) {
		if factory != nil {
			factory(o)
		}
		o.LabelSelector = andSelectors(o.LabelSelector, labelSelector)
		o.FieldSelector = andSelectors(o.FieldSelector, fieldSelector)
		if own != nil {
			own(o)
		}
	}
}

// andSelectors joins two selectors, label or field, into one selecting
// what both do.
func andSelectors(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "," + b
}

// normalizeSelectors parses a label and a field selector and returns them
// in their canonical form, so that two spellings of one selector compare
// equal.
func normalizeSelectors(labelSelector, fieldSelector string) (string, string, error) {
	if labelSelector != "" {
		sel, err := labels.Parse(labelSelector)
		if err != nil {
			return "", "", fmt.Errorf("%w: LabelSelector: %w", ErrInvalidOptions, err)
		}
		// Parse keeps "==" apart from "=", which means the same.
		reqs, _ := sel.Requirements()
		canon := labels.NewSelector()
		for _, r := range reqs {
			if r.Operator() == selection.DoubleEquals {
				eq, err := labels.NewRequirement(r.Key(), selection.Equals, r.ValuesUnsorted())
				if err != nil {
					return "", "", fmt.Errorf("%w: LabelSelector: %w", ErrInvalidOptions, err)
				}
				r = *eq
			}
			canon = canon.Add(r)
		}
		labelSelector = canon.String()
	}
	if fieldSelector != "" {
		sel, err := fields.ParseSelector(fieldSelector)
		if err != nil {
			return "", "", fmt.Errorf("%w: FieldSelector: %w", ErrInvalidOptions, err)
		}
		fieldSelector = sel.String()
	}
	return labelSelector, fieldSelector, nil
}

// checkNamespaces checks a list of namespaces to watch: distinct, none
// empty.
func checkNamespaces(namespaces []string) error {
	for i, ns := range namespaces {
		if ns == metav1.NamespaceAll || slices.Contains(namespaces[:i], ns) {
			return fmt.Errorf("%w: Namespaces must be distinct and not empty: %q", ErrInvalidOptions, namespaces)
		}
	}
	return nil
}

// namespaces resolves the namespaces that the informer named name watches
// when asked with o: {""} for every namespace or a cluster-scoped
// resource, or the namespaces, sorted.
func (f *Factory) namespaces(name string, namespaced bool, o interface{ requested() []string }) ([]string, error) {
	requested := o.requested()
	switch {
	case !namespaced && len(requested) > 0:
		return nil, fmt.Errorf("%w: %s is cluster-scoped: Namespace %q does not apply", ErrInvalidOptions, name, requested)
	case !namespaced:
		return []string{metav1.NamespaceAll}, nil
	case len(requested) == 0 && len(f.opts.Namespaces) > 0:
		requested = f.opts.Namespaces
	case len(requested) == 0:
		requested = []string{f.opts.Namespace}
	}
	out := slices.Clone(requested)
	slices.Sort(out)
	return out, nil
}

// requested returns the namespaces o names: Namespaces, or Namespace, or
// none.
func (o ForOptions[T]) requested() []string {
	if o.Namespace != "" {
		return []string{o.Namespace}
	}
	return o.Namespaces
}
