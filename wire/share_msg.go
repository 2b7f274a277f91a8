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
// checks a value each time it would hand it out again, by the hash of the
// memory it reaches, taken when it was remembered (share_sum.go; a type
// it cannot hash so, by encoding the value with its type's generated
// encoder and comparing with the bytes it was decoded from): a value found
// changed is dropped, and counted with the maps found written
// (Decoder.SharedMapsWritten). A value enters the table only if it
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
	// Sizer (a four-way table of those handed out most, see noteShared):
	// it keeps them alive once the table has let go of them, and
	// SharedBytes counts them.
	shared  [msgShared / 4][4]sharedMsg
	buf     []byte // where a value is encoded to be checked
	written uint64 // values found changed since they were handed out
}

// msgSlot is a message the table remembers: the bytes b of a field of o,
// and p, the value decoded from them, or nil if they do not encode back
// to themselves (decoded for each object, never shared). For a run of a
// repeated field (sharedRun), p is the array of its n elements.
type msgSlot struct {
	o    *op
	b    []byte
	p    unsafe.Pointer
	n    int
	used uint64 // the clock when last found or put; 0: empty
	sum  uint64 // with o.sum, the hash of p's memory (see share_sum.go)
}

// sharedMsg is a value handed to a second object: p, of o's pointed-at
// type, or the array of n elements of o's slice type; uses counts its
// hand-outs since it was noted, less what its set took away (see
// noteShared).
type sharedMsg struct {
	p    unsafe.Pointer
	o    *op
	n    int32
	uses uint32
}

const (
	msgSetBits  = 8
	msgSets     = 1 << msgSetBits
	msgWays     = 4
	msgOnceSets = 1 << 10 // of four hashes
	// msgSharedBits sizes shared: 2,048 sets of four. At 512 sets, an
	// informer of 2,000 realistic Pods had 1,796 of the 2,048 entries in
	// use, and a value its set let go of was counted by a Sizer for each
	// object holding it (StoreBytes 1.11-1.17x the heap against the real
	// server, by where the values were allocated).
	msgSharedBits = 11
	msgShared     = 4 << msgSharedBits
	msgMaxLen     = 512 // longer messages are decoded for each object
)

func newMsgTable() *msgTable { return &msgTable{seed: maphash.MakeSeed()} }

// sharedMsgSet is the set of shared where the value at p is.
func (t *msgTable) sharedMsgSet(p unsafe.Pointer) *[4]sharedMsg {
	return &t.shared[uint64(uintptr(p))>>4*0x9e3779b97f4a7c15>>(64-msgSharedBits)]
}

// holds reports whether p is a value the table handed to more than one
// object: one that objects share.
func (t *msgTable) holds(p unsafe.Pointer) bool {
	if t == nil || p == nil {
		return false
	}
	for _, m := range t.sharedMsgSet(p) {
		if m.p == p {
			return true
		}
	}
	return false
}

// noteShared records m, a value handed to one more object, first in its
// set of shared. A value not in the set takes the place of the one handed
// out least (the least recent of those), once that one was handed out no
// more often than values came that would have taken its place; until
// then each that comes takes one from its count, and is not kept. So a
// value many objects hold (a ReplicaSet's container, handed out for each
// of its Pods) stays while values two or three objects hold come and go,
// and one whose hand-outs stopped (its ReplicaSet replaced) gives way in
// time. A set kept its most recent four until 2026-12-06: a list of
// 10,000 realistic Pods in order of name, a ReplicaSet's together, noted
// about one value per Pod that only its neighbours in time share (its
// conditions' times), which pushed the first ReplicaSets' values out, and
// a Sizer counted those for each of their Pods (StoreBytes 1.15x the heap
// in process).
func (t *msgTable) noteShared(m sharedMsg) {
	set := t.sharedMsgSet(m.p)
	k := -1
	for i := range set {
		if set[i].p == m.p {
			k = i
			break
		}
	}
	if k >= 0 {
		m = set[k]
		m.uses += min(1, ^m.uses) // saturates
	} else {
		k = len(set) - 1
		for i := k - 1; i >= 0; i-- {
			if set[i].uses < set[k].uses {
				k = i
			}
		}
		if set[k].uses > 0 {
			set[k].uses--
			return
		}
		m.uses = 1
	}
	copy(set[1:k+1], set[:k])
	set[0] = m
}

// slot returns the hash of v, the bytes of a field of o, and the slot
// that remembers them, marked used (nil if none does), with the least
// recently used slot of their set.
func (t *msgTable) slot(o *op, v []byte) (h uint64, found, oldest *msgSlot) {
	h = (maphash.Bytes(t.seed, v) ^ uint64(uintptr(unsafe.Pointer(o)))*0x9e3779b97f4a7c15) | 1 // never 0, for once
	set := &t.sets[h>>(64-msgSetBits)]
	t.clock++
	oldest = &set[0]
	for w := range set {
		sl := &set[w]
		if sl.used < oldest.used {
			oldest = sl
		}
		if sl.used != 0 && sl.o == o && bytes.Equal(sl.b, v) {
			sl.used = t.clock
			return h, sl, oldest
		}
	}
	return h, nil, oldest
}

// drop empties sl, whose value was found written to through an object
// (counted), and returns it, for the bytes to be decoded anew into it.
func (t *msgTable) drop(sl *msgSlot) *msgSlot {
	t.written++
	*sl = msgSlot{b: sl.b[:0]}
	return sl
}

// sharedMessage decodes v, the bytes of the pointed-at message of o, into
// the pointer at ptr, which is nil: the value remembered for v if there is
// one, else a new value, remembered if v has come before. It returns false
// if it did neither, for the caller to decode v as usual.
func (s *state) sharedMessage(v []byte, ptr unsafe.Pointer, o *op) (bool, error) {
	t := s.msgs
	h, sl, oldest := t.slot(o, v)
	if sl != nil {
		if sl.p == nil {
			return false, nil // they do not encode back to themselves
		}
		if t.unchanged(sl, o, v) {
			*(*unsafe.Pointer)(ptr) = sl.p
			t.noteShared(sharedMsg{p: sl.p, o: o})
			return true, nil
		}
		oldest = t.drop(sl)
	}
	if !t.once[h>>1&(msgOnceSets-1)].seenBefore(h) {
		return false, nil
	}
	p := unsafe_New(o.elemType)
	*(*unsafe.Pointer)(ptr) = p
	outer := s.notShared // that of a map or a message whose value holds this one
	s.notShared = false
	// A value the table keeps makes its strings of its own, not over a
	// compact record's memory, which it would keep alive (see aliases).
	alias := s.alias
	s.alias = nil
	err := s.message(v, p, o.plan)
	s.alias = alias
	shareable := !s.notShared
	s.notShared = outer || s.notShared
	if err != nil || !shareable {
		return true, err
	}
	t.remember(oldest, o, v, p, 0)
	return true, nil
}

// remember keeps v, the bytes of a field of o, in sl with p, the value
// decoded from them (the array of n elements of a run): handed out for
// those bytes from now on if it encodes back to them, else never, the
// bytes then decoded for each object.
func (t *msgTable) remember(sl *msgSlot, o *op, v []byte, p unsafe.Pointer, n int) {
	*sl = msgSlot{o: o, b: append(sl.b[:0], v...), used: t.clock}
	if o.kind == opRepeated && t.encodesRun(p, o, v) || o.kind != opRepeated && t.encodes(p, o, v) {
		sl.p, sl.n = p, n
		if o.sum != nil {
			sl.sum = t.valueSum(o, p, n)
		}
	}
}

// unchanged reports whether the value sl remembers, of o, is as it was
// remembered for v, its bytes: its memory hashes as it did then, or,
// for a type whose memory the table does not hash, it encodes to v.
func (t *msgTable) unchanged(sl *msgSlot, o *op, v []byte) bool {
	switch {
	case o.sum != nil:
		return t.valueSum(o, sl.p, sl.n) == sl.sum
	case o.kind == opRepeated:
		return t.encodesRun(sl.p, o, v)
	}
	return t.encodes(sl.p, o, v)
}

// Runs of a repeated field of messages are shared as a pointed-at
// message is: a container's ports and env, a Pod's tolerations, its owner
// references. A run is the elements that come one after another (as the
// generated encoders write them all); the slice handed out has its length
// as its capacity, so that a later element of the field (one that comes
// after another field, or in a merge) is appended to a copy, and the
// decoder never writes an element once it is decoded. A run is checked as
// a pointed-at message is, its elements' memory hashed as one value.

// sharedRun decodes the run of elements of o, a repeated field of
// messages, that starts with the field at b[i:] (its tag), into the slice
// at ptr, which is empty: the elements remembered for the run's bytes if
// there are some, else new ones, remembered if the bytes have come
// before. It returns the index after the run, or false, with nothing done,
// for a run longer than msgMaxLen or bytes it cannot read, for the caller
// to decode as usual.
func (s *state) sharedRun(b []byte, i int, ptr unsafe.Pointer, o *op) (int, bool, error) {
	n, j := 0, i
	for j < len(b) {
		num, typ, next, err := tag(b, j)
		if err != nil || num != o.num || typ != wireBytes {
			break // the run ends; the caller reads what follows
		}
		_, end, err := lengthDelimited(b, next)
		if err != nil || end-i > msgMaxLen {
			return 0, false, nil
		}
		n, j = n+1, end
	}
	if n == 0 {
		return 0, false, nil
	}
	run := b[i:j]
	t := s.msgs
	h, sl, oldest := t.slot(o, run)
	if sl != nil {
		if sl.p == nil {
			return j, true, s.decodeRun(run, n, ptr, o)
		}
		if t.unchanged(sl, o, run) {
			*(*sliceHeader)(ptr) = sliceHeader{data: sl.p, len: sl.n, cap: sl.n}
			t.noteShared(sharedMsg{p: sl.p, o: o, n: int32(sl.n)})
			return j, true, nil
		}
		oldest = t.drop(sl)
	}
	if !t.once[h>>1&(msgOnceSets-1)].seenBefore(h) {
		return j, true, s.decodeRun(run, n, ptr, o)
	}
	outer := s.notShared // that of a map or a message whose value holds this run
	s.notShared = false
	alias := s.alias // as for sharedMessage: the strings of a kept run are its own
	s.alias = nil
	err := s.decodeRun(run, n, ptr, o)
	s.alias = alias
	shareable := !s.notShared
	s.notShared = outer || s.notShared
	if err != nil || !shareable {
		return j, true, err
	}
	t.remember(oldest, o, run, (*sliceHeader)(ptr).data, n)
	return j, true, nil
}

// decodeRun decodes run, n elements of o, a repeated field of messages,
// each with its tag, into a new slice of n at ptr.
func (s *state) decodeRun(run []byte, n int, ptr unsafe.Pointer, o *op) error {
	data := unsafe_NewArray(o.elemType, n)
	*(*sliceHeader)(ptr) = sliceHeader{data: data, len: n, cap: n}
	for k, j := 0, 0; k < n; k++ {
		_, _, next, err := tag(run, j)
		if err != nil {
			return err
		}
		start, end, err := lengthDelimited(run, next)
		if err != nil {
			return err
		}
		if err := s.message(run[start:end], unsafe.Add(data, uintptr(k)*o.size), o.elem.plan); err != nil {
			return err
		}
		j = end
	}
	return nil
}

// encodesRun reports whether the elements at p, of o's slice type,
// encode to the elements of run, their tags aside.
func (t *msgTable) encodesRun(p unsafe.Pointer, o *op, run []byte) bool {
	for k, j := 0, 0; j < len(run); k++ {
		_, _, next, err := tag(run, j)
		if err != nil {
			return false
		}
		start, end, err := lengthDelimited(run, next)
		if err != nil || !t.encodes(unsafe.Add(p, uintptr(k)*o.size), o, run[start:end]) {
			return false
		}
		j = end
	}
	return true
}

// encodes reports whether the value at p, of o's pointed-at type (of its
// element type for a repeated field), encodes to b.
//
// It encodes the value into a buffer of len(b) without sizing it first,
// which would walk the value twice: the generated encoders write from the
// end of the buffer back, so a value that encodes shorter writes fewer
// bytes, and one that encodes longer runs off the buffer's start, a panic
// recovered here as a value that does not encode to b.
func (t *msgTable) encodes(p unsafe.Pointer, o *op, b []byte) (same bool) {
	n := len(b)
	if cap(t.buf) < n {
		t.buf = make([]byte, max(n, 256))
	}
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	w, err := asSizedMarshaler(o.mtab, p).MarshalToSizedBuffer(t.buf[:n])
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
				if o.kind == opRepeated && e.kind == opMessage && !e.plan.meta {
					markRunShare(o)
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
		o.mtab, o.msgShare, o.sum = tab, true, sumPlan(o.typ.Elem())
	}
}

// markRunShare marks o, a repeated field of messages, as shared by runs if
// its element type has the generated encoder the table checks elements
// with, and holds no Quantity but behind a pointer. Whatever the element's
// fields, the decoder writes no element it has decoded: a later element
// is appended to a copy of the run. The rule dates from when each
// hand-out encoded the run again, and a Quantity's encoder makes its
// string anew (a Quantity in a map's value holds none): a run of
// containers, each with its resources, cost more to check than to decode.
// Hand-outs are checked by hash now, and the rule was tried without
// (2026-12-06): the realistic Pods' heap moved by less than 0.3%
// (BenchmarkRealisticPodHeap; their containers are longer than msgMaxLen)
// and the small Pods' decoding got slower (BenchmarkDecodePod: their
// containers differ per Pod), so it stays. A Quantity behind a pointer
// (an env var's resourceFieldRef) is rare enough to pay for where it is.
func markRunShare(o *op) {
	if quantityInline(o.elem.plan, map[*plan]bool{}) {
		return
	}
	if tab := ifaceTab[sizedMarshaler](o.typ.Elem()); tab != nil {
		o.mtab, o.runShare, o.sum = tab, true, sumPlan(o.typ.Elem())
	}
}

// quantityInline reports whether a message of plan x holds Quantities
// other than behind a pointer: in its fields, or in the messages, slices
// and maps they hold by value.
func quantityInline(x *plan, seen map[*plan]bool) bool {
	if x == nil || seen[x] {
		return false
	}
	seen[x] = true
	for _, o := range x.byNum {
		for ; o != nil && o.kind != opPtrMessage && o.kind != opPtrUnmarshal; o = o.elem {
			if o.typ == quantityType || quantityInline(o.plan, seen) {
				return true
			}
		}
	}
	return false
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
