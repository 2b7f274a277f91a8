package wire

import (
	"bytes"
	"hash/maphash"
	"reflect"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Messages objects share. The Pods of one ReplicaSet carry, besides equal
// maps, equal small messages behind pointers: a container's
// securityContext, its probes, each env var's valueFrom, the service
// account's projected volume, a volume's configMap source. Each is a
// handful of allocations per object, decoded again for every Pod: about
// half of a realistic Pod's allocations. A decoder with map sharing hands
// them out as it does maps: the bytes of a pointed-at message equal to
// bytes seen recently give the very value it decoded for them then.
//
// Such a value is never written by the decoder again:
//   - a field that comes again in one message, or a merge (ProtobufInto)
//     into an object that holds a shared value, decodes into a copy of
//     it (mergeCopy), never into it; so only messages whose own fields
//     decode into a copy without writing into what the copy shares are
//     shared (mergeSafe): no bytes fields but FieldsV1's, no types that
//     decode themselves but those whose decoding replaces the value;
//   - a message holding a Quantity held as an inf.Dec, which a reader's
//     copy of it would change in place, is not shared (as for maps).
//
// A program that writes to a shared value through one object (which the
// objects' contract forbids) changes the objects that hold it; the table
// checks a value each time it would hand it out again, by encoding it with
// its type's generated encoder and comparing with the bytes it was decoded
// from: a value found changed is dropped, and counted with the maps found
// written (Decoder.SharedMapsWritten). A value enters the table only if it
// encodes back to its bytes (the API server writes what the generated
// encoders write; other bytes are decoded, not shared), and only the
// second time its bytes come, so that values each object has its own of
// cost a hash, not a copy.

// sizedMarshaler is the generated encoder of the Kubernetes types.
type sizedMarshaler interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// msgTable is a four-way set-associative table of recent messages, by
// their op and bytes, least recently used out.
type msgTable struct {
	seed  maphash.Seed
	sets  [msgSets][msgWays]msgSlot
	clock uint64
	// once holds the hashes of bytes seen once, in sets of four (so
	// that two messages of one object whose hashes meet do not keep
	// forgetting each other): bytes enter the table the second time
	// they come.
	once [msgOnceSets]onceSet
	// shared are the values handed to a second object, by address, for a
	// Sizer (a direct-mapped table of recent ones): it keeps them alive
	// once the table has let go of them, and SharedBytes counts them.
	shared  [msgShared]sharedMsg
	buf     []byte // where a value is encoded to be checked
	written uint64 // values found changed since they were handed out
}

// msgSlot is a message the table remembers: the bytes b of a field of o,
// and p, the value decoded from them, or nil if they do not encode back
// to themselves (decoded for each object, never shared).
type msgSlot struct {
	o    *op
	b    []byte
	p    unsafe.Pointer
	used uint64 // the clock when last found or put; 0: empty
}

// sharedMsg is a value handed to a second object: p, of o's pointed-at
// type.
type sharedMsg struct {
	p unsafe.Pointer
	o *op
}

const (
	msgSetBits  = 8
	msgSets     = 1 << msgSetBits
	msgWays     = 4
	msgOnceSets = 1 << 10 // of four hashes
	msgShared   = 1 << 11
	msgMaxLen   = 512 // longer messages are decoded for each object
)

func newMsgTable() *msgTable { return &msgTable{seed: maphash.MakeSeed()} }

// sharedMsgSlot is where the value at p is in shared.
func sharedMsgSlot(p unsafe.Pointer) uint64 {
	return uint64(uintptr(p)) >> 4 * 0x9e3779b97f4a7c15 >> 53 & (msgShared - 1)
}

// holds reports whether p is a value the table handed to more than one
// object: one that objects share.
func (t *msgTable) holds(p unsafe.Pointer) bool {
	return t != nil && p != nil && t.shared[sharedMsgSlot(p)].p == p
}

// sharedMessage decodes v, the bytes of the pointed-at message of o, into
// the pointer at ptr, which is nil: the value remembered for v if there is
// one, else a new value, remembered if v has come before. It returns false
// if it did neither, for the caller to decode v as usual.
func (s *state) sharedMessage(v []byte, ptr unsafe.Pointer, o *op) (bool, error) {
	t := s.msgs
	h := (maphash.Bytes(t.seed, v) ^ uint64(uintptr(unsafe.Pointer(o)))*0x9e3779b97f4a7c15) | 1 // never 0, for once
	set := &t.sets[h>>(64-msgSetBits)]
	t.clock++
	oldest := &set[0]
	for w := range set {
		sl := &set[w]
		if sl.used < oldest.used {
			oldest = sl
		}
		if sl.used == 0 || sl.o != o || !bytes.Equal(sl.b, v) {
			continue
		}
		if sl.p == nil {
			sl.used = t.clock
			return false, nil // they do not encode back to themselves
		}
		if t.encodes(sl.p, o, v) {
			*(*unsafe.Pointer)(ptr) = sl.p
			sl.used = t.clock
			t.shared[sharedMsgSlot(sl.p)] = sharedMsg{sl.p, o}
			return true, nil
		}
		t.written++ // written to through an object: decoded anew
		*sl = msgSlot{b: sl.b[:0]}
		oldest = sl
		break
	}
	if !t.once[h>>1&(msgOnceSets-1)].seenBefore(h) {
		return false, nil
	}
	p := unsafe_New(o.elemType)
	*(*unsafe.Pointer)(ptr) = p
	outer := s.notShared // that of a map or a message whose value holds this one
	s.notShared = false
	err := s.message(v, p, o.plan)
	shareable := !s.notShared
	s.notShared = outer || s.notShared
	if err != nil || !shareable {
		return true, err
	}
	sl := oldest
	*sl = msgSlot{o: o, b: append(sl.b[:0], v...), used: t.clock}
	if t.encodes(p, o, v) {
		sl.p = p
	}
	return true, nil
}

// encodes reports whether the value at p, of o's pointed-at type, encodes
// to b.
func (t *msgTable) encodes(p unsafe.Pointer, o *op, b []byte) bool {
	m := asSizedMarshaler(o.mtab, p)
	n := m.Size()
	if n != len(b) {
		return false
	}
	if cap(t.buf) < n {
		t.buf = make([]byte, max(n, 256))
	}
	w, err := m.MarshalToSizedBuffer(t.buf[:n])
	return err == nil && w == n && bytes.Equal(t.buf[:n], b)
}

// mergeCopy returns a copy of the value at p, of o's pointed-at type, that
// decoding can merge into without writing into what the copy shares with
// it: its slices (there and in the structs it holds) are cut to their
// length, so that an append copies them; its pointers and maps are copied
// by the decoding that would write through them.
func mergeCopy(p unsafe.Pointer, o *op) unsafe.Pointer {
	t := o.typ.Elem()
	q := unsafe_New(o.elemType)
	reflect.NewAt(t, q).Elem().Set(reflect.NewAt(t, p).Elem())
	if o.plan != nil {
		clipSlices(q, o.plan)
	}
	return q
}

// clipSlices cuts the capacity of the slices of the struct at p, of plan
// x, and of the structs it holds, to their length.
func clipSlices(p unsafe.Pointer, x *plan) {
	for _, o := range x.byNum {
		if o == nil {
			continue
		}
		switch o.kind {
		case opRepeated:
			h := (*sliceHeader)(at(p, o.off))
			h.cap = h.len
		case opMessage:
			clipSlices(at(p, o.off), o.plan)
		}
	}
}

// replacing are the types that decode themselves by replacing the value
// they decode into, never writing into memory it points at.
var replacing = map[reflect.Type]bool{
	timeType:                              true,
	reflect.TypeFor[metav1.MicroTime]():   true,
	quantityType:                          true,
	reflect.TypeFor[intstr.IntOrString](): true,
}

// markMessageSharing sets, on the ops reachable from x, copyOnMerge (the
// pointers decoding copies before merging into them, when messages are
// shared) and msgShare (the pointed-at messages shared).
func markMessageSharing(x *plan) {
	safe := map[*plan]bool{}
	var safePlan func(*plan) bool
	safeOp := func(o *op) bool {
		switch o.kind {
		case opScalar:
			return o.sk != reflect.Slice || o.shared
		case opPtrScalar, opMap:
			return true // a new pointer each time; a map is copied before a merge
		case opMessage:
			return safePlan(o.plan)
		case opPtrMessage:
			return o.ptrShare == shareFields || o.copyOnMerge
		case opUnmarshal:
			return replacing[o.typ]
		case opPtrUnmarshal:
			return replacing[o.typ.Elem()]
		case opRepeated:
			return true // elements are decoded into new slots; an append copies a clipped slice
		}
		return false
	}
	safePlan = func(p *plan) bool {
		if ok, seen := safe[p]; seen {
			return ok // a recursive type: not shared
		}
		safe[p] = false
		ok := true
		for _, o := range p.byNum {
			if o == nil {
				continue
			}
			if o.kind == opPtrMessage && o.ptrShare == shareNone {
				o.copyOnMerge = safePlan(o.plan)
			}
			if e := o.elem; e != nil && e.plan != nil { // a repeated field's or a map's values
				safe := safePlan(e.plan)
				if o.kind == opRepeated && e.kind == opPtrMessage && e.ptrShare == shareNone {
					e.copyOnMerge = safe
					markShare(e)
				}
			}
			markShare(o)
			if !safeOp(o) {
				ok = false
			}
		}
		safe[p] = ok
		return ok
	}
	safePlan(x)
}

// markShare marks o, a pointer to a message that copies before a merge,
// as shared if its type has the generated encoder the table checks values
// with.
func markShare(o *op) {
	if o.kind != opPtrMessage || !o.copyOnMerge || o.plan.meta {
		return
	}
	if tab := ifaceTab[sizedMarshaler](o.typ.Elem()); tab != nil {
		o.mtab, o.msgShare = tab, true
	}
}

// asSizedMarshaler returns p, a *T, as a sizedMarshaler, given the table
// of *T.
func asSizedMarshaler(tab, p unsafe.Pointer) sizedMarshaler {
	var m sizedMarshaler
	w := (*[2]unsafe.Pointer)(unsafe.Pointer(&m))
	w[0], w[1] = tab, p
	return m
}

// quantityHoldsDecAt reports whether the Quantity at p holds an inf.Dec.
func quantityHoldsDecAt(p unsafe.Pointer) bool {
	return quantityHoldsDec(reflect.NewAt(quantityType, p).Elem())
}
