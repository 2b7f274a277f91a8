package wire

import (
	"reflect"
	"unsafe"
)

// The decoder allocates and fills values of types it knows only at run
// time. reflect.New, NewAt and Value.Grow each look up the pointer type
// of their argument in a global cache, which was a tenth of a Pod's
// decoding time; these are the runtime's own allocation and copy
// functions that reflect uses underneath, called with the type
// descriptors each op keeps. They are among the linknamed functions the
// Go runtime keeps for widely used packages (its "hall of shame").

//go:linkname unsafe_New reflect.unsafe_New
func unsafe_New(typ unsafe.Pointer) unsafe.Pointer

//go:linkname unsafe_NewArray reflect.unsafe_NewArray
func unsafe_NewArray(typ unsafe.Pointer, n int) unsafe.Pointer

//go:linkname typedslicecopy reflect.typedslicecopy
func typedslicecopy(elemType unsafe.Pointer, dst, src sliceHeader) int

// typeDescriptor returns the runtime's descriptor of t, the data word of
// the reflect.Type interface.
func typeDescriptor(t reflect.Type) unsafe.Pointer {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&t))[1]
}

// ifaceTab returns the interface table of *t as an I, an interface type,
// so that an I of any *t can be made from a pointer without reflection
// (asUnmarshaler, asSizedMarshaler); nil if *t is not one.
func ifaceTab[I any](t reflect.Type) unsafe.Pointer {
	i, ok := reflect.New(t).Interface().(I)
	if !ok {
		return nil
	}
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&i))[0]
}

// asUnmarshaler returns p, a *T, as an unmarshaler, given the table of *T.
func asUnmarshaler(tab, p unsafe.Pointer) unmarshaler {
	var u unmarshaler
	w := (*[2]unsafe.Pointer)(unsafe.Pointer(&u))
	w[0], w[1] = tab, p
	return u
}

// finish fills in, for every op reachable from x, what decoding needs at
// run time: the descriptors of the types it allocates and the interface
// tables of the types that decode themselves.
func finish(x *plan) {
	seen := map[*plan]bool{}
	var walkPlan func(*plan)
	var walkOp func(*op)
	walkOp = func(o *op) {
		if o == nil {
			return
		}
		switch o.typ.Kind() {
		case reflect.Pointer, reflect.Slice:
			o.elemType = typeDescriptor(o.typ.Elem())
		}
		o.wire = wireOf(o)
		switch o.kind {
		case opUnmarshal:
			o.tab = ifaceTab[unmarshaler](o.typ)
			o.quantity = o.typ == quantityType
		case opPtrUnmarshal:
			o.tab = ifaceTab[unmarshaler](o.typ.Elem())
			o.quantity = o.typ.Elem() == quantityType
		case opMap:
			o.mapType = typeDescriptor(o.typ)
		}
		walkOp(o.elem)
		walkOp(o.key)
		if o.plan != nil {
			walkPlan(o.plan)
		}
	}
	walkPlan = func(p *plan) {
		if seen[p] {
			return
		}
		seen[p] = true
		for _, o := range p.byNum {
			walkOp(o)
		}
	}
	walkPlan(x)
	markMessageSharing(x)
}
