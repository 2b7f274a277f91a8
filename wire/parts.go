package wire

import (
	"bytes"
	"hash/maphash"
	"reflect"
	"sync"
	"unsafe"
	"weak"
)

// Most watch events of a busy resource change a small part of an object:
// a kubelet reports a Pod's status, and the Pod's spec, often most of its
// bytes besides its managedFields, comes again as it was. A Source with
// SourceOptions.Previous decodes such an update without its unchanged
// parts. A part is a top-level field of the object that holds one message
// and is not its metadata (a Pod's spec and status); for each object an
// ADDED or MODIFIED event brought, the Source remembers the object it
// decoded and the hash of each part's bytes. When the next MODIFIED or
// DELETED event of that object comes while the cache still holds that
// very object (Previous returns it), a part whose bytes hash as before is
// not decoded: the new object takes the cached object's value of the
// field, sharing what it points to, as a relist shares a whole unchanged
// object. The metadata, whose resourceVersion changes with every event,
// is always decoded. A ReplicaSet's new Pod is added, updated by the
// kubelet (its spec as it was added) and deleted (its spec and status
// as last updated): only the add decodes whole.
//
// Listed objects are not remembered, nor the ADDED events of a
// watch-list's initial state, which are a list: hashing the parts of
// every object at the start costs the start, and an entry per object
// costs memory, for objects most of which may never change. When the
// first update of such an object comes, the cached object's parts are
// hashed then, from their bytes as the generated encoders write them
// again (derivedParts): the API server writes an object's protobuf with
// those encoders, so a part it did not change encodes alike. Only a part
// whose encoded size is the new bytes' is encoded; a decoder of a
// projection, which has no encoders, decodes such an update whole.

// maxParts is the number of parts of an object the Source remembers; a
// further one is decoded every time.
const maxParts = 3

// part is the hash of the bytes of one part of an object: its field
// number, the length of its value, and the value's hash.
type part struct {
	num  int32
	n    uint32
	hash uint64
}

// parts are the parts of one object, in the order of its bytes; an
// unused one has num 0.
type parts [maxParts]part

// reuses reports whether old has p's part, hashed alike.
func (old *parts) reuses(p part) bool {
	for _, q := range old {
		if q.num == p.num {
			return q == p
		}
	}
	return false
}

// hasParts reports whether objects decoded with x have any part: a
// message field at the top level other than their metadata.
func hasParts(x *plan) bool {
	for _, o := range x.byNum {
		if isPart(o) {
			return true
		}
	}
	return false
}

// isPart reports whether the field of o is a part.
func isPart(o *op) bool {
	return o != nil && (o.kind == opMessage || o.kind == opPtrMessage) && !o.plan.meta
}

// span is where a part's field lies in an object's bytes, tag included.
type span struct{ start, end int }

// scanParts reads the top-level fields of b and returns the parts it has,
// with their spans, or false if it cannot tell them: bytes it cannot
// read, which the decoder then reports, or a part that comes twice
// (protobuf merges the two, which a copied value would not).
func (d *Decoder[PP]) scanParts(b []byte) (ps parts, spans [maxParts]span, ok bool) {
	np := 0
	for i := 0; i < len(b); {
		num, typ, next, err := tag(b, i)
		if err != nil {
			return ps, spans, false
		}
		end, err := skip(b, next, typ)
		if err != nil {
			return ps, spans, false
		}
		if o := d.plan.lookup(num); isPart(o) && typ == wireBytes {
			for _, p := range ps[:np] {
				if p.num == num {
					return ps, spans, false
				}
			}
			if np < maxParts {
				val, _, err := lengthDelimited(b, next)
				if err != nil {
					return ps, spans, false
				}
				ps[np] = part{num: num, n: uint32(end - val), hash: maphash.Bytes(d.seed, b[val:end])}
				spans[np] = span{i, end}
				np++
			}
		}
		i = end
	}
	return ps, spans, true
}

// protobufParts decodes the bare protobuf message b into a new P, as
// Protobuf does, and returns the hashes of its parts. When prev, a P
// decoded by d from bytes whose parts hashed as old, is not nil, a part of
// b that hashes as its namesake in old is not decoded: the new P's field
// is a copy of prev's. With prev and no old, the parts of prev are
// derived, where d can (derivedParts).
func (d *Decoder[PP]) protobufParts(b []byte, prev unsafe.Pointer, old *parts) (PP, parts, error) {
	if d.plan == nil || !d.parts {
		p, err := d.Protobuf(b)
		return p, parts{}, err
	}
	ps, spans, ok := d.scanParts(b)
	if !ok {
		p, err := d.Protobuf(b)
		return p, parts{}, err
	}
	var reused [maxParts]bool
	some := false
	if prev != nil && old == nil && d.derive {
		if derived, ok := d.derivedParts(prev, &ps); ok {
			old = &derived
		}
	}
	if prev != nil && old != nil {
		for i, p := range ps {
			if p.num != 0 && old.reuses(p) {
				reused[i], some = true, true
			}
		}
	}
	if !some {
		p, err := d.Protobuf(b)
		return p, ps, err
	}
	p, err := d.decodeReusing(b, nil, prev, &ps, &spans, &reused)
	if err != nil {
		return p, parts{}, err
	}
	return p, ps, nil
}

// partsEncode reports whether the parts of objects decoded with x have
// the generated protobuf encoders (a Size and a MarshalToSizedBuffer on
// the pointer), as the built-in types' have.
func partsEncode(x *plan) bool {
	for _, o := range x.byNum {
		if !isPart(o) {
			continue
		}
		t := o.typ
		if o.kind == opPtrMessage {
			t = t.Elem()
		}
		if !reflect.PointerTo(t).Implements(protoSizerType) {
			return false
		}
	}
	return true
}

var protoSizerType = reflect.TypeFor[protoSizer]()

// partBufs are the buffers derivedParts encodes a part into.
var partBufs = sync.Pool{New: func() any { return new([]byte) }}

// derivedParts returns the parts of the P at prev, an object d decoded,
// that ps, the parts of an object's new bytes, names: each hashed as
// scanParts hashes bytes, from its value encoded again by its generated
// encoder. A part prev lacks, or whose encoded size differs from the new
// bytes' (so it changed), is left out unencoded. It needs d.derive, and
// prev decoded from protobuf: encoding reads prev and writes nothing into
// it only if its Quantities hold their strings, as the protobuf decoding
// makes them (cacheString); once d has decoded JSON, it derives nothing.
// An object d did not decode at all (one a program put in a cache itself)
// is outside what this assumes.
func (d *Decoder[PP]) derivedParts(prev unsafe.Pointer, ps *parts) (old parts, ok bool) {
	if d.decodedJSON.Load() {
		return old, false
	}
	buf := partBufs.Get().(*[]byte)
	defer partBufs.Put(buf)
	n := 0
	for _, p := range ps {
		if p.num == 0 {
			continue
		}
		o := d.plan.lookup(p.num)
		v, t := at(prev, o.off), o.typ
		if o.kind == opPtrMessage {
			if v = *(*unsafe.Pointer)(v); v == nil {
				continue
			}
			t = t.Elem()
		}
		m := reflect.NewAt(t, v).Interface().(protoSizer)
		size := m.Size()
		if size != int(p.n) {
			continue
		}
		if cap(*buf) < size {
			*buf = make([]byte, size)
		}
		b := (*buf)[:size]
		if w, err := m.MarshalToSizedBuffer(b); err != nil || w != size {
			continue
		}
		old[n] = part{num: p.num, n: uint32(size), hash: maphash.Bytes(d.seed, b)}
		n++
	}
	return old, n > 0
}

// decodeReusing decodes b, whose parts are ps at spans, into a new P, but
// for the parts reused names: the new P's fields of those are copies of
// the P's at prev. With a, strings alias the memory a maps b to.
func (d *Decoder[PP]) decodeReusing(b []byte, a *aliases, prev unsafe.Pointer, ps *parts, spans *[maxParts]span, reused *[maxParts]bool) (PP, error) {
	var zero PP
	p := unsafe_New(d.elemType)
	if err := d.decodeAround(b, p, a, false, spans, reused); err != nil {
		return zero, err
	}
	for i, r := range reused {
		if r {
			o := d.plan.lookup(ps[i].num)
			reflect.NewAt(o.typ, at(p, o.off)).Elem().Set(reflect.NewAt(o.typ, at(prev, o.off)).Elem())
		}
	}
	return d.cast(p), nil
}

// recordBeside decodes b, a record's bytes that a maps to its memory, as
// record does, but for the parts whose bytes nb, the bytes of the P at
// like, has alike: the new P takes like's value of those fields. A part
// is compared by its bytes, not by hash: nothing here says that like and
// b are versions of one object. like is not nil.
func (d *Decoder[PP]) recordBeside(b []byte, a *aliases, nb []byte, like unsafe.Pointer) (PP, error) {
	if d.plan == nil {
		return d.record(b, a, false)
	}
	ps, spans, ok := d.scanParts(b)
	if !ok {
		return d.record(b, a, false)
	}
	nps, nspans, ok := d.scanParts(nb)
	if !ok {
		return d.record(b, a, false)
	}
	var reused [maxParts]bool
	some := false
	for i, p := range ps {
		if p.num == 0 {
			continue
		}
		for j, q := range nps {
			if q.num == p.num {
				if q == p && bytes.Equal(b[spans[i].start:spans[i].end], nb[nspans[j].start:nspans[j].end]) {
					reused[i], some = true, true
				}
				break
			}
		}
	}
	if !some {
		return d.record(b, a, false)
	}
	return d.decodeReusing(b, a, like, &ps, &spans, &reused)
}

// decodeAround decodes b into the P at p, but for the spans of the parts
// reused says are not to be decoded (nil: all of b); with a, strings alias
// the memory a maps b to, where they can; with own, it shares nothing but
// strings with other objects (see record). The fields of a message are
// independent, so the bytes between those spans decode as parts of one
// message.
func (d *Decoder[PP]) decodeAround(b []byte, p unsafe.Pointer, a *aliases, own bool, spans *[maxParts]span, reused *[maxParts]bool) (err error) {
	if d.plan == nil {
		return d.noProtobuf()
	}
	defer recoverMalformed(&err)
	d.mu.Lock()
	defer d.mu.Unlock()
	s := state{strs: d.strs, filter: d.opts.Annotations, alias: a}
	if !own { // see record
		s.maps, s.bytes, s.times, s.share, s.msgs = d.maps, d.bytes, d.times, d.share, d.msgs
	}
	from := 0
	if reused != nil {
		for i, sp := range spans {
			if !reused[i] {
				continue
			}
			if err := s.message(b[from:sp.start], p, d.plan); err != nil {
				return err
			}
			from = sp.end
		}
	}
	return s.message(b[from:], p, d.plan)
}

// partsTable is what a Source remembers of the objects MODIFIED events
// brought: by key (namespace/name), the object it decoded last and the
// hashes of its parts. An entry holds its object, which is the cached one
// until the next update or delete; a DELETED event drops the entry, and a
// new list or watch-list start drops them all, so that an object deleted
// while no watch ran is not held past the next list.
//
// A weak table (SourceOptions.WeakPrevious) holds no object alive: its
// cache lets go of decoded objects at any time (a compact store's codec
// keeps a bounded number), and an entry dropped only by the next update
// or delete would keep one decoded object per updated key. Its entries
// point to their objects weakly; an entry whose object was collected is
// of no use (object returns nil, which is no cached object) and is
// dropped by the next sweep (see put), which comes after as many puts as
// the last one left entries (minSweep at least). Until 2026-12-06 a cleanup
// (runtime.AddCleanup) on each object dropped its entry: a cleanup
// registered at every update, and one run for every update's object
// collected, cost a compact store about 1.4% of its watch path's CPU.
type partsTable struct {
	mu   sync.Mutex
	m    map[string]*partsEntry
	weak bool
	// puts counts a weak table's puts since it last swept, swept is how
	// many entries that sweep left.
	puts, swept int
}

// minSweep is the fewest puts between two sweeps of a weak table.
const minSweep = 256

type partsEntry struct {
	key   string         // the map's key
	obj   unsafe.Pointer // the P decoded from the bytes parts hashed; nil in a weak table
	wp    weak.Pointer[byte]
	parts parts
}

// object returns the object of e, nil if a weak table's object was
// collected.
func (e *partsEntry) object() unsafe.Pointer {
	if e.obj != nil {
		return e.obj
	}
	return unsafe.Pointer(e.wp.Value())
}

func newPartsTable(weak bool) *partsTable {
	return &partsTable{m: map[string]*partsEntry{}, weak: weak}
}

// get returns the entry of key, a copy, and whether there is one.
func (t *partsTable) get(key []byte) (partsEntry, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[string(key)]
	if !ok {
		return partsEntry{}, false
	}
	return *e, true
}

// put records obj and its parts under key; an object without parts is
// forgotten instead.
func (t *partsTable) put(key []byte, obj unsafe.Pointer, ps parts) {
	if ps[0].num == 0 {
		t.forget(key)
		return
	}
	held, wp := obj, weak.Pointer[byte]{}
	if t.weak {
		held, wp = nil, weak.Make((*byte)(obj))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[string(key)] // no copy: the compiler reads key in place
	if !ok {
		e = &partsEntry{key: string(key)}
		t.m[e.key] = e
	}
	e.obj, e.wp, e.parts = held, wp, ps
	if t.weak {
		// A sweep after as many puts as the last one left entries costs
		// each put a constant share of it, and keeps the entries within
		// twice those it left, or minSweep more.
		if t.puts++; t.puts >= max(minSweep, t.swept) {
			t.sweepLocked()
		}
	}
}

// sweepLocked drops the entries whose objects were collected. The caller
// holds mu.
func (t *partsTable) sweepLocked() {
	for k, e := range t.m {
		if e.wp.Value() == nil {
			delete(t.m, k)
		}
	}
	t.puts, t.swept = 0, len(t.m)
}

// forget drops the entry of key.
func (t *partsTable) forget(key []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, string(key))
}

// clear drops every entry.
func (t *partsTable) clear() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.m)
	t.puts, t.swept = 0, 0
}

// appendRefKey appends the key of ref (namespace/name, or name) to dst.
func appendRefKey(dst []byte, ref ObjectRef) []byte {
	if len(ref.Namespace) > 0 {
		dst = append(append(dst, ref.Namespace...), '/')
	}
	return append(dst, ref.Name...)
}
