package typedcache

import (
	"errors"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/selection"
)

// errNonExactField reports a field selector List cannot answer from an
// index: only "field=value" (or "==") terms can be, as in
// controller-runtime's cache.
var errNonExactField = errors.New("non-exact field matches are not supported by the cache")

// exactMatch reports whether reqs is one or more "field=value" terms.
func exactMatch(reqs fields.Requirements) bool {
	if len(reqs) == 0 {
		return false
	}
	for _, r := range reqs {
		if r.Operator != selection.Equals && r.Operator != selection.DoubleEquals {
			return false
		}
	}
	return true
}

// The names and values of field indexes are controller-runtime's, so that
// an index added through the Informer's AddIndexers under its name, as
// some controllers do, answers List's field selectors too.

// fieldIndexName is the name of the index of field.
func fieldIndexName(field string) string { return "field:" + field }

// allNamespaces stands for the namespace of a value indexed for every
// namespace.
const allNamespaces = "__all_namespaces"

// namespacedKey is the index value of value in namespace ns ("" for every
// namespace).
func namespacedKey(ns, value string) string {
	if ns == "" {
		ns = allNamespaces
	}
	return ns + "/" + value
}

// fieldValues returns the index values of an object of namespace ns whose
// field has raw: each in the namespace and, for a namespaced object, in
// every namespace too.
func fieldValues(ns string, raw []string) []string {
	n := len(raw)
	if ns != "" {
		n *= 2
	}
	out := make([]string, 0, n)
	for _, v := range raw {
		out = append(out, namespacedKey(ns, v))
	}
	if ns != "" {
		for _, v := range raw {
			out = append(out, namespacedKey("", v))
		}
	}
	return out
}
