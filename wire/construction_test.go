package wire

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
)

// widget is a custom resource's Go type: no protobuf encoding, so a
// Decoder of it decodes JSON only, through the shadow of its projection.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              widgetSpec `json:"spec"`
}

type widgetSpec struct {
	Size       int32             `json:"size"`
	Colour     string            `json:"colour,omitempty"`
	Extra      map[string]string `json:"extra,omitempty"`
	WidgetBase `json:",inline"`
}

type WidgetBase struct {
	Owner string `json:"owner,omitempty"`
}

// newDecoderErr makes a Decoder of P's projection of T and returns its
// error, failing the test if making it panics.
func newDecoderErr[PP, TP any](t *testing.T) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("NewDecoder[%T, %T] panicked: %v", *new(PP), *new(TP), r)
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	_, err = NewDecoder[PP, TP](Options{})
	return err
}

// wantMismatch checks that err is a *MismatchError at path whose reason
// contains each of hints.
func wantMismatch(t *testing.T, what string, err error, path string, hints ...string) {
	t.Helper()
	var me *MismatchError
	if !errors.As(err, &me) || !errors.Is(err, ErrMismatch) {
		t.Errorf("%s: NewDecoder = %v, want a *MismatchError at %s", what, err, path)
		return
	}
	if me.Path != path {
		t.Errorf("%s: mismatch at %s (%v), want at %s", what, me.Path, err, path)
	}
	for _, h := range hints {
		if !strings.Contains(me.Reason, h) {
			t.Errorf("%s: %v does not say %q", what, err, h)
		}
	}
}

// The Metas a projection author can get wrong.
type (
	// A pointer to a Meta (NewDecoder panicked in reflect).
	podPtrMeta struct {
		*Meta[podPtrMeta]
		Spec struct{ NodeName string }
	}
	widgetPtrMeta struct {
		*Meta[widgetPtrMeta]
		Spec struct{ Size int32 }
	}
	// The Meta of another projection, a copy-paste slip: accepted, and
	// then DeepCopyObject copied a depWrongMeta as a nodeSlim.
	depWrongMeta struct {
		Meta[nodeSlim]
		Spec struct{ Replicas *int32 }
	}
	widgetWrongMeta struct {
		Meta[nodeSlim]
		Spec struct{ Size int32 }
	}
	// A nested Meta of the wrong struct.
	depWrongTemplateMeta struct {
		Meta[depWrongTemplateMeta]
		Spec struct{ Template templateWrongMeta }
	}
	templateWrongMeta struct {
		Meta[podSlim]
		Spec struct{ NodeName string }
	}
	// A struct embedding a struct that embeds a Meta: its promoted
	// DeepCopyObject copies only the inner struct.
	podBaseMeta struct {
		podMetaBase
		Spec struct{ NodeName string }
	}
	podMetaBase struct{ Meta[podMetaBase] }
	// Two fields that are one on the wire: one of them stayed empty.
	podTwoMetas struct {
		Meta[podTwoMetas]
		ObjectMeta metav1.ObjectMeta
	}
	widgetTwoMetas struct {
		Meta[widgetTwoMetas]
		ObjectMeta metav1.ObjectMeta
	}
)

// TestNewDecoderRefusesUnsafeMetas: a Meta that DeepCopyObject (which
// finds the object around a Meta[P] by P's layout) would copy as the
// wrong type, a pointer to a Meta, and a Meta beside an ObjectMeta are
// each a *MismatchError when the Decoder is made, for a protobuf type and
// for a JSON-only one, never a panic and never a Decoder.
func TestNewDecoderRefusesUnsafeMetas(t *testing.T) {
	wantMismatch(t, "*Meta, protobuf", newDecoderErr[*podPtrMeta, *corev1.Pod](t), "Meta", "wire.Meta[podPtrMeta] by value")
	wantMismatch(t, "*Meta, JSON", newDecoderErr[*widgetPtrMeta, *widget](t), "Meta", "wire.Meta[widgetPtrMeta] by value")
	wantMismatch(t, "Meta[nodeSlim] in depWrongMeta", newDecoderErr[*depWrongMeta, *appsv1.Deployment](t), "Meta", "wire.Meta[depWrongMeta]")
	wantMismatch(t, "Meta[nodeSlim] in widgetWrongMeta", newDecoderErr[*widgetWrongMeta, *widget](t), "Meta", "wire.Meta[widgetWrongMeta]")
	wantMismatch(t, "nested Meta[podSlim]", newDecoderErr[*depWrongTemplateMeta, *appsv1.Deployment](t), "Spec.Template.Meta", "wire.Meta[templateWrongMeta]")
	wantMismatch(t, "embedded struct with a Meta", newDecoderErr[*podBaseMeta, *corev1.Pod](t), "podMetaBase", "embed wire.Meta[podBaseMeta] in")
	wantMismatch(t, "Meta and ObjectMeta, protobuf", newDecoderErr[*podTwoMetas, *corev1.Pod](t), "ObjectMeta", "Meta")
	wantMismatch(t, "Meta and ObjectMeta, JSON", newDecoderErr[*widgetTwoMetas, *widget](t), "ObjectMeta", "Meta")
}

// deploymentTemplateSlim has a Meta of its own in a nested struct, as
// the projection of a Deployment's Pod template.
type (
	deploymentTemplateSlim struct {
		Meta[deploymentTemplateSlim]
		Spec struct {
			Replicas *int32
			Template podTemplateSlim
		}
	}
	podTemplateSlim struct {
		Meta[podTemplateSlim]
		Spec struct{ NodeName string }
	}
)

// TestNestedMeta: a Meta[S] embedded in a nested struct S is accepted,
// decodes as client-go decodes that metadata, and copies S.
func TestNestedMeta(t *testing.T) {
	n := 30
	if raceEnabled || testing.Short() {
		n = 8
	}
	checkKind[deploymentTemplateSlim, appsv1.Deployment](t, n)
	d, err := NewDecoder[*deploymentTemplateSlim, *appsv1.Deployment](Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := (&appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Protobuf(b)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, ok := got.Spec.Template.DeepCopyObject().(*podTemplateSlim)
	if !ok || tmpl.Labels["app"] != "web" {
		t.Errorf("the template's DeepCopyObject = %#v", tmpl)
	}
}

// Projections authors write, refused before.
type (
	// A field of an inlined JSON type (Volume's VolumeSource is
	// `json:",inline"`), whole and projected, and an unnamed map where T
	// has a named one, corev1.ResourceList.
	podVolumesSlim struct {
		Meta[podVolumesSlim]
		Spec struct {
			Volumes []struct {
				Name         string
				VolumeSource corev1.VolumeSource
			}
			Containers []struct {
				Name      string
				Resources struct {
					Limits, Requests map[corev1.ResourceName]resource.Quantity
				}
			}
			EphemeralContainers []struct {
				corev1.EphemeralContainerCommon
				TargetContainerName string
			}
			InitContainers []struct {
				Name         string
				VolumeMounts []struct{ Name, MountPath string }
			}
		}
		Status struct {
			Phase      string // corev1.PodPhase
			Conditions []corev1.PodCondition
		}
	}
	podVolumeSourcesSlim struct {
		Meta[podVolumeSourcesSlim]
		Spec struct {
			Volumes []struct {
				Name         string
				VolumeSource struct {
					ConfigMap *corev1.ConfigMapVolumeSource
					Secret    *struct{ SecretName string }
					EmptyDir  *struct{ SizeLimit *resource.Quantity }
				}
			}
		}
	}
	nodeCapacitySlim struct {
		Meta[nodeCapacitySlim]
		Status struct {
			Capacity, Allocatable map[corev1.ResourceName]resource.Quantity
			NodeInfo              struct{ KubeletVersion string }
		}
	}
)

// TestProjectionsOfInlinedAndNamedTypes: a field of an inlined JSON type
// (whole, embedded, or projected), an unnamed map for corev1.ResourceList
// and a string for corev1.PodPhase decode, in protobuf and JSON, as
// client-go decodes the full object (NewDecoder refused the first two).
func TestProjectionsOfInlinedAndNamedTypes(t *testing.T) {
	n := 200
	if raceEnabled || testing.Short() {
		n = 10
	}
	t.Run("Pod", func(t *testing.T) { checkKind[podVolumesSlim, corev1.Pod](t, n) })
	t.Run("PodVolumeSources", func(t *testing.T) { checkKind[podVolumeSourcesSlim, corev1.Pod](t, n) })
	t.Run("Node", func(t *testing.T) { checkKind[nodeCapacitySlim, corev1.Node](t, n) })
}

// TestProjectionErrorsSayWhatToWrite: the projections that cannot be made
// are refused with what to write instead, for protobuf and JSON, never
// with a panic (a pointer or a slice where a JSON-only type has a struct
// panicked in reflect).
func TestProjectionErrorsSayWhatToWrite(t *testing.T) {
	type resourcesMap struct {
		Meta[resourcesMap]
		Status struct{ Capacity map[string]resource.Quantity }
	}
	wantMismatch(t, "map[string]Quantity", newDecoderErr[*resourcesMap, *corev1.Node](t), "Status.Capacity",
		"declare it as v1.ResourceList or map[v1.ResourceName]resource.Quantity")
	// metav1.Verbs is a message wrapping its strings, not a repeated
	// string: accepted, a []string read the message's bytes as one verb.
	type verbs struct {
		Name  string
		Verbs []string
	}
	wantMismatch(t, "Verbs as []string", newDecoderErr[*verbs, *metav1.APIResource](t), "Verbs", "v1.Verbs has its own encoding", "use its type")
	type widgetPtrSpec struct {
		Meta[widgetPtrSpec]
		Spec *struct{ Size int32 }
	}
	wantMismatch(t, "pointer for a struct, JSON", newDecoderErr[*widgetPtrSpec, *widget](t), "Spec", "neither")
	type widgetSliceSpec struct {
		Meta[widgetSliceSpec]
		Spec []struct{ Size int32 }
	}
	wantMismatch(t, "slice for a struct, JSON", newDecoderErr[*widgetSliceSpec, *widget](t), "Spec", "neither")
	type widgetUnexported struct {
		Meta[widgetUnexported]
		Spec struct{ size int32 }
	}
	wantMismatch(t, "unexported, JSON", newDecoderErr[*widgetUnexported, *widget](t), "Spec.size", "unexported")
}

// TestJSONOnlyInlinedProjection: a JSON-only type's projection of an
// inlined struct, and of a field promoted from it, decodes as
// sigs.k8s.io/json decodes the type.
func TestJSONOnlyInlinedProjection(t *testing.T) {
	type widgetOwner struct {
		Meta[widgetOwner]
		Spec struct {
			Size  int32
			Owner string // promoted from the inlined WidgetBase
		}
	}
	type widgetBase struct {
		Meta[widgetBase]
		Spec struct {
			Size int32
			WidgetBase
		}
	}
	js := []byte(`{"kind":"Widget","metadata":{"name":"w"},"spec":{"size":3,"owner":"me"}}`)
	want := &widget{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, want); err != nil {
		t.Fatal(err)
	}
	d, err := NewDecoder[*widgetOwner, *widget](Options{})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := d.JSON(js)
	if err != nil || owner.Name != want.Name || owner.Spec.Size != want.Spec.Size || owner.Spec.Owner != want.Spec.Owner {
		t.Errorf("widgetOwner: %+v, %v; want %+v", owner, err, want)
	}
	db, err := NewDecoder[*widgetBase, *widget](Options{})
	if err != nil {
		t.Fatal(err)
	}
	base, err := db.JSON(js)
	if err != nil || base.Name != want.Name || base.Spec.Size != want.Spec.Size || base.Spec.WidgetBase != want.Spec.WidgetBase {
		t.Errorf("widgetBase: %+v, %v; want %+v", base, err, want)
	}
}
