package informers

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"github.com/typedkube/informer/e2e/internal/widget"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// TestMetadataPods runs a metadata-only informer (*metav1.PartialObjectMetadata) of Pods: the
// server sends object metadata only.
func TestMetadataPods(t *testing.T) {
	runCRUD(t, crudCase[*metav1.PartialObjectMetadata]{
		gvr: podsGVR,
		informer: direct(podsGVR, func(_ *testing.T, c *kubetest.Clients, ns string) informer.ListerWatcher[*metav1.PartialObjectMetadata] {
			return informer.ListWatchFromMetadata(c.Metadata.Resource(podsGVR).Namespace(ns), nil)
		}),
		object: podObject,
		check: func(m *metav1.PartialObjectMetadata) error {
			if m.UID == "" || m.CreationTimestamp.IsZero() || m.Labels["app"] != "e2e" {
				return fmt.Errorf("metadata %+v, want a UID, a creation time and the label app=e2e", m.ObjectMeta)
			}
			return nil
		},
	})
}

// TestMetadataWire: ForMetadata decodes the server's metadata views with package wire (protobuf
// for Pods; JSON for Widgets, a CRD, which the server serves in JSON only), from a watch-list
// stream and from a LIST, asking for the views as client-go's metadata client does; and its
// store holds what the same informer holds through client-go's metadata client
// (DecodeClientGo), once synced and after an update, a delete and a create.
func TestMetadataWire(t *testing.T) {
	verifyNoGoroutinesLeft(t)
	admin := adminClients(t)
	for _, gvr := range []schema.GroupVersionResource{podsGVR, widget.GVR} {
		newObject := func(name string) *unstructured.Unstructured {
			o := podObject(name)
			if gvr == widget.GVR {
				o = widgetObject(name)
			}
			o.SetLabels(map[string]string{"app": "e2e", "tier": "meta"})
			return o
		}
		for _, mode := range []informer.WatchListMode{informer.WatchListAuto, informer.WatchListOff} {
			t.Run(gvr.Resource+"/"+mode.String(), func(t *testing.T) {
				ctx := testContext(t, time.Minute)
				ns := newNamespace(t, admin)
				installWidgets(t, admin, ns)
				objects := admin.Dynamic.Resource(gvr).Namespace(ns)
				for i := range 5 {
					if _, err := objects.Create(ctx, newObject(fmt.Sprint("m-", i)), metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				var log kubetest.RequestLog
				opts := informer.FactoryOptions{Scheme: widgetScheme(t), Informer: informer.InformerOptions{Reflector: informer.ReflectorOptions{WatchList: mode}}}
				wired := newFactory(t, log.Wrap(srv.AdminConfig()), ns, opts)
				opts.Decoding = informer.DecodeClientGo
				viaClient := newFactory(t, srv.AdminConfig(), ns, opts)
				got, err := informer.ForMetadata(wired, gvr)
				if err != nil {
					t.Fatal(err)
				}
				want, err := informer.ForMetadata(viaClient, gvr)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range []*informer.Factory{wired, viaClient} {
					f.Start(ctx)
					t.Cleanup(f.Shutdown)
					if synced, err := f.WaitForCacheSync(ctx); err != nil {
						t.Fatalf("WaitForCacheSync: %v (%v)", err, synced)
					}
				}
				sameStores(t, "synced", got, want, 5)
				// Package wire's decoder shares equal label maps between objects, which
				// client-go's codecs never do: so these objects were decoded by it.
				a, _ := got.GetIndexer().GetByKey(ns + "/m-2")
				b, _ := got.GetIndexer().GetByKey(ns + "/m-3")
				if a == nil || b == nil || len(a.Labels) == 0 || reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
					t.Errorf("m-2 and m-3 do not share their label map: not decoded by package wire")
				}

				if _, err := objects.Patch(ctx, "m-0", types.MergePatchType, []byte(`{"metadata":{"labels":{"step":"updated"},"annotations":{"note":"x"}}}`), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
				if err := objects.Delete(ctx, "m-1", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				last, err := objects.Create(ctx, newObject("m-new"), metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				// Both have seen every write once both hold the last one's resource version.
				seen := func(i *informer.SharedIndexInformer[*metav1.PartialObjectMetadata]) bool {
					m, ok := i.GetIndexer().GetByKey(ns + "/m-new")
					return ok && m.ResourceVersion == last.GetResourceVersion()
				}
				if err := kubetest.WaitFor(ctx, time.Minute, "both informers to hold m-new", func() bool { return seen(got) && seen(want) }); err != nil {
					t.Fatal(err)
				}
				sameStores(t, "after the writes", got, want, 5)
				if m, _ := got.GetIndexer().GetByKey(ns + "/m-0"); m == nil || m.Labels["step"] != "updated" {
					t.Errorf("m-0 after the patch: %+v, want the label step=updated", m)
				}

				reqs := log.Requests(func(r kubetest.Request) bool { return r.Resource() == gvr.Resource })
				if len(reqs) == 0 {
					t.Fatal("no requests logged")
				}
				for _, r := range reqs {
					view := "as=PartialObjectMetadataList;"
					if r.Watch() {
						view = "as=PartialObjectMetadata;"
					}
					if !strings.Contains(r.Accept, view) || !strings.HasPrefix(r.Accept, runtime.ContentTypeProtobuf) {
						t.Errorf("%v: Accept %q, want protobuf with %s first", r, r.Accept, view)
					}
				}
			})
		}
	}
}

// sameStores fails t unless got and want hold the same objects, n of them.
func sameStores(t *testing.T, when string, got, want *informer.SharedIndexInformer[*metav1.PartialObjectMetadata], n int) {
	t.Helper()
	list := func(i *informer.SharedIndexInformer[*metav1.PartialObjectMetadata]) []*metav1.PartialObjectMetadata {
		l := i.GetIndexer().List()
		slices.SortFunc(l, func(a, b *metav1.PartialObjectMetadata) int { return strings.Compare(a.Name, b.Name) })
		return l
	}
	g, w := list(got), list(want)
	if len(w) != n {
		t.Fatalf("%s: client-go's metadata client's informer holds %d objects, want %d", when, len(w), n)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("%s: package wire's metadata (+) against client-go's metadata client's (-):\n%s", when, d)
	}
}
