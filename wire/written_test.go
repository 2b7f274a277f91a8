package wire

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A forbidden write to a map that decoded objects share (a reader setting a
// label on a cached object, say) does not reach the objects decoded after
// it: the decoder finds the map changed when it would share it again,
// gives the next object a map of what the server sent, and counts the
// write. Each kind of map the decoder compares its own way: string maps,
// ResourceLists, and maps of other values.
func TestSharedMapWritten(t *testing.T) {
	for _, tc := range []struct {
		name  string
		obj   func() *corev1.Pod
		write func(p *corev1.Pod)
	}{
		{"label changed", func() *corev1.Pod { return testobj.RealisticPod("ns", 1, 2) }, func(p *corev1.Pod) { p.Labels["app"] = "written" }},
		{"label added", func() *corev1.Pod { return testobj.RealisticPod("ns", 1, 2) }, func(p *corev1.Pod) { p.Labels["extra"] = "x" }},
		{"label deleted and added back otherwise", func() *corev1.Pod { return testobj.RealisticPod("ns", 1, 2) }, func(p *corev1.Pod) {
			for k := range p.Labels {
				v := p.Labels[k]
				delete(p.Labels, k)
				p.Labels[k+"-moved"] = v
				return
			}
		}},
		{"annotation", func() *corev1.Pod {
			p := testobj.RealisticPod("ns", 1, 2)
			p.Annotations = map[string]string{"a": "1"}
			return p
		}, func(p *corev1.Pod) { p.Annotations["a"] = "2" }},
		{"resource limit", func() *corev1.Pod { return testobj.RealisticPod("ns", 1, 2) }, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("64")
		}},
		{"overhead added", func() *corev1.Pod {
			p := testobj.RealisticPod("ns", 1, 2)
			p.Spec.Overhead = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Mi")}
			return p
		}, func(p *corev1.Pod) { p.Spec.Overhead[corev1.ResourceCPU] = resource.MustParse("1") }},
		{"node selector", func() *corev1.Pod {
			p := testobj.RealisticPod("ns", 1, 2)
			p.Spec.NodeSelector = map[string]string{"zone": "a"}
			return p
		}, func(p *corev1.Pod) { p.Spec.NodeSelector["zone"] = "b" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
			if err != nil {
				t.Fatal(err)
			}
			src := tc.obj()
			b := marshalPod(t, src)
			want, err := d.Protobuf(b)
			if err != nil {
				t.Fatal(err)
			}
			first, err := d.Protobuf(b) // its maps enter the table, met twice
			if err != nil {
				t.Fatal(err)
			}
			if d.SharedMapsWritten() != 0 {
				t.Fatal("a write counted before any")
			}
			want = want.DeepCopy() // what the server sent
			tc.write(first)
			for i := range 3 {
				got, err := d.Protobuf(b)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("object %d decoded after the write (-sent +decoded):\n%s", i, diff)
				}
			}
			if n := d.SharedMapsWritten(); n != 1 {
				t.Errorf("SharedMapsWritten() = %d, want 1", n)
			}
		})
	}
}

// The same for a compact store's labels, read from a record's bytes, and
// for maps of JSON-decoded objects.
func TestSharedMapWrittenLabelsAndJSON(t *testing.T) {
	d, c := newPodCompact(t)
	b := marshalPod(t, testobj.RealisticPod("ns", 1, 2))
	want, err := c.ProtobufLabels(b)
	if err != nil {
		t.Fatal(err)
	}
	sent := maps.Clone(want)
	got, err := c.ProtobufLabels(b)
	if err != nil {
		t.Fatal(err)
	}
	got["app"] = "written"
	again, err := c.ProtobufLabels(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sent, again); diff != "" {
		t.Errorf("labels read after the write (-sent +read):\n%s", diff)
	}
	if n := d.SharedMapsWritten(); n != 1 {
		t.Errorf("SharedMapsWritten() = %d, want 1", n)
	}

	wd, err := NewDecoder[*widgetObject, *widgetObject](Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := &widgetObject{ObjectMeta: metav1.ObjectMeta{Name: "w", Labels: map[string]string{"app": "web", "tier": "front"}}}
	js, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wd.JSON(js); err != nil { // maps enter the table the second time they come
		t.Fatal(err)
	}
	a, err := wd.JSON(js)
	if err != nil {
		t.Fatal(err)
	}
	a.Labels["app"] = "written"
	next, err := wd.JSON(js)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(w.Labels, next.Labels); diff != "" {
		t.Errorf("JSON labels decoded after the write (-sent +decoded):\n%s", diff)
	}
	if n := wd.SharedMapsWritten(); n != 1 {
		t.Errorf("JSON: SharedMapsWritten() = %d, want 1", n)
	}
}

// widgetObject is a CRD-like type, decoded from JSON.
type widgetObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

// A map of values neither strings nor Quantities (a ConfigMap's binary
// data) is compared through reflection.
func TestSharedMapWrittenOtherValues(t *testing.T) {
	d, err := NewDecoder[*corev1.ConfigMap, *corev1.ConfigMap](Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}, BinaryData: map[string][]byte{"k": []byte("v"), "l": []byte("w")}}
	b, err := cm.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Protobuf(b); err != nil { // maps enter the table the second time they come
		t.Fatal(err)
	}
	first, err := d.Protobuf(b)
	if err != nil {
		t.Fatal(err)
	}
	second, err := d.Protobuf(b)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := anyMapPointer(first.BinaryData), anyMapPointer(second.BinaryData); got != want {
		t.Fatal("equal binary data is not shared: nothing to test")
	}
	first.BinaryData["k"] = []byte("written")
	got, err := d.Protobuf(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cm.BinaryData, got.BinaryData); diff != "" {
		t.Errorf("binary data decoded after the write (-sent +decoded):\n%s", diff)
	}
	if n := d.SharedMapsWritten(); n != 1 {
		t.Errorf("SharedMapsWritten() = %d, want 1", n)
	}
}

// A map whose run names a key twice (the last value wins) is shared as any
// other, the same bytes making the same map, and is not taken for one
// written to: SharedMapsWritten stays 0.
func TestSharedMapDuplicateKeyNotWritten(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	entry := func(k, v string) []byte {
		e := append(append([]byte{1<<3 | 2, byte(len(k))}, k...), append([]byte{2<<3 | 2, byte(len(v))}, v...)...)
		return append([]byte{11<<3 | 2, byte(len(e))}, e...)
	}
	labels := append(entry("app", "a"), entry("app", "b")...)
	meta := append(append([]byte{1<<3 | 2, 1}, 'p'), labels...)
	b := append([]byte{1<<3 | 2, byte(len(meta))}, meta...)
	var first map[string]string
	for i := range 3 {
		p, err := d.Protobuf(b)
		if err != nil {
			t.Fatal(err)
		}
		if p.Labels["app"] != "b" || len(p.Labels) != 1 {
			t.Fatalf("labels %v, want app=b", p.Labels)
		}
		if i == 1 {
			first = p.Labels
		}
		if i == 2 && anyMapPointer(p.Labels) != anyMapPointer(first) {
			t.Error("the labels of equal bytes are not shared")
		}
	}
	if n := d.SharedMapsWritten(); n != 0 {
		t.Errorf("SharedMapsWritten() = %d, want 0", n)
	}
}
