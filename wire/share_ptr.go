package wire

import (
	"encoding/binary"
	"reflect"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pointers objects share. A managedFields entry points at a metav1.Time
// and a metav1.FieldsV1 of its own, two small blocks that every decoded
// version of an object allocates again, although most entries of an update
// are the previous version's unchanged, and the time of an entry is the
// second its manager wrote in, which the objects a controller or the
// kubelet writes in one second all carry. A decoder with map sharing hands
// them out as it does maps: equal bytes on the wire give the very pointer
// it made for them before, which objects, read-only, share.

// ptrShare says which pointed-at type an op shares (see op.ptrShare).
type ptrShare uint8

const (
	shareNone   ptrShare = iota
	shareTime            // *metav1.Time: by its seconds (see timeTable)
	shareFields          // *metav1.FieldsV1: the bytes table's slot holds it
)

var timeType = reflect.TypeFor[metav1.Time]()

// ptrShareOf returns what a pointer to elem shares.
func ptrShareOf(elem reflect.Type) ptrShare {
	switch elem {
	case timeType:
		return shareTime
	case fieldsV1Type:
		return shareFields
	}
	return shareNone
}

// timeTable is a direct-mapped table of recent times, by their seconds
// (metav1.Time keeps no more: its protobuf decoding drops the nanoseconds).
// A slot's hit says that its time was handed to a second object, which the
// Sizer then counts once, in SharedBytes, as the interner does strings.
type timeTable struct {
	slots [timeSlots]timeSlot
}

type timeSlot struct {
	sec int64
	p   *metav1.Time // nil: empty
	hit bool
}

const timeSlots = 1 << 9

func (t *timeTable) slot(sec int64) *timeSlot {
	return &t.slots[uint64(sec)*0x9e3779b97f4a7c15>>(64-9)&(timeSlots-1)]
}

// timeSeconds returns the seconds of the encoded metav1.Time v, the
// message Timestamp, when v holds its seconds (field 1) and at most its
// nanoseconds (field 2), which metav1.Time drops as it decodes: what the
// API server writes. Other encodings (no seconds, unknown fields) are
// decoded as they are, not shared.
func timeSeconds(v []byte) (int64, bool) {
	var sec uint64
	seen := false
	for i := 0; i < len(v); {
		tag := v[i]
		if tag != 1<<3|wireVarint && tag != 2<<3|wireVarint {
			return 0, false
		}
		x, n := binary.Uvarint(v[i+1:])
		if n <= 0 {
			return 0, false
		}
		if tag == 1<<3|wireVarint {
			sec, seen = x, true // the last one, as protobuf merges
		}
		i += 1 + n
	}
	return int64(sec), seen
}

// time returns the shared time of the encoded metav1.Time v, or nil if
// it has none: the caller then decodes v into a new Time, and remember
// keeps it.
func (t *timeTable) time(v []byte) (*metav1.Time, int64, bool) {
	sec, ok := timeSeconds(v)
	if !ok {
		return nil, 0, false
	}
	if sl := t.slot(sec); sl.p != nil && sl.sec == sec {
		sl.hit = true
		return sl.p, sec, true
	}
	return nil, sec, true
}

// remember keeps p, the time of seconds sec, in place of its slot's.
func (t *timeTable) remember(sec int64, p *metav1.Time) {
	*t.slot(sec) = timeSlot{sec: sec, p: p}
}

// holds reports whether p is the time the table holds for its seconds and
// has handed to a second object.
func (t *timeTable) holds(p *metav1.Time) bool {
	if t == nil {
		return false
	}
	sl := t.slot(p.Unix())
	return sl.hit && sl.p == p
}

// heldBytes returns the bytes of the table and of the times objects share.
func (t *timeTable) heldBytes() int {
	n := allocBytes(int(unsafe.Sizeof(t.slots)))
	for i := range t.slots {
		if t.slots[i].hit {
			n += allocBytes(int(unsafe.Sizeof(metav1.Time{})))
		}
	}
	return n
}

// fieldsRaw returns the bytes of the encoded metav1.FieldsV1 v, when v is
// its field Raw alone, once.
func fieldsRaw(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != 1<<3|wireBytes {
		return nil, false
	}
	start, end, err := lengthDelimited(v, 1)
	if err != nil || end != len(v) {
		return nil, false
	}
	return v[start:end], true
}

// fieldsV1 returns a FieldsV1 of raw's bytes: the one the table shares
// when it holds them (made the first time it is asked for), or, when it
// does not, one of the object's own, whose bytes get enters in the table
// if it saw them before, to be shared from then on.
func (t *bytesTable) fieldsV1(raw []byte) *metav1.FieldsV1 {
	v, slot := t.getSlot(raw)
	if slot == nil {
		return newFieldsV1(v)
	}
	if slot.fv == nil {
		slot.fv = newFieldsV1(v)
	}
	return slot.fv
}

// newFieldsV1 returns a FieldsV1 of raw itself: NewFieldsV1 and
// SetRawBytes would copy it.
func newFieldsV1(raw []byte) *metav1.FieldsV1 {
	//lint:ignore SA1019 the slice itself, shared or the object's own
	return &metav1.FieldsV1{Raw: raw}
}

// holdsFieldsV1 reports whether f is a FieldsV1 the table shares: the one
// of the slot that holds its bytes.
func (t *bytesTable) holdsFieldsV1(f *metav1.FieldsV1) bool {
	slot := t.holding(f.GetRawBytes())
	return slot != nil && slot.fv == f
}
