package wire

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// sharedOps returns the ops reachable from x whose values the message
// table shares, pointed-at messages and runs alike.
func sharedOps(x *plan, seen map[*plan]bool, out []*op) []*op {
	if x == nil || seen[x] {
		return out
	}
	seen[x] = true
	for _, o := range x.byNum {
		for e := o; e != nil; e = e.elem {
			if e.msgShare || e.runShare {
				out = append(out, e)
			}
			out = sharedOps(e.plan, seen, out)
		}
	}
	return out
}

// Every value a Pod decoder shares is checked by the hash of its memory,
// none by encoding it again: each of the Pod's types it shares can be
// hashed so.
func TestPodSharedValuesHashed(t *testing.T) {
	d := newPodDecoder(t, Options{})
	ops := sharedOps(d.plan, map[*plan]bool{}, nil)
	if len(ops) < 20 {
		t.Fatalf("%d shared ops in a Pod's plan, want the many a Pod has", len(ops))
	}
	for _, o := range ops {
		if o.sum == nil {
			t.Errorf("%s (%v) is checked by encoding", o.path, o.typ)
		}
	}
}

// Types the table cannot hash (an interface, a map of other values) are
// not given a plan, and are checked by encoding.
func TestSumPlanRefuses(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[struct{ V any }](),
		reflect.TypeFor[struct{ M map[string]int }](),
		reflect.TypeFor[struct{ M map[int]string }](),
		reflect.TypeFor[[]struct{ P *struct{ F func() } }](),
	} {
		if sumPlan(typ) != nil {
			t.Errorf("%v has a plan", typ)
		}
	}
	type node struct {
		Next *node
		S    string
	}
	if sumPlan(reflect.TypeFor[node]()) != nil {
		t.Error("a recursive type has a plan")
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[corev1.Volume](),
		reflect.TypeFor[corev1.Container](),
		reflect.TypeFor[corev1.ResourceRequirements](),
		reflect.TypeFor[struct{ M map[string]string }](),
	} {
		if sumPlan(typ) == nil {
			t.Errorf("%v has no plan", typ)
		}
	}
}

// A write to any part of a shared value changes its hash: each field
// reachable from a value of each type a Pod decoder shares (filled at
// random, every pointer set), set to another value or to an equal one
// elsewhere in memory, each pointer and slice cut, each map's entry
// changed, removed or added; and undoing the write gives the hash back.
func TestValueSumSeesEveryWrite(t *testing.T) {
	d := newPodDecoder(t, Options{})
	types := map[reflect.Type]*op{}
	for _, o := range sharedOps(d.plan, map[*plan]bool{}, nil) {
		types[o.typ.Elem()] = o
	}
	f := filler(7).NilChance(0).NumElements(1, 2)
	for typ, o := range types {
		t.Run(typ.String(), func(t *testing.T) {
			v := reflect.New(typ)
			f.Fill(v.Interface())
			tab := newMsgTable()
			sum := func() uint64 { return tab.valueSum(&op{kind: opPtrMessage, sum: o.sum}, v.UnsafePointer(), 0) }
			before := sum()
			writes := 0
			eachWrite(v.Elem(), typ.String(), func(path string, undo func()) {
				writes++
				if sum() == before {
					t.Errorf("a write to %s leaves the hash as it was", path)
				}
				undo()
				if sum() != before {
					t.Fatalf("undoing the write to %s does not give the hash back", path)
				}
			})
			if writes == 0 {
				t.Fatal("no writes made")
			}
		})
	}
}

// eachWrite makes, one at a time, each write to the memory v reaches (see
// TestValueSumSeesEveryWrite), calling check after each with its path and
// a function that undoes it.
func eachWrite(v reflect.Value, path string, check func(path string, undo func())) {
	if !v.CanSet() {
		v = reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem() // an unexported field
	}
	old := reflect.New(v.Type()).Elem()
	old.Set(v)
	set := func(what string, nv reflect.Value) {
		v.Set(nv)
		check(path+" "+what, func() { v.Set(old) })
	}
	switch v.Kind() {
	case reflect.Bool:
		set("flipped", reflect.ValueOf(!v.Bool()).Convert(v.Type()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		set("+1", reflect.ValueOf(v.Int()+1).Convert(v.Type()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		set("+1", reflect.ValueOf(v.Uint()+1).Convert(v.Type()))
	case reflect.Float32, reflect.Float64:
		set("+1", reflect.ValueOf(v.Float()+1).Convert(v.Type()))
	case reflect.String:
		set("longer", reflect.ValueOf(v.String()+"x").Convert(v.Type()))
		if v.Len() > 0 { // "" is where every "" is
			set("equal, elsewhere", reflect.ValueOf(strings.Clone(v.String())).Convert(v.Type()))
		}
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if v.Type() == locationPtrType {
			set("nil", reflect.Zero(v.Type()))
			return
		}
		set("nil", reflect.Zero(v.Type()))
		eachWrite(v.Elem(), path+".*", check)
	case reflect.Slice:
		if v.Len() == 0 {
			return
		}
		set("cut", v.Slice(0, v.Len()-1))
		for i := range v.Len() {
			eachWrite(v.Index(i), fmt.Sprintf("%s[%d]", path, i), check)
		}
	case reflect.Array:
		for i := range v.Len() {
			eachWrite(v.Index(i), fmt.Sprintf("%s[%d]", path, i), check)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			eachWrite(v.Field(i), path+"."+v.Type().Field(i).Name, check)
		}
	case reflect.Map:
		if v.Len() == 0 {
			return
		}
		set("nil", reflect.Zero(v.Type()))
		keys := v.MapKeys()
		k, e := keys[0], v.MapIndex(keys[0])
		mapWrite := func(what string, write func()) {
			write()
			check(path+" "+what, func() {
				v.SetMapIndex(k, e)
				for _, x := range v.MapKeys() {
					if !slices.ContainsFunc(keys, func(y reflect.Value) bool { return y.Equal(x) }) {
						v.SetMapIndex(x, reflect.Value{})
					}
				}
			})
		}
		mapWrite("entry removed", func() { v.SetMapIndex(k, reflect.Value{}) })
		mapWrite("entry added", func() { v.SetMapIndex(reflect.ValueOf("added-key").Convert(k.Type()), e) })
		switch e := e.Interface().(type) {
		case string:
			mapWrite("value changed", func() { v.SetMapIndex(k, reflect.ValueOf(e+"x").Convert(v.Type().Elem())) })
			if e != "" {
				mapWrite("value equal, elsewhere", func() { v.SetMapIndex(k, reflect.ValueOf(strings.Clone(e)).Convert(v.Type().Elem())) })
			}
		case resource.Quantity:
			q := e.DeepCopy()
			q.Add(resource.MustParse("1"))
			mapWrite("value changed", func() { v.SetMapIndex(k, reflect.ValueOf(q)) })
		}
	}
}

// A value is hashed by where its strings' bytes are, not by the bytes: a
// map of strings decoded twice from the same bytes hashes as two values,
// and the table's check of a value it handed out hashes what it hashed
// when it remembered it.
func TestValueSumOfDecodedPods(t *testing.T) {
	d := newPodDecoder(t, Options{})
	pods := testobj.RealisticPods("shop", 6, 1)
	objs := decodePods(t, d, pods...)
	tols := objs[5].Spec.Tolerations
	if first(tols) != first(objs[4].Spec.Tolerations) {
		t.Fatal("the tolerations are not shared")
	}
	if n := d.SharedMapsWritten(); n != 0 {
		t.Errorf("SharedMapsWritten = %d, want 0: nothing was written", n)
	}
	var o *op
	for _, s := range sharedOps(d.plan, map[*plan]bool{}, nil) {
		if s.typ == reflect.TypeFor[[]corev1.Toleration]() {
			o = s
		}
	}
	if o == nil {
		t.Fatal("no shared op of tolerations")
	}
	before := d.msgs.valueSum(o, unsafe.Pointer(&tols[0]), len(tols))
	again := decodePods(t, newPodDecoder(t, Options{}), pods[5])[0].Spec.Tolerations
	if d.msgs.valueSum(o, unsafe.Pointer(&again[0]), len(again)) == before {
		t.Error("tolerations decoded apart hash as the shared ones")
	}
	if d.msgs.valueSum(o, unsafe.Pointer(&tols[0]), len(tols)) != before {
		t.Error("the shared tolerations' hash moved with nothing written")
	}
}
