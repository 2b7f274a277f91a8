package wire

import (
	"encoding/json"
	"errors"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/internal/testobj"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/randfill"
)

// The projections the tests decode into.
type (
	podSlim struct {
		Meta[podSlim]
		Spec   podSpecSlim
		Status podStatusSlim
	}
	podSpecSlim struct {
		NodeName        string
		Containers      []containerSlim
		InitContainers  []corev1.Container
		SecurityContext *podSecuritySlim
		Tolerations     []corev1.Toleration
	}
	podSecuritySlim struct {
		RunAsUser *int64
		Sysctls   []corev1.Sysctl
	}
	containerSlim struct {
		Name      string
		Image     string
		Ports     []corev1.ContainerPort
		Resources corev1.ResourceRequirements
	}
	podStatusSlim struct {
		Phase             corev1.PodPhase
		PodIPs            []corev1.PodIP
		ContainerStatuses []containerStatusSlim
	}
	containerStatusSlim struct {
		Name         string
		Ready        bool
		RestartCount int32
		State        corev1.ContainerState
	}

	deploymentSlim struct {
		Meta[deploymentSlim]
		Spec struct {
			Replicas *int32
			Selector *metav1.LabelSelector
			Strategy appsv1.DeploymentStrategy
		}
		Status appsv1.DeploymentStatus
	}
	configMapSlim struct {
		Meta[configMapSlim]
		Data       map[string]string
		BinaryData map[string][]byte
		Immutable  *bool
	}
	nodeSlim struct {
		Meta[nodeSlim]
		Spec struct {
			PodCIDRs      []string
			Unschedulable bool
			Taints        []corev1.Taint
		}
		Status struct {
			Capacity    corev1.ResourceList
			Allocatable corev1.ResourceList
			Addresses   []corev1.NodeAddress
			NodeInfo    struct{ KubeletVersion string }
			Images      []corev1.ContainerImage
		}
	}
)

// filler returns a random object filler with the API machinery's own
// functions for metadata.
func filler(seed int64) *randfill.Filler {
	codecs := serializer.NewCodecFactory(scheme.Scheme)
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), codecs)
	f.NilChance(0.2).NumElements(0, 3)
	f.Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewMilliQuantity(c.Int63n(1<<40), resource.DecimalSI)
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(c.Int31())
			} else {
				*v = intstr.FromString(c.String(10))
			}
		},
	)
	return f
}

// project copies the fields src (a T) shares with dst (a projection P).
func project(dst, src reflect.Value) {
	if dst.Type() == src.Type() {
		dst.Set(src)
		return
	}
	switch dst.Kind() {
	case reflect.Struct:
		for i := range dst.NumField() {
			f := dst.Type().Field(i)
			if f.Anonymous && f.Type.PkgPath() == reflect.TypeFor[Meta[struct{}]]().PkgPath() && strings.HasPrefix(f.Type.Name(), "Meta[") {
				m, _ := metaField(src.Type())
				project(dst.Field(i), src.FieldByIndex(m.Index))
				continue
			}
			project(dst.Field(i), src.FieldByName(f.Name))
		}
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.New(dst.Type().Elem()))
		project(dst.Elem(), src.Elem())
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeSlice(dst.Type(), src.Len(), src.Len()))
		for i := range src.Len() {
			project(dst.Index(i), src.Index(i))
		}
	default:
		// A map or a scalar of another name (corev1.ResourceList as a
		// map[corev1.ResourceName]resource.Quantity).
		dst.Set(src.Convert(dst.Type()))
	}
}

type protoMessage interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// checkKind decodes n fuzzed objects of T, in protobuf and JSON, into T and
// into P, and compares each with what the generated decoder makes.
func checkKind[P, T any](t *testing.T, n int) {
	t.Helper()
	full, err := NewDecoder[*T, *T](Options{})
	if err != nil {
		t.Fatal(err)
	}
	slim, err := NewDecoder[*P, *T](Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := filler(int64(n))
	for i := range n {
		obj := new(T)
		f.Fill(obj)
		b, err := any(obj).(protoMessage).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		want := new(T)
		if err := any(want).(protoMessage).Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		got, err := full.Protobuf(b)
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("object %d: full protobuf decode differs from the generated one (-want +got):\n%s", i, d)
		}
		wantP := new(P)
		project(reflect.ValueOf(wantP).Elem(), reflect.ValueOf(want).Elem())
		gotP, err := slim.Protobuf(b)
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		if d := cmp.Diff(wantP, gotP); d != "" {
			t.Fatalf("object %d: projected protobuf decode differs (-want +got):\n%s", i, d)
		}

		j, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		wantJ := new(T)
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, wantJ); err != nil {
			t.Fatal(err)
		}
		gotJ, err := full.JSON(j)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(wantJ, gotJ); d != "" {
			t.Fatalf("object %d: full JSON decode differs (-want +got):\n%s", i, d)
		}
		wantJP := new(P)
		project(reflect.ValueOf(wantJP).Elem(), reflect.ValueOf(wantJ).Elem())
		gotJP, err := slim.JSON(j)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(wantJP, gotJP); d != "" {
			t.Fatalf("object %d: projected JSON decode differs (-want +got):\n%s", i, d)
		}
	}
}

func TestDecodeMatchesGenerated(t *testing.T) {
	n := 300
	if raceEnabled || testing.Short() {
		n = 40
	}
	t.Run("Pod", func(t *testing.T) { checkKind[podSlim, corev1.Pod](t, n) })
	t.Run("Deployment", func(t *testing.T) { checkKind[deploymentSlim, appsv1.Deployment](t, n) })
	t.Run("ConfigMap", func(t *testing.T) { checkKind[configMapSlim, corev1.ConfigMap](t, n) })
	t.Run("Node", func(t *testing.T) { checkKind[nodeSlim, corev1.Node](t, n) })
	t.Run("RealisticPods", checkRealisticPods)
}

// checkRealisticPods decodes realistic Pods of a few ReplicaSets, whose
// managedFields the API server wrote, with one Decoder (so that labels,
// annotations and FieldsV1 are shared among them), in protobuf and JSON:
// each is what client-go decodes, and still is once all are decoded.
func checkRealisticPods(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wants, gots []*corev1.Pod
	for _, p := range testobj.RealisticPods("shop", 100, 7) {
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		want := &corev1.Pod{}
		if err := want.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		got, err := d.Protobuf(b)
		if err != nil {
			t.Fatal(err)
		}
		j, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		wantJ := &corev1.Pod{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, wantJ); err != nil {
			t.Fatal(err)
		}
		gotJ, err := d.JSON(j)
		if err != nil {
			t.Fatal(err)
		}
		wants, gots = append(wants, want, wantJ), append(gots, got, gotJ)
	}
	for i := range wants {
		if d := cmp.Diff(wants[i], gots[i]); d != "" {
			t.Fatalf("%s: decoded %s differs from client-go's (-want +got):\n%s", wants[i].Name, []string{"protobuf", "JSON"}[i%2], d)
		}
	}
}

var _ = errors.Is

func reflectValue(p any) reflect.Value { return reflect.ValueOf(p).Elem() }
