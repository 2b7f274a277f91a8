package informer

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/typedkube/informer/internal/testobj"
	"github.com/typedkube/informer/wire"
)

// Our Lister and client-go's generated PodLister over the same Pods give
// the same answers, NamespaceAll included (issue 10, item 3: ByNamespace("")
// returned no Pod).
func TestListerMatchesClientGo(t *testing.T) {
	pods := []*corev1.Pod{
		testobj.Pod("a", "web", "", "app=web"),
		testobj.Pod("a", "db", "", "app=db"),
		testobj.Pod("b", "web", "", "app=web"),
		testobj.Pod("c", "cache", "", "tier=x"),
	}
	l, ref := podListers(t, pods)
	keys := func(ps []*corev1.Pod) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = p.Namespace + "/" + p.Name
		}
		slices.Sort(out)
		return out
	}
	for _, ns := range []string{metav1.NamespaceAll, "a", "b", "missing"} {
		for _, sel := range []labels.Selector{labels.Everything(), labels.SelectorFromSet(labels.Set{"app": "web"}), labels.Nothing()} {
			got, err := l.ByNamespace(ns).List(sel)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.Pods(ns).List(sel)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(keys(want), keys(got)); diff != "" {
				t.Errorf("ByNamespace(%q).List(%v) (-client-go +ours):\n%s", ns, sel, diff)
			}
		}
		for _, name := range []string{"web", "db", "nope"} {
			got, err := l.ByNamespace(ns).Get(name)
			want, wantErr := ref.Pods(ns).Get(name)
			if apierrors.IsNotFound(err) != apierrors.IsNotFound(wantErr) || (err == nil && got != want) {
				t.Errorf("ByNamespace(%q).Get(%q) = %v, %v; client-go: %v, %v", ns, name, got, err, want, wantErr)
			}
		}
	}
	all, _ := l.List(labels.Everything())
	want, _ := ref.List(labels.Everything())
	if diff := cmp.Diff(keys(want), keys(all)); diff != "" {
		t.Errorf("List (-client-go +ours):\n%s", diff)
	}
}

// A namespaced Get spells its key in a buffer of its own: it finds the
// object with names of any length, past the buffer's too, and a Get from a
// store of decoded objects allocates nothing.
func TestListerGetKey(t *testing.T) {
	long := strings.Repeat("n", 253) // the longest name a Pod may have
	pods := []*corev1.Pod{
		testobj.Pod("a", "web", "", ""),
		testobj.Pod("a", long, "", ""),
		testobj.Pod(strings.Repeat("s", 63), long, "", ""),
	}
	l, ref := podListers(t, pods)
	for _, ns := range []string{"a", "b", strings.Repeat("s", 63)} {
		for _, name := range []string{"web", long, long[1:], ""} {
			got, err := l.ByNamespace(ns).Get(name)
			want, wantErr := ref.Pods(ns).Get(name)
			if apierrors.IsNotFound(err) != apierrors.IsNotFound(wantErr) || (err == nil && got != want) {
				t.Errorf("ByNamespace(%q).Get(%d bytes) = %v, %v; client-go: %v, %v", ns, len(name), got, err, want, wantErr)
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := l.ByNamespace("a").Get("web"); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a Get allocates %v times, want 0", n)
	}
}

// podListers returns our Lister and client-go's PodLister, each over a
// cache of pods with a namespace index.
func podListers(t *testing.T, pods []*corev1.Pod) (Lister[*corev1.Pod], corev1listers.PodLister) {
	t.Helper()
	ours := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]})
	theirs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := ours.Add(p); err != nil {
			t.Fatal(err)
		}
		if err := theirs.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return Lister[*corev1.Pod]{indexer: ours, resource: corev1.Resource("pods")}, corev1listers.NewPodLister(theirs)
}

var errRefused = errors.New("refused for the test")

// A compact store's Get of a record that does not decode reports it under
// its key, namespace/name as spelled for the lookup, and finds nothing.
func TestListerGetUndecodable(t *testing.T) {
	x := NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]})
	x.setCompact(wire.NewCompact(podDecoder(), 0), true)
	x.compact.decode = func(*wire.Record) (*corev1.Pod, error) { return nil, errRefused } // no stored record decodes
	var reported []string
	x.compact.failed = func(key string, err error) {
		if !errors.Is(err, errRefused) {
			t.Errorf("reported %s with %v, want the codec's error", key, err)
		}
		reported = append(reported, key)
	}
	for _, p := range []*corev1.Pod{testobj.Pod("a", "web", "", ""), testobj.Pod("", "node-local", "", "")} {
		if err := x.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	l := Lister[*corev1.Pod]{indexer: x, resource: corev1.Resource("pods")}
	if got, err := l.ByNamespace("a").Get("web"); !apierrors.IsNotFound(err) {
		t.Errorf("Get(a/web) = %v, %v; want not found", got, err)
	}
	if got, err := l.Get("node-local"); !apierrors.IsNotFound(err) {
		t.Errorf("Get(node-local) = %v, %v; want not found", got, err)
	}
	if want := []string{"a/web", "node-local"}; !slices.Equal(reported, want) {
		t.Errorf("reported %q, want %q", reported, want)
	}
}
