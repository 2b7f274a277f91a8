package informer

import (
	"context"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/typedkube/informer/internal/testobj"
)

// stubDynamic is a dynamic client whose List returns list.
type stubDynamic struct {
	dynamic.ResourceInterface // nil: only List is called
	list                      *unstructured.UnstructuredList
}

func (c stubDynamic) List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return c.list, nil
}

// stubMetadata is a metadata client whose List returns list.
type stubMetadata struct {
	metadata.ResourceInterface // nil: only List is called
	list                       *metav1.PartialObjectMetadataList
}

func (c stubMetadata) List(context.Context, metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	return c.list, nil
}

// Every list adapter keeps the ShardInfo that a server which filtered the
// list by ShardSelector echoes, along with the rest of the list metadata:
// without it, a sharded informer over the adapter takes the server for one
// that ignored the selector, and reports client-side filtering.
func TestListAdaptersKeepShardInfo(t *testing.T) {
	info := &metav1.ShardInfo{Selector: "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"}
	remaining := int64(3)
	want := metav1.ListMeta{ResourceVersion: "5", Continue: "next", RemainingItemCount: &remaining, ShardInfo: info}
	pods := func(lm metav1.ListMeta) *corev1.PodList {
		return &corev1.PodList{ListMeta: lm, Items: []corev1.Pod{*testobj.Pod("ns", "a", "1")}}
	}
	ulist := &unstructured.UnstructuredList{Object: map[string]any{"metadata": map[string]any{
		"resourceVersion": "5", "continue": "next", "remainingItemCount": int64(3),
		"shardInfo": map[string]any{"selector": info.Selector},
	}}}
	mdList := &metav1.PartialObjectMetadataList{ListMeta: want}
	items, err := itemsOf[*corev1.Pod](reflect.TypeFor[*corev1.Pod](), reflect.TypeFor[*corev1.PodList]())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	byNamespace := func(lms ...metav1.ListMeta) ListerWatcher[*corev1.Pod] {
		lw, err := MultiNamespaceListWatch([]string{"a", "b"}, func(ns string) (ListerWatcher[*corev1.Pod], error) {
			lm := lms[0]
			if ns == "b" {
				lm = lms[1]
			}
			lm.Continue = "" // one page per namespace
			return ListWatchFromClient[corev1.Pod](&stubClient[*corev1.PodList]{list: pods(lm)}, nil), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return lw
	}
	unsharded := want
	unsharded.ShardInfo = nil
	for _, tc := range []struct {
		name string
		list func() (metav1.ListMeta, error)
		want *metav1.ShardInfo
	}{
		{"ListWatchFromClient", pageMeta(ctx, ListWatchFromClient[corev1.Pod](&stubClient[*corev1.PodList]{list: pods(want)}, nil)), info},
		{"ListWatchFromDynamic", pageMeta(ctx, ListWatchFromDynamic(stubDynamic{list: ulist}, nil)), info},
		{"ListWatchFromMetadata", pageMeta(ctx, ListWatchFromMetadata(stubMetadata{list: mdList}, nil)), info},
		{"pageOf", func() (metav1.ListMeta, error) { return pageOf(pods(want), items).ListMeta, nil }, info},
		{"MultiNamespaceListWatch, every namespace sharded", pageMeta(ctx, byNamespace(want, want)), info},
		{"MultiNamespaceListWatch, one namespace not", pageMeta(ctx, byNamespace(want, unsharded)), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.list()
			if err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(got.ShardInfo, tc.want) {
				t.Errorf("ShardInfo = %v, want %v", got.ShardInfo, tc.want)
			}
			if got.ResourceVersion != "5" {
				t.Errorf("ResourceVersion = %q, want 5", got.ResourceVersion)
			}
		})
	}
	if got := ListMetaOf(ulist); !cmp.Equal(got, want) {
		t.Errorf("ListMetaOf(unstructured) (-want +got):\n%s", cmp.Diff(want, got))
	}
	if got := ListMetaOf(pods(want)); !cmp.Equal(got, want) {
		t.Errorf("ListMetaOf(PodList) (-want +got):\n%s", cmp.Diff(want, got))
	}
}

// pageMeta lists one page of lw and returns its list metadata.
func pageMeta[T Object](ctx context.Context, lw ListerWatcher[T]) func() (metav1.ListMeta, error) {
	return func() (metav1.ListMeta, error) {
		page, err := lw.List(ctx, metav1.ListOptions{})
		if err != nil {
			return metav1.ListMeta{}, err
		}
		return page.ListMeta, nil
	}
}

// A list's metadata is read from its ListMeta field, whatever the list's
// type, and from its methods when it has no such field.
func TestListMetaOf(t *testing.T) {
	remaining := int64(7)
	full := metav1.ListMeta{ResourceVersion: "9", Continue: "c", RemainingItemCount: &remaining, ShardInfo: &metav1.ShardInfo{Selector: "s"}}
	for _, tc := range []struct {
		name string
		list metav1.ListInterface
		want metav1.ListMeta
	}{
		{"generated", &corev1.ConfigMapList{ListMeta: full}, full},
		{"metadata", &metav1.PartialObjectMetadataList{ListMeta: full}, full},
		{"a named field", &namedListMeta{ListMeta: full}, full},
		{"empty", &corev1.PodList{}, metav1.ListMeta{}},
		{"promoted from an unexported type", &promotedListMeta{inner: inner{ListMeta: full}}, full},
		{"methods only", methodsList{}, metav1.ListMeta{ResourceVersion: "3", Continue: "k"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ListMetaOf(tc.list)); diff != "" {
				t.Errorf("ListMetaOf (-want +got):\n%s", diff)
			}
		})
	}
}

// namedListMeta has its ListMeta as a named field, not embedded.
type namedListMeta struct {
	ListMeta metav1.ListMeta
}

func (l *namedListMeta) GetResourceVersion() string      { return l.ListMeta.ResourceVersion }
func (l *namedListMeta) SetResourceVersion(string)       {}
func (l *namedListMeta) GetSelfLink() string             { return "" }
func (l *namedListMeta) SetSelfLink(string)              {}
func (l *namedListMeta) GetContinue() string             { return l.ListMeta.Continue }
func (l *namedListMeta) SetContinue(string)              {}
func (l *namedListMeta) GetRemainingItemCount() *int64   { return l.ListMeta.RemainingItemCount }
func (l *namedListMeta) SetRemainingItemCount(*int64)    {}
func (l *namedListMeta) GetShardInfo() *metav1.ShardInfo { return l.ListMeta.ShardInfo }
func (l *namedListMeta) SetShardInfo(*metav1.ShardInfo)  {}

// promotedListMeta's ListMeta is promoted from an embedded unexported
// type, as Go promotes it.
type promotedListMeta struct{ inner }

type inner struct{ metav1.ListMeta }

// methodsList has no ListMeta, only the methods.
type methodsList struct{}

func (methodsList) GetResourceVersion() string    { return "3" }
func (methodsList) SetResourceVersion(string)     {}
func (methodsList) GetSelfLink() string           { return "" }
func (methodsList) SetSelfLink(string)            {}
func (methodsList) GetContinue() string           { return "k" }
func (methodsList) SetContinue(string)            {}
func (methodsList) GetRemainingItemCount() *int64 { return nil }
func (methodsList) SetRemainingItemCount(*int64)  {}
