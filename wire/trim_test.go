package wire

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/internal/testobj"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// trimOptions are the decoder options that leave bytes out of objects.
var trimOptions = map[string]Options{
	"DropManagedFields":    {DropManagedFields: true},
	"Annotations":          {Annotations: keepExampleAnnotations},
	"both":                 {DropManagedFields: true, Annotations: keepExampleAnnotations},
	"both, no map sharing": {DropManagedFields: true, Annotations: keepExampleAnnotations, NoMapSharing: true},
}

// keepExampleAnnotations keeps the annotations under example.com/.
func keepExampleAnnotations(key string) bool { return strings.HasPrefix(key, "example.com/") }

// annotated returns p with annotations the filter keeps and drops.
func annotated(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.Annotations = map[string]string{
		"example.com/owner": "team-a",
		"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 300),
		"prometheus.io/scrape":                             "true",
	}
	return p
}

// trimmedRecord returns the bytes of the record c makes of b, and checks
// that it decodes as b does.
func trimmedRecord[PP any](t *testing.T, d *Decoder[PP], c *Compact[PP], b []byte) []byte {
	t.Helper()
	r, err := c.Protobuf(b)
	if err != nil {
		t.Fatal(err)
	}
	want, err := d.Protobuf(b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Decode(r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the record decodes otherwise than its bytes (-want +got):\n%s", diff)
	}
	return r.AppendTo(nil)
}

// A compact record of a listed object holds what a read of it returns:
// the bytes of the object the decoder makes, which are what encoding that
// object gives, not the managedFields or the annotations the options
// leave out; the same record a watched object's encoding makes.
func TestCompactProtobufTrims(t *testing.T) {
	for name, opts := range trimOptions {
		t.Run(name, func(t *testing.T) {
			d, err := NewDecoder[*corev1.Pod, *corev1.Pod](opts)
			if err != nil {
				t.Fatal(err)
			}
			c := NewCompact(d, 0)
			for i, p := range testobj.RealisticPods("shop", 20, 3) {
				if i%2 == 0 {
					p = annotated(p)
				}
				b, err := p.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				got := trimmedRecord(t, d, c, b)
				obj, err := d.Protobuf(b)
				if err != nil {
					t.Fatal(err)
				}
				want, err := obj.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("Pod %d: the record holds %d bytes, the encoding of the object read %d", i, len(got), len(want))
				}
				if len(got) >= len(b) {
					t.Fatalf("Pod %d: the record holds %d bytes of the %d listed: nothing left out", i, len(got), len(b))
				}
				// A watched object is encoded from the decoded object: the
				// same bytes.
				w, err := c.Encode(obj)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(w.AppendTo(nil), got) {
					t.Fatalf("Pod %d: a watched object's record differs from a listed one's", i)
				}
			}
		})
	}
}

// The annotation filter applies to every ObjectMeta of an object, as the
// decoder applies it: a Deployment's template's too.
func TestCompactProtobufTrimsNested(t *testing.T) {
	d, err := NewDecoder[*appsv1.Deployment, *appsv1.Deployment](Options{Annotations: keepExampleAnnotations, DropManagedFields: true})
	if err != nil {
		t.Fatal(err)
	}
	c := NewCompact(d, 0)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: "7", Annotations: map[string]string{"a": "drop", "example.com/k": "keep"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}}},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"b": "drop", "example.com/t": "keep"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
		}},
	}
	b, err := dep.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got := trimmedRecord(t, d, c, b)
	want := dep.DeepCopy()
	want.ManagedFields = nil
	want.Annotations = map[string]string{"example.com/k": "keep"}
	want.Spec.Template.Annotations = map[string]string{"example.com/t": "keep"}
	wb, err := want.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, wb) {
		t.Fatalf("the record holds %d bytes, want the %d of the object without the left-out fields", len(got), len(wb))
	}
}

// Without options that leave bytes out, a record keeps the listed bytes
// as they came, unknown fields included.
func TestCompactProtobufKeepsWithoutTrim(t *testing.T) {
	d, c := newPodCompact(t)
	b, err := annotated(testobj.RealisticPod("ns", 1, 2)).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, 0xf8, 0x3e, 0x01) // field 999, a varint: unknown to Pod
	if got := trimmedRecord(t, d, c, b); !bytes.Equal(got, b) {
		t.Fatal("the record changed the listed bytes")
	}
	if newTrimmer(d.plan, &d.opts) != nil {
		t.Fatal("a trimmer for options that leave nothing out")
	}
}

// FuzzCompactTrim makes records of arbitrary bytes with a decoder that
// leaves managedFields and annotations out: whenever the bytes validate,
// the record decodes as they do, holds no more than they, and is left as
// it is when made a record again.
func FuzzCompactTrim(f *testing.F) {
	for i, p := range testobj.RealisticPods("shop", 4, 2) {
		if i%2 == 0 {
			p = annotated(p)
		}
		b, err := p.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](trimOptions["both"])
	if err != nil {
		f.Fatal(err)
	}
	c := NewCompact(d, 0)
	f.Fuzz(func(t *testing.T, b []byte) {
		if d.Validate(b) != nil {
			if _, err := c.Protobuf(b); err == nil {
				t.Fatal("a record of bytes that do not validate")
			}
			return
		}
		got := trimmedRecord(t, d, c, b)
		if len(got) > len(b) {
			t.Fatalf("the record holds %d bytes of %d", len(got), len(b))
		}
		if again := trimmedRecord(t, d, c, got); !bytes.Equal(again, got) {
			t.Fatal("trimming a record's bytes again changed them")
		}
	})
}
