package widget

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	sigsjson "sigs.k8s.io/json"
)

// widgetSlim is a projection of a Widget, as a controller that reads only the color caches it.
type widgetSlim struct {
	wire.Meta[widgetSlim]
	Spec struct{ Color string }
}

// randomWidget is a Widget with random metadata and spec.
func randomWidget(r *rand.Rand) *Widget {
	str := func(n int) string {
		b := make([]rune, r.Intn(n))
		for i := range b {
			b[i] = rune(' ' + r.Intn(0x3000))
		}
		return string(b)
	}
	w := &Widget{
		TypeMeta: metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name: str(20), Namespace: str(10), UID: types.UID(str(36)), ResourceVersion: fmt.Sprint(r.Int63()),
			Generation:        r.Int63(),
			CreationTimestamp: metav1.NewTime(time.Unix(r.Int63n(1<<33), 0)),
		},
		Spec: WidgetSpec{Color: str(30), Size: r.Int63() - r.Int63()},
	}
	if r.Intn(2) == 0 {
		w.Labels = map[string]string{str(10): str(10), "app": str(5)}
	}
	if r.Intn(2) == 0 {
		w.Annotations = map[string]string{str(10): str(100)}
	}
	if r.Intn(3) == 0 {
		w.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: str(8), Name: str(8), UID: types.UID(str(8))}}
	}
	if r.Intn(3) == 0 {
		d := metav1.NewTime(time.Unix(r.Int63n(1<<33), 0))
		w.DeletionTimestamp = &d
	}
	return w
}

// TestWireDecodesWidgets: package wire's JSON decoding of the Widget CRD, full and projected,
// equals the API machinery's JSON decoder's (sigs.k8s.io/json, which client-go uses) on random
// Widgets.
func TestWireDecodesWidgets(t *testing.T) {
	full, err := wire.NewDecoder[*Widget, *Widget](wire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	slim, err := wire.NewDecoder[*widgetSlim, *Widget](wire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(1))
	for i := range 2000 {
		b, err := json.Marshal(randomWidget(r))
		if err != nil {
			t.Fatal(err)
		}
		want := &Widget{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(b, want); err != nil {
			t.Fatal(err)
		}
		got, err := full.JSON(b)
		if err != nil {
			t.Fatalf("widget %d: %v", i, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("widget %d: full decode differs (-want +got):\n%s", i, d)
		}
		gotSlim, err := slim.JSON(b)
		if err != nil {
			t.Fatalf("widget %d: %v", i, err)
		}
		wantSlim := &widgetSlim{}
		m := want.ObjectMeta
		wantSlim.Name, wantSlim.GenerateName, wantSlim.Namespace, wantSlim.UID, wantSlim.ResourceVersion = m.Name, m.GenerateName, m.Namespace, m.UID, m.ResourceVersion
		wantSlim.Generation, wantSlim.CreationTimestamp, wantSlim.DeletionTimestamp = m.Generation, m.CreationTimestamp, m.DeletionTimestamp
		wantSlim.Labels, wantSlim.Annotations, wantSlim.OwnerReferences, wantSlim.Finalizers = m.Labels, m.Annotations, m.OwnerReferences, m.Finalizers
		wantSlim.Spec.Color = want.Spec.Color
		if d := cmp.Diff(wantSlim, gotSlim); d != "" {
			t.Fatalf("widget %d: projection differs (-want +got):\n%s", i, d)
		}
		// Truncated JSON is an error, never a panic.
		if _, err := slim.JSON(b[:len(b)/2]); err == nil {
			t.Fatalf("widget %d: half of its JSON decoded without an error", i)
		}
	}
}
