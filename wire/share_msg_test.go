package wire

import (
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// decodePods decodes pods with d and checks each against the generated
// decoder's.
func decodePods(t *testing.T, d *Decoder[*corev1.Pod], pods ...*corev1.Pod) []*corev1.Pod {
	t.Helper()
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		out[i] = decodeChecked(t, d, p)
	}
	return out
}

func newPodDecoder(t *testing.T, opts Options) *Decoder[*corev1.Pod] {
	t.Helper()
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The Pods of one ReplicaSet share their pointed-at messages (a
// container's probe and security context, a volume's source) from the
// second time their bytes come: the first Pod has its own, the second
// makes the values the others get. Without map sharing, none are shared.
func TestMessageSharing(t *testing.T) {
	pods := testobj.RealisticPods("shop", 5, 1)
	objs := decodePods(t, newPodDecoder(t, Options{}), pods...)
	shared := func(p *corev1.Pod) []any {
		c := p.Spec.Containers[0]
		return []any{c.ReadinessProbe, c.LivenessProbe, c.SecurityContext, p.Spec.SecurityContext}
	}
	first, second := shared(objs[0]), shared(objs[1])
	for _, o := range objs[2:] {
		for i, v := range shared(o) {
			if v != second[i] {
				t.Errorf("value %d (%T) of a later Pod is not the second Pod's", i, v)
			}
			if v == first[i] {
				t.Errorf("value %d (%T) of a later Pod is the first Pod's, which bytes seen once do not share", i, v)
			}
		}
	}
	// The two containers' security contexts are equal on the wire, in
	// two fields of one type: one value, from the first Pod's second
	// container on.
	if c := objs[0].Spec.Containers; c[0].SecurityContext == c[1].SecurityContext {
		t.Error("the first security context, seen once, is shared")
	}
	for _, o := range objs[1:] {
		if o.Spec.Containers[0].SecurityContext != objs[0].Spec.Containers[1].SecurityContext {
			t.Error("the equal security contexts of two containers are two values")
		}
	}
	plain := decodePods(t, newPodDecoder(t, Options{NoMapSharing: true}), pods...)
	if plain[3].Spec.Containers[0].ReadinessProbe == plain[4].Spec.Containers[0].ReadinessProbe {
		t.Error("NoMapSharing shares a probe")
	}
}

// A value written to through one object (which the objects' contract
// forbids) changes the objects that hold it, and no other: the next object
// with those bytes gets what the server sent, and the write is counted.
func TestSharedMessageWritten(t *testing.T) {
	d := newPodDecoder(t, Options{})
	pods := testobj.RealisticPods("shop", 5, 1)
	objs := decodePods(t, d, pods[:4]...)
	probe := objs[3].Spec.Containers[0].ReadinessProbe
	if probe != objs[2].Spec.Containers[0].ReadinessProbe {
		t.Fatal("the probe is not shared")
	}
	probe.PeriodSeconds = 99
	later := decodePods(t, d, pods[4])[0] // checked against the generated decoder's
	if later.Spec.Containers[0].ReadinessProbe == probe {
		t.Error("a written value is handed out again")
	}
	if n := d.SharedMapsWritten(); n != 1 {
		t.Errorf("SharedMapsWritten = %d, want 1", n)
	}
	if again := decodePods(t, d, pods[4])[0]; again.Spec.Containers[0].ReadinessProbe == probe {
		t.Error("a written value is handed out again")
	}
}

// A merge into an object never writes into the values it shares: a
// ProtobufInto of a message whose probe differs, and a message whose
// pointed-at field comes twice, give what the generated decoder gives and
// leave the other objects as they were.
func TestMessageSharingMerge(t *testing.T) {
	d := newPodDecoder(t, Options{})
	pods := testobj.RealisticPods("shop", 4, 1)
	for _, p := range pods {
		p.Spec.SecurityContext.RunAsGroup = nil
	}
	objs := decodePods(t, d, pods[:3]...)
	if objs[1].Spec.SecurityContext != objs[2].Spec.SecurityContext {
		t.Fatal("the Pods' security contexts are not shared")
	}
	group := int64(5)
	patch := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsGroup: &group}}}
	pb := marshalPod(t, patch)

	// ProtobufInto an object that shares its security context.
	mergeChecked(t, d, objs[2], pods[2], pb)
	unchanged(t, objs[1], pods[1], "an object sharing the merged value")

	// The field twice in one message: its first value comes from the table.
	b := append(marshalPod(t, pods[3]), pb...)
	decodeBytesChecked(t, d, b) // a field twice, as the generated decoder merges it
	unchanged(t, objs[1], pods[1], "an object sharing the value merged into")
	decodePods(t, d, pods[3]) // the table's value unchanged
}

// mergeChecked merges patch into obj, an object d decoded from pod, with
// ProtobufInto, checks it against the generated decoder's merge of patch
// into pod, and returns that.
func mergeChecked(t *testing.T, d *Decoder[*corev1.Pod], obj, pod *corev1.Pod, patch []byte) *corev1.Pod {
	t.Helper()
	want := upstreamPod(t, marshalPod(t, pod))
	if err := want.Unmarshal(patch); err != nil {
		t.Fatal(err)
	}
	if err := d.ProtobufInto(patch, obj); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, obj); diff != "" {
		t.Errorf("merge differs from the generated decoder's (-want +got):\n%s", diff)
	}
	return want
}

// unchanged checks that obj, what the test calls it, is still what the
// generated decoder makes of pod.
func unchanged(t *testing.T, obj, pod *corev1.Pod, what string) {
	t.Helper()
	if diff := cmp.Diff(upstreamPod(t, marshalPod(t, pod)), obj); diff != "" {
		t.Errorf("%s changed (-want +got):\n%s", what, diff)
	}
}

// A message holding a Quantity held as an inf.Dec is not shared: a
// reader's copy of the Quantity would change the Dec in place.
func TestMessageWithDecQuantityNotShared(t *testing.T) {
	big := resource.MustParse("123456789012345678901234567890")
	if !quantityHoldsDecAt(unsafe.Pointer(&big)) {
		t.Fatal("the quantity does not hold a Dec")
	}
	pods := testobj.RealisticPods("shop", 4, 1)
	for _, p := range pods {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "big", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &big}}})
	}
	objs := decodePods(t, newPodDecoder(t, Options{}), pods...)
	last := func(p *corev1.Pod) *corev1.EmptyDirVolumeSource {
		return p.Spec.Volumes[len(p.Spec.Volumes)-1].EmptyDir
	}
	if last(objs[2]) == last(objs[3]) {
		t.Error("an emptyDir holding an inf.Dec is shared")
	}
}

// Bytes that do not encode back to themselves (a field twice, here) are
// decoded for each object, never shared: a value handed out is checked by
// encoding it again.
func TestMessageSharingNeedsCanonicalBytes(t *testing.T) {
	d, err := NewDecoder[*corev1.Container, *corev1.Container](Options{})
	if err != nil {
		t.Fatal(err)
	}
	canonical, err := (&corev1.Probe{InitialDelaySeconds: 4, TimeoutSeconds: 7}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	twice := append(canonical[:len(canonical):len(canonical)], 2<<3, 4) // initialDelaySeconds again
	container := func(probe []byte) []byte {
		// name (1), then readinessProbe (11)
		return append([]byte{1<<3 | 2, 1, 'c', 11<<3 | 2, byte(len(probe))}, probe...)
	}
	decode := func(b []byte) []*corev1.Container {
		var got []*corev1.Container
		for range 4 {
			c, err := d.Protobuf(b)
			if err != nil {
				t.Fatal(err)
			}
			want := &corev1.Container{}
			if err := want.Unmarshal(b); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, c); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			got = append(got, c)
		}
		return got
	}
	if got := decode(container(twice)); got[2].ReadinessProbe == got[3].ReadinessProbe {
		t.Error("a probe whose bytes its encoder would not write is shared")
	}
	if got := decode(container(canonical)); got[2].ReadinessProbe != got[3].ReadinessProbe {
		t.Error("a probe as its encoder writes it is not shared")
	}
	if n := d.SharedMapsWritten(); n != 0 {
		t.Errorf("SharedMapsWritten = %d, want 0: nothing was written", n)
	}
}

// first returns the address of the first element of s, nil if it has none.
func first[E any](s []E) *E {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// The Pods of one ReplicaSet share runs of repeated messages (their
// tolerations, their owner references, a container's ports and env) from
// the second time the bytes come, each run with its length as its
// capacity; without map sharing, none are shared.
func TestRunSharing(t *testing.T) {
	pods := testobj.RealisticPods("shop", 5, 1)
	runs := func(p *corev1.Pod) []any {
		c := p.Spec.Containers[0]
		return []any{first(p.Spec.Tolerations), first(p.OwnerReferences), first(c.Ports), first(c.Env)}
	}
	caps := func(p *corev1.Pod) [][2]int {
		c := p.Spec.Containers[0]
		return [][2]int{{len(p.Spec.Tolerations), cap(p.Spec.Tolerations)}, {len(p.OwnerReferences), cap(p.OwnerReferences)},
			{len(c.Ports), cap(c.Ports)}, {len(c.Env), cap(c.Env)}}
	}
	objs := decodePods(t, newPodDecoder(t, Options{}), pods...)
	firstRuns, second := runs(objs[0]), runs(objs[1])
	for i, v := range firstRuns {
		if v == nil {
			t.Fatalf("run %d of the fixture is empty", i)
		}
	}
	for _, o := range objs[2:] {
		for i, v := range runs(o) {
			if v != second[i] {
				t.Errorf("run %d (%T) of a later Pod is not the second Pod's", i, v)
			}
			if v == firstRuns[i] {
				t.Errorf("run %d (%T) of a later Pod is the first Pod's, which bytes seen once do not share", i, v)
			}
		}
		for i, lc := range caps(o) {
			if lc[0] != lc[1] {
				t.Errorf("run %d: length %d, capacity %d: an append would write into what other Pods hold", i, lc[0], lc[1])
			}
		}
	}
	plain := decodePods(t, newPodDecoder(t, Options{NoMapSharing: true}), pods...)
	if first(plain[3].Spec.Tolerations) == first(plain[4].Spec.Tolerations) {
		t.Error("NoMapSharing shares a run")
	}
}

// A Sizer counts a shared run once, in SharedBytes, not in each object
// that holds it.
func TestSizerSharedRun(t *testing.T) {
	d := newPodDecoder(t, Options{})
	pods := testobj.RealisticPods("shop", 4, 1)
	before := d.SharedBytes()
	objs := decodePods(t, d, pods...)
	last := objs[3]
	if first(last.Spec.Tolerations) != first(objs[2].Spec.Tolerations) {
		t.Fatal("the tolerations are not shared")
	}
	own, none := *last, *last // the same Pod with tolerations of its own, and with none
	own.Spec.Tolerations = append([]corev1.Toleration(nil), last.Spec.Tolerations...)
	none.Spec.Tolerations = nil
	sz := d.Sizer()
	run := sz.Size(&own) - sz.Size(&none) // the array and what its elements point to
	if run <= 0 {
		t.Fatalf("tolerations of its own add %d B to a Pod", run)
	}
	if got, want := sz.Size(last), sz.Size(&none); got != want {
		t.Errorf("Size of a Pod that shares its tolerations = %d, want %d: that of the Pod without them", got, want)
	}
	if got := d.SharedBytes() - before; got < run {
		t.Errorf("SharedBytes grew by %d, less than the %d B of the shared run", got, run)
	}
}

// An element written to through one object (which the objects' contract
// forbids) changes the objects that hold its run, and no other: the next
// object with those bytes gets what the server sent, and the write is
// counted; whether the element then encodes shorter, longer (the check's
// encoder runs off its buffer) or as long.
func TestSharedRunWritten(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func([]corev1.Toleration)
	}{
		{"shorter", func(tols []corev1.Toleration) { *tols[1].TolerationSeconds = 99 }}, // through a pointer
		{"longer", func(tols []corev1.Toleration) { tols[0].Key += "-and-more" }},
		{"as long", func(tols []corev1.Toleration) { tols[0].Operator = "Equals" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newPodDecoder(t, Options{})
			pods := testobj.RealisticPods("shop", 5, 1)
			objs := decodePods(t, d, pods[:4]...)
			tols := objs[3].Spec.Tolerations
			if first(tols) != first(objs[2].Spec.Tolerations) {
				t.Fatal("the tolerations are not shared")
			}
			tc.write(tols)
			later := decodePods(t, d, pods[4])[0] // checked against the generated decoder's
			if first(later.Spec.Tolerations) == first(tols) {
				t.Error("a written run is handed out again")
			}
			if n := d.SharedMapsWritten(); n != 1 {
				t.Errorf("SharedMapsWritten = %d, want 1", n)
			}
		})
	}
}

// A shared run is never written by the decoder: an element of the field
// that comes after another field, and a ProtobufInto that adds an element,
// append to a copy; what the objects decode to is the generated decoder's.
func TestRunSharingAppend(t *testing.T) {
	d := newPodDecoder(t, Options{})
	pods := testobj.RealisticPods("shop", 4, 1)
	objs := decodePods(t, d, pods[:3]...)
	if first(objs[1].Spec.Tolerations) != first(objs[2].Spec.Tolerations) {
		t.Fatal("the tolerations are not shared")
	}
	extra := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "extra", Operator: corev1.TolerationOpExists}}}}
	pb := marshalPod(t, extra)

	// ProtobufInto an object that shares its tolerations.
	want := mergeChecked(t, d, objs[2], pods[2], pb)
	unchanged(t, objs[1], pods[1], "an object sharing the run")

	// A toleration after the spec's other fields, in a second spec: the
	// run before it is the table's, and the append must not land where
	// the merge's did.
	extra.Spec.Tolerations[0].Key = "other"
	b := append(marshalPod(t, pods[3]), marshalPod(t, extra)...)
	got := decodeBytesChecked(t, d, b)
	if n := len(got.Spec.Tolerations); n != len(pods[3].Spec.Tolerations)+1 {
		t.Fatalf("%d tolerations, want %d", n, len(pods[3].Spec.Tolerations)+1)
	}
	unchanged(t, objs[1], pods[1], "an object sharing the run")
	if diff := cmp.Diff(want, objs[2]); diff != "" {
		t.Errorf("the merged object changed (-want +got):\n%s", diff)
	}
	decodePods(t, d, pods[3]) // the table's run unchanged
}

// A run of elements that can hold a Quantity (a container, whose resources
// do) is not shared, small as it may be: a Quantity's encoder makes its
// string again, so checking the run each time it is handed out would cost
// more than decoding it.
func TestRunWithQuantityNotShared(t *testing.T) {
	d := newPodDecoder(t, Options{})
	objs := make([]*corev1.Pod, 4)
	for i := range objs {
		p := &corev1.Pod{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:      "c",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
			}},
			Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
		}}
		objs[i] = decodeChecked(t, d, p)
	}
	if first(objs[2].Spec.Containers) == first(objs[3].Spec.Containers) {
		t.Error("a run of containers is shared")
	}
	if first(objs[2].Spec.Tolerations) != first(objs[3].Spec.Tolerations) {
		t.Error("a run of tolerations beside them is not shared")
	}
}
