package wire

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The record Encode takes from the bytes an object was offered with is the
// one it would have encoded: the same bytes back (for Pods the API server
// encodes as the generated encoder does), less what the Decoder's options
// leave out of objects, and it decodes into the object.
func TestCompactOfferMatchesEncode(t *testing.T) {
	keep := func(k string) bool { return !strings.HasPrefix(k, "kubectl.kubernetes.io/") }
	for _, tt := range []struct {
		name string
		opts Options
	}{
		{"whole", Options{}},
		{"DropManagedFields", Options{DropManagedFields: true}},
		{"annotations filtered", Options{DropManagedFields: true, Annotations: keep}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewDecoder[*corev1.Pod, *corev1.Pod](tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			offered, encoded := NewCompact(d, 0), NewCompact(d, 0)
			for i, p := range testobj.HarshPods("shop", 60, 3) {
				if i%2 == 0 {
					if p.Annotations == nil {
						p.Annotations = map[string]string{}
					}
					p.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = fmt.Sprintf(`{"i":%d}`, i)
				}
				b := marshalPod(t, p)
				obj, err := d.Protobuf(b)
				if err != nil {
					t.Fatal(err)
				}
				offered.Offer(obj, b)
				clear(b) // b may be reused once Offer returns
				got, err := offered.Encode(obj)
				if err != nil {
					t.Fatal(err)
				}
				want, err := encoded.Encode(obj)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.AppendTo(nil), want.AppendTo(nil)) {
					t.Fatalf("Pod %d: the offered record differs from the encoded one", i)
				}
				offered.Forget(got) // decode it again, from the record
				back, err := offered.Decode(got)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(obj, back); diff != "" {
					t.Fatalf("Pod %d decodes otherwise (-want +got):\n%s", i, diff)
				}
			}
			if n := offered.OfferedRecords(); n != 60 {
				t.Errorf("%d records taken from offers, want 60", n)
			}
			if o := &offered.offered; len(o.byObj) != 0 || o.bytes != 0 || len(o.order) != o.head {
				t.Errorf("%d offers, %d B and %d objects left", len(o.byObj), o.bytes, len(o.order)-o.head)
			}
		})
	}
}

// Encode takes an offer only for the object offered: another object, or one
// whose offer newer ones pushed out, is encoded. The offers held are
// bounded in number and bytes. A Compact of JSON records ignores offers.
func TestCompactOfferOnlyItsObject(t *testing.T) {
	d, c := newPodCompact(t)
	objs := make([]*corev1.Pod, maxOffers+10)
	for i := range objs {
		b := marshalPod(t, benchPod(i))
		obj, err := d.Protobuf(b)
		if err != nil {
			t.Fatal(err)
		}
		objs[i] = obj
		c.Offer(obj, b)
	}
	if n := len(c.offered.byObj); n != maxOffers {
		t.Fatalf("%d offers kept, want %d", n, maxOffers)
	}
	other, err := d.Protobuf(marshalPod(t, benchPod(len(objs)-1)))
	if err != nil {
		t.Fatal(err)
	}
	for i, obj := range []*corev1.Pod{objs[0], objs[9], other} { // pushed out, pushed out, not offered
		r, err := c.Encode(obj)
		if err != nil {
			t.Fatal(err)
		}
		if n := c.OfferedRecords(); n != 0 {
			t.Fatalf("object %d: %d records made of offers, want 0", i, n)
		}
		if got, err := c.Decode(r); err != nil || got != obj {
			t.Fatalf("object %d: the record decodes to another object (%v)", i, err)
		}
	}
	if _, err := c.Encode(objs[len(objs)-1]); err != nil {
		t.Fatal(err)
	}
	if n, left := c.OfferedRecords(), len(c.offered.byObj); n != 1 || left != maxOffers-1 {
		t.Errorf("%d taken and %d offers left, want 1 and %d", n, left, maxOffers-1)
	}
	// Taking the rest in order leaves nothing behind.
	for _, obj := range objs[10 : len(objs)-1] {
		if _, err := c.Encode(obj); err != nil {
			t.Fatal(err)
		}
	}
	if o := &c.offered; len(o.byObj) != 0 || o.bytes != 0 || len(o.order) != o.head {
		t.Errorf("%d offers, %d B and %d objects left", len(o.byObj), o.bytes, len(o.order)-o.head)
	}

	// Bytes: realistic Pods of about 11 KB, more than maxOfferBytes of them.
	d2, c2 := newPodCompact(t)
	for i, p := range testobj.RealisticPods("shop", maxOfferBytes/(8<<10), 2) {
		b := marshalPod(t, p)
		obj, err := d2.Protobuf(b)
		if err != nil {
			t.Fatal(err)
		}
		c2.Offer(obj, b)
		if c2.offered.bytes > maxOfferBytes {
			t.Fatalf("after %d offers: %d B held", i+1, c2.offered.bytes)
		}
	}

	jd, err := NewDecoder[*unstructured.Unstructured, *unstructured.Unstructured](Options{})
	if err != nil {
		t.Fatal(err)
	}
	jc := NewCompact(jd, 0)
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}}}
	jc.Offer(u, []byte("not the object"))
	if len(jc.offered.byObj) != 0 {
		t.Errorf("a JSON Compact kept %d offers", len(jc.offered.byObj))
	}
}

// Offers and Encodes from two goroutines, as a watch's decoder and its
// store run, give each object its own record.
func TestCompactOfferConcurrent(t *testing.T) {
	d, c := newPodCompact(t)
	pods := testobj.RealisticPods("shop", 400, 4)
	objs := make(chan *corev1.Pod, 8)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(objs)
		for _, p := range pods {
			b := marshalPod(t, p)
			obj, err := d.Protobuf(b)
			if err != nil {
				t.Error(err)
				return
			}
			c.Offer(obj, b)
			objs <- obj
		}
	})
	for obj := range objs {
		r, err := c.Encode(obj)
		if err != nil {
			t.Fatal(err)
		}
		c.Forget(r)
		got, err := c.Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != obj.Name || got.ResourceVersion != obj.ResourceVersion {
			t.Fatalf("the record of %s decodes to %s", obj.Name, got.Name)
		}
	}
	wg.Wait()
	if n := c.OfferedRecords(); n != int64(len(pods)) {
		t.Errorf("%d records taken from offers, want %d", n, len(pods))
	}
}
