package informer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/typedkube/informer/internal/testobj"
)

// The stores of this package can be written by a Reflector.
var (
	_ ReflectorStore[*corev1.Pod] = (*Store[*corev1.Pod])(nil)
	_ ReflectorStore[*corev1.Pod] = (*Indexer[*corev1.Pod])(nil)
	_ ReflectorStore[*corev1.Pod] = (*FIFO[*corev1.Pod])(nil)
	_ ReflectorStore[*corev1.Pod] = (*DeltaFIFO[*corev1.Pod])(nil)
	_ resyncer                    = (*FIFO[*corev1.Pod])(nil)
	_ resyncer                    = (*DeltaFIFO[*corev1.Pod])(nil)
)

// stubClient is a typed client whose List returns a fixed list and which
// records the options of its calls.
type stubClient[L runtime.Object] struct {
	list      L
	listOpts  []metav1.ListOptions
	watchOpts []metav1.ListOptions
}

func (c *stubClient[L]) List(_ context.Context, opts metav1.ListOptions) (L, error) {
	c.listOpts = append(c.listOpts, opts)
	return c.list, nil
}

func (c *stubClient[L]) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	c.watchOpts = append(c.watchOpts, opts)
	return watch.NewEmptyWatch(), nil
}

type markedClient[L runtime.Object] struct{ stubClient[L] }

func (c *markedClient[L]) IsWatchListSemanticsUnSupported() bool { return true }

func TestListWatchFromClient(t *testing.T) {
	rest := int64(7)
	list := &corev1.PodList{
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next", RemainingItemCount: &rest},
		Items:    []corev1.Pod{*testobj.Pod("ns", "a", "1"), *testobj.Pod("ns", "b", "2")},
	}
	c := &stubClient[*corev1.PodList]{list: list}
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = "app=x" }
	lw := ListWatchFromClient[corev1.Pod](c, tweak)

	page, err := lw.List(t.Context(), metav1.ListOptions{ResourceVersion: "0", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(list.ListMeta, page.ListMeta); diff != "" {
		t.Errorf("list metadata (-want +got):\n%s", diff)
	}
	if len(page.Items) != 2 {
		t.Fatalf("got %d items, want 2", len(page.Items))
	}
	for i, p := range page.Items {
		if p == &list.Items[i] {
			t.Errorf("item %d points into the list's array: a long-lived object would keep the page alive", i)
		}
		if diff := cmp.Diff(&list.Items[i], p); diff != "" {
			t.Errorf("item %d (-want +got):\n%s", i, diff)
		}
	}
	if _, err := lw.Watch(t.Context(), metav1.ListOptions{ResourceVersion: "42"}); err != nil {
		t.Fatal(err)
	}
	wantList := []metav1.ListOptions{{ResourceVersion: "0", Limit: 500, LabelSelector: "app=x"}}
	wantWatch := []metav1.ListOptions{{ResourceVersion: "42", LabelSelector: "app=x"}}
	if diff := cmp.Diff(wantList, c.listOpts); diff != "" {
		t.Errorf("list options (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantWatch, c.watchOpts); diff != "" {
		t.Errorf("watch options (-want +got):\n%s", diff)
	}
	if watchListUnsupported(lw) {
		t.Error("an unmarked client is reported as not supporting watch-list")
	}
}

func TestListWatchFromClientNilList(t *testing.T) {
	lw := ListWatchFromClient[corev1.Pod](&stubClient[*corev1.PodList]{}, nil)
	if _, err := lw.List(t.Context(), metav1.ListOptions{}); err == nil {
		t.Error("List of a nil *PodList returned no error")
	}
}

// TestListWatchFromClientMismatch checks that a type argument that does not
// match the client is refused when the ListerWatcher is made, by a panic.
func TestListWatchFromClientMismatch(t *testing.T) {
	for name, make := range map[string]func(){
		"items of another type": func() {
			ListWatchFromClient[corev1.Service](&stubClient[*corev1.PodList]{}, nil)
		},
		"no Items field": func() {
			ListWatchFromClient[corev1.Pod](&stubClient[*metav1.Status]{}, nil)
		},
		"not a list": func() {
			ListWatchFromClient[corev1.Pod](&stubClient[*corev1.Pod]{}, nil)
		},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("no panic")
				}
				if msg := r.(error).Error(); !strings.HasPrefix(msg, "informer: ListWatchFromClient:") {
					t.Errorf("panic message %q", msg)
				}
			}()
			make()
		})
	}
}

func TestWatchListMarker(t *testing.T) {
	marked := &markedClient[*corev1.PodList]{}
	if !watchListUnsupported(ListWatchFromClient[corev1.Pod](marked, nil)) {
		t.Error("ListWatchFromClient dropped the client's marker")
	}
	plain := ListWatchFromClient[corev1.Pod](&stubClient[*corev1.PodList]{}, nil)
	if !watchListUnsupported(WithoutWatchList(plain)) {
		t.Error("WithoutWatchList did not mark the ListerWatcher")
	}
	store := NewStore(MetaNamespaceKeyFunc[*corev1.Pod])
	_, err := NewReflector(WithoutWatchList(plain), store, ReflectorOptions{WatchList: WatchListOn})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("WatchListOn with a marked ListerWatcher: got %v, want ErrInvalidOptions", err)
	}
	r, err := NewReflector(WithoutWatchList(plain), store, ReflectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.watchList != WatchListOff {
		t.Errorf("WatchListAuto with a marked ListerWatcher resolved to %v, want Off", r.watchList)
	}
}

func TestListWatchFromDynamic(t *testing.T) {
	pod := testobj.Pod("ns", "a", "")
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	dyn := dynamicfake.NewSimpleDynamicClient(scheme.Scheme, pod)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	var lw ListerWatcher[*unstructured.Unstructured] = ListWatchFromDynamic(dyn.Resource(gvr).Namespace("ns"), nil)
	page, err := lw.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].GetName() != "a" || page.Items[0].GetKind() != "Pod" {
		t.Errorf("got %+v, want the Pod a", page.Items)
	}
}

func TestListWatchFromMetadata(t *testing.T) {
	sch := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(sch); err != nil {
		t.Fatal(err)
	}
	obj := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"},
	}
	md := metadatafake.NewSimpleMetadataClient(sch, obj)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	var lw ListerWatcher[*metav1.PartialObjectMetadata] = ListWatchFromMetadata(md.Resource(gvr).Namespace("ns"), nil)
	page, err := lw.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].Name != "a" {
		t.Errorf("got %+v, want the object a", page.Items)
	}
}

// TestReflectorWithFakeClientset runs a Reflector over client-go's fake
// clientset, end to end: what is there is listed, what is created later
// arrives by the watch.
func TestReflectorWithFakeClientset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset(testobj.Pod("ns", "a", "1"), testobj.Pod("ns", "b", "2"))
		// The fake's typed clients cannot send the initial-events-end
		// bookmark: the adapter recognises them.
		lw := ListWatchFromClient[corev1.Pod](cs.CoreV1().Pods("ns"), nil)
		store := NewStore(MetaNamespaceKeyFunc[*corev1.Pod])
		_, stop := runReflector(t, lw, store, ReflectorOptions{})
		if got := storeContents(store.List()); got != "a@1 b@2" {
			t.Errorf("after the list the store holds %q", got)
		}
		if _, err := cs.CoreV1().Pods("ns").Create(t.Context(), testobj.Pod("ns", "c", "3"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := storeContents(store.List()); got != "a@1 b@2 c@3" {
			t.Errorf("after a create the store holds %q", got)
		}
		if err := stop(); err != nil {
			t.Errorf("Run returned %v", err)
		}
	})
}

// The per-resource clients of client-go's fakes cannot end a watch-list
// stream and lack the marker their clientsets carry: the adapters
// recognise them, so that an informer over one lists and watches at once
// instead of waiting InitialEventsTimeout (5s) for a bookmark that never
// comes. No watch-list request reaches the fake.
func TestListWatchOverClientGoFakes(t *testing.T) {
	cs := fake.NewClientset(testobj.Pod("ns", "a", "1"))
	pod := testobj.Pod("ns", "a", "1")
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	dyn := dynamicfake.NewSimpleDynamicClient(scheme.Scheme, pod)
	sch := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(sch); err != nil {
		t.Fatal(err)
	}
	md := metadatafake.NewSimpleMetadataClient(sch)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	for name, lw := range map[string]any{
		"typed":              ListWatchFromClient[corev1.Pod](cs.CoreV1().Pods(""), nil),
		"typed, namespaced":  ListWatchFromClient[corev1.Pod](cs.CoreV1().Pods("ns"), nil),
		"typed, cluster":     ListWatchFromClient[corev1.Node](cs.CoreV1().Nodes(), nil),
		"dynamic":            ListWatchFromDynamic(dyn.Resource(gvr), nil),
		"dynamic, namespace": ListWatchFromDynamic(dyn.Resource(gvr).Namespace("ns"), nil),
		"metadata":           ListWatchFromMetadata(md.Resource(gvr).Namespace("ns"), nil),
	} {
		if !watchListUnsupported(lw) {
			t.Errorf("%s: a ListerWatcher over client-go's fake is not marked as lacking watch-list semantics", name)
		}
	}
	if watchListUnsupported(ListWatchFromClient[corev1.Pod](&stubClient[*corev1.PodList]{}, nil)) {
		t.Error("a client that is no fake is marked")
	}

	inf, err := NewSharedIndexInformer(ListWatchFromClient[corev1.Pod](cs.CoreV1().Pods(""), nil), SharedIndexInformerOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	defer func() { cancel(); <-done }()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := WaitForCacheSync(wctx, inf); err != nil {
		t.Fatal(err)
	}
	lists := 0
	for _, a := range cs.Actions() {
		switch a := a.(type) {
		case clienttesting.ListAction:
			lists++
		case clienttesting.WatchActionImpl:
			if si := a.ListOptions.SendInitialEvents; si != nil && *si {
				t.Errorf("a watch-list request reached the fake: %+v", a.ListOptions)
			}
		}
	}
	if lists == 0 {
		t.Errorf("the informer synced without a list: actions %v", cs.Actions())
	}
}
