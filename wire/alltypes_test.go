package wire

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/kubernetes/scheme"
)

// TestDecodeEveryBuiltinType decodes fuzzed objects of every type of
// client-go's scheme that has a protobuf encoding, as full objects, and
// compares each with the generated decoder's result: a plan builds for
// every built-in type, and decodes it alike.
func TestDecodeEveryBuiltinType(t *testing.T) {
	n := 20
	if testing.Short() || raceEnabled {
		n = 4
	}
	seen := map[reflect.Type]bool{}
	var types []reflect.Type
	for _, typ := range scheme.Scheme.AllKnownTypes() {
		// Lists are their items' types repeated: the items are checked.
		if !seen[typ] && reflect.PointerTo(typ).Implements(unmarshalerType) && !strings.HasSuffix(typ.Name(), "List") {
			seen[typ] = true
			types = append(types, typ)
		}
	}
	sort.Slice(types, func(i, j int) bool { return types[i].String() < types[j].String() })
	if len(types) < 150 {
		t.Fatalf("only %d types with a protobuf encoding in the scheme", len(types))
	}
	f := filler(7).MaxDepth(12)
	for _, typ := range types {
		pt := reflect.PointerTo(typ)
		d, err := newDecoder[unsafe.Pointer](pt, pt, Options{})
		if err != nil {
			t.Errorf("%v: %v", typ, err)
			continue
		}
		for i := range n {
			obj := reflect.New(typ)
			f.Fill(obj.Interface())
			b, err := obj.Interface().(protoMessage).Marshal()
			if err != nil {
				t.Fatalf("%v: marshal: %v", typ, err)
			}
			want := reflect.New(typ)
			if err := want.Interface().(protoMessage).Unmarshal(b); err != nil {
				t.Fatalf("%v: generated decoder: %v", typ, err)
			}
			got := reflect.New(typ)
			if err := d.into(b, got.UnsafePointer()); err != nil {
				t.Errorf("%v object %d: %v", typ, i, err)
				break
			}
			if diff := cmp.Diff(want.Interface(), got.Interface()); diff != "" {
				t.Errorf("%v object %d differs from the generated decoder (-want +got):\n%s", typ, i, diff)
				break
			}
		}
	}
	t.Logf("%d types", len(types))
}
