package wire

import (
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DecodedCacheSize is how many decoded objects the Compact of an informer
// keeps, the last ones read or written: about 5 MiB of Pods.
const DecodedCacheSize = 1024

// Compact keeps objects of a type P (PP is *P) at rest as Records, the
// encodings the API server sent or that Encode makes, with the runs of
// bytes objects have in common kept once (see Record), and decodes them
// back with its Decoder. It keeps the objects it decoded or encoded last,
// up to a number it is made with, so that two reads of a record soon after one
// another get one object: objects it hands out are shared, never to be
// modified. It is safe for concurrent use.
//
// A record decodes into an object equal, under go-cmp, to the one Protobuf
// or JSON would decode from the same bytes. The strings of an object
// decoded from protobuf are made over the record's memory rather than
// copied (see aliases): the object keeps the record's bytes alive for as
// long as it lives, also after the record has left the store. A type's
// protobuf encoding has no TypeMeta, so a protobuf record Encode makes
// remembers the TypeMeta its object had (a Compact keeps each one once),
// and the objects decoded from it carry it again; objects the API server
// sent in protobuf have none, and get none.
type Compact[PP any] struct {
	dec *Decoder[PP]
	// marshal is set when Encode writes protobuf: PP has the generated
	// encoder and dec a protobuf plan.
	marshal bool
	// labels is the op of ObjectMeta.Labels in dec's plan, for Labels;
	// nil if P has none.
	labels *op
	// trim cuts from a listed object's bytes what dec leaves out of
	// objects, so that its record holds only what a read returns; nil
	// when dec leaves nothing out.
	trim *trimmer

	mu    sync.Mutex // guards runs, split and adding to kinds
	runs  sharedRuns
	split splitter
	// kinds holds the TypeMetas of the objects Encode wrote in protobuf,
	// which a record's kind indexes: written under mu, copied on write.
	kinds atomic.Pointer[[]metav1.TypeMeta]

	// offered holds copies of the bytes watch events were decoded from
	// (Offer), by object, for Encode to make their records of; bounded by
	// maxOffers and maxOfferBytes.
	offerMu sync.Mutex
	offered offers
	// fromOffers counts the records Encode made of offered bytes.
	fromOffers atomic.Int64

	cache decodedCache
	bufs  sync.Pool // of *[]byte: buffers to put a record's encoding back together in
	// aliasBufs is of *aliases: buffers to put a protobuf record's
	// encoding back together in, to decode it.
	aliasBufs sync.Pool
}

// protoSizer is the generated protobuf encoder of the built-in types.
type protoSizer interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// NewCompact returns a Compact decoding with dec that caches up to cached
// decoded objects (DecodedCacheSize is the informers'). Objects of a type
// with a protobuf encoding (dec decodes protobuf, and PP has the generated
// encoder) are kept in protobuf, others in JSON.
func NewCompact[PP any](dec *Decoder[PP], cached int) *Compact[PP] {
	c := &Compact[PP]{dec: dec, runs: newSharedRuns(), cache: newDecodedCache(max(cached, 0))}
	c.split.runs = &c.runs
	sizer := dec.elemPointer().Implements(protoSizerType)
	c.marshal = dec.plan != nil && sizer
	c.trim = newTrimmer(dec.plan, &dec.opts)
	if dec.plan != nil {
		if m := dec.plan.lookup(1); m != nil && m.typ == objectMetaType && m.plan != nil {
			c.split.keyed = true
			if l := m.plan.lookup(11); l != nil && l.typ == stringMapType {
				c.labels = l
			}
		}
	}
	return c
}

// Encode returns the record of obj, encoded in protobuf or JSON, and keeps
// obj as its decoded object, so that reading the record soon after gets
// obj itself.
func (c *Compact[PP]) Encode(obj PP) (*Record, error) { return c.EncodeBeside(obj, nil) }

// EncodeBeside is Encode for obj, the next state of the object whose
// record is old (nil: none): the parts of obj's encoding whose bytes are
// old's take old's shared runs as they are, which saves looking each of
// their values up in the table of runs (see splitter.record). The
// record's encoding is obj's, as Encode's is.
func (c *Compact[PP]) EncodeBeside(obj PP, old *Record) (*Record, error) {
	r := c.takeOffer(obj, old) // only a protobuf Compact has offers
	if r == nil {
		var err error
		if r, err = c.encode(obj, old); err != nil {
			return nil, err
		}
	}
	if c.marshal {
		var err error
		if r.kind, err = c.kindOf(obj); err != nil {
			return nil, err
		}
	}
	c.keep(r, obj)
	return r, nil
}

// encode returns the record of obj's encoding, protobuf or JSON, cut
// beside old if not nil.
func (c *Compact[PP]) encode(obj PP, old *Record) (*Record, error) {
	bp := c.buf()
	defer c.bufs.Put(bp)
	var b []byte
	var err error
	if c.marshal {
		m := any(obj).(protoSizer)
		n := m.Size()
		full := growTo(*bp, n)
		*bp = full[:0]
		var w int
		if w, err = m.MarshalToSizedBuffer(full); err == nil {
			b = full[n-w:] // it writes from the end
		}
	} else {
		b, err = json.Marshal(obj)
	}
	if err != nil {
		return nil, fmt.Errorf("wire: encode %s: %w", c.dec.tname, err)
	}
	return c.record(b, !c.marshal, old), nil
}

// maxKinds is how many TypeMetas a Compact keeps for its records: an
// informer's objects have one.
const maxKinds = 1<<16 - 1

// kindOf returns the kind index of obj's TypeMeta for a record (see
// Record.kind): 0 if it has none, adding it to c's table if it is new.
func (c *Compact[PP]) kindOf(obj PP) (uint16, error) {
	o, ok := any(obj).(interface{ GetObjectKind() schema.ObjectKind })
	if !ok {
		return 0, nil
	}
	tm, ok := o.GetObjectKind().(*metav1.TypeMeta)
	if !ok || (tm.APIVersion == "" && tm.Kind == "") {
		return 0, nil
	}
	if kinds := c.kinds.Load(); kinds != nil {
		for i, k := range *kinds {
			if k == *tm {
				return uint16(i + 1), nil
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var kinds []metav1.TypeMeta
	if p := c.kinds.Load(); p != nil {
		kinds = *p
	}
	for i, k := range kinds {
		if k == *tm {
			return uint16(i + 1), nil
		}
	}
	if len(kinds) == maxKinds {
		return 0, fmt.Errorf("wire: encode %s: more than %d kinds of objects", c.dec.tname, maxKinds)
	}
	kinds = append(slices.Clip(kinds), *tm)
	c.kinds.Store(&kinds)
	return uint16(len(kinds)), nil
}

// setKind gives obj, decoded from r, the TypeMeta Encode was given with it.
func (c *Compact[PP]) setKind(r *Record, obj PP) {
	if r.kind == 0 {
		return
	}
	if o, ok := any(obj).(interface{ GetObjectKind() schema.ObjectKind }); ok {
		if tm, ok := o.GetObjectKind().(*metav1.TypeMeta); ok {
			*tm = (*c.kinds.Load())[r.kind-1]
		}
	}
}

// Protobuf returns the record of b, the bare protobuf message of a T (a
// LIST's item), after checking that it decodes (see Decoder.Validate); its
// error is the one decoding b would return. The record holds what a read
// of it returns: without the managedFields or the annotations the
// Decoder's options leave out of objects. b may be reused once it returns.
// The check remembers the parts of b it found valid, for the next items of
// the list, until EndList: a caller that lists calls it at the list's end.
func (c *Compact[PP]) Protobuf(b []byte) (*Record, error) {
	if err := c.dec.Validate(b); err != nil {
		return nil, err
	}
	return c.valid(b, nil)
}

// EndList lets go of what Protobuf remembered of the items of a list (at
// most about 320 KB; see Decoder.EndValidation). A later Protobuf works as
// well, remembering anew.
func (c *Compact[PP]) EndList() { c.dec.EndValidation() }

// valid returns the record of b, a valid bare protobuf message of a T,
// trimmed as Protobuf trims it, cut beside old if not nil.
func (c *Compact[PP]) valid(b []byte, old *Record) (*Record, error) {
	if c.trim != nil {
		bp := c.buf()
		defer c.bufs.Put(bp)
		trimmed, ok, err := c.trim.trim((*bp)[:0], b, c.dec.plan)
		if err != nil {
			return nil, &DecodeError{Err: err} // not seen: b is valid
		}
		if ok {
			*bp = trimmed[:0]
			b = trimmed
		}
	}
	return c.record(b, false, old), nil
}

// record returns the record of b, a valid encoding, cut beside old if not
// nil.
func (c *Compact[PP]) record(b []byte, json bool, old *Record) *Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.split.record(b, json, old)
}

// Decode returns the object of r: the one r caches, or a new one decoded
// from r, which r then caches.
func (c *Compact[PP]) Decode(r *Record) (PP, error) {
	if p, ok := c.held(r); ok {
		return p, nil
	}
	obj, err := c.decode(r, false)
	if err != nil {
		return obj, err
	}
	return c.keep(r, obj), nil
}

// DecodeOwned returns the object of r for a reader that keeps or changes
// it: r's decoded object if c keeps one (owned is false: the object is
// the one Decode returns, read-only, which the reader copies), or else an
// object decoded for this call alone (owned is true), which c does not
// keep and which shares no map, FieldsV1 or managedFields time with any
// other object, as with Options.NoMapSharing, so that the reader needs no
// copy of it. Its strings may be made over r's memory, as Decode's are.
func (c *Compact[PP]) DecodeOwned(r *Record) (obj PP, owned bool, err error) {
	if p, ok := c.held(r); ok {
		return p, false, nil
	}
	obj, err = c.decode(r, true)
	return obj, err == nil, err
}

// DecodeBeside returns the object of r, as Decode does, for a reader that
// has like, the object of next as c decodes it (the record that replaced
// r in a store, say), and reads r's beside it: a part of r (a top-level
// message field other than the metadata, such as a Pod's spec) whose
// bytes are next's is not decoded, and r's object shares like's value of
// that field. Unless r holds its object already, the object is decoded
// for this call and not kept: r is leaving.
func (c *Compact[PP]) DecodeBeside(r, next *Record, like PP) (PP, error) {
	if p, ok := c.HeldObject(r); ok {
		return p, nil
	}
	lp := c.dec.pointerOf(like)
	if r.json || next == nil || next.json || lp == nil || !c.dec.parts {
		return c.decode(r, false)
	}
	bp := c.buf()
	nb := next.AppendTo((*bp)[:0])
	obj, err := c.aliased(r, func(b []byte, a *aliases) (PP, error) { return c.dec.recordBeside(b, a, nb, lp) })
	*bp = nb[:0]
	c.bufs.Put(bp)
	if err != nil {
		var zero PP
		return zero, err
	}
	c.setKind(r, obj)
	return obj, nil
}

// HeldObject returns the decoded object r holds, if any, without decoding
// r and without marking it read: the cache may let go of it at any time.
func (c *Compact[PP]) HeldObject(r *Record) (PP, bool) {
	if p := r.cached(); p != nil {
		return c.dec.cast(p), true
	}
	var zero PP
	return zero, false
}

// held returns the decoded object r holds, if any, and marks r read.
func (c *Compact[PP]) held(r *Record) (PP, bool) {
	p, ok := c.HeldObject(r)
	if ok && !r.hot.Load() {
		r.hot.Store(true)
	}
	return p, ok
}

// decode decodes r into a new object, which it does not keep; with own,
// one that shares nothing but strings with other objects (see
// Decoder.record).
func (c *Compact[PP]) decode(r *Record, own bool) (PP, error) {
	var obj PP
	var err error
	if r.json {
		bp := c.buf()
		b := r.AppendTo((*bp)[:0])
		obj, err = c.dec.decodeJSON(b, !own)
		*bp = b[:0]
		c.bufs.Put(bp)
	} else {
		obj, err = c.protobuf(r, own)
	}
	if err != nil {
		var zero PP
		return zero, err
	}
	c.setKind(r, obj)
	return obj, nil
}

// protobuf decodes r, a protobuf record, into an object whose strings are
// made over r's memory (see aliases); with own, one that shares nothing
// else with other objects (see Decoder.record).
func (c *Compact[PP]) protobuf(r *Record, own bool) (PP, error) {
	return c.aliased(r, func(b []byte, a *aliases) (PP, error) { return c.dec.record(b, a, own) })
}

// aliased returns what decode makes of r's bytes, b, with a, which maps
// b to r's memory: a pooled buffer, let go of when decode returns.
func (c *Compact[PP]) aliased(r *Record, decode func(b []byte, a *aliases) (PP, error)) (PP, error) {
	a, _ := c.aliasBufs.Get().(*aliases)
	if a == nil {
		a = new(aliases)
	}
	a.buf, a.segs = r.appendSegments(a.buf, a.segs)
	a.at = 0
	obj, err := decode(a.buf, a)
	clear(a.segs) // they point into r
	a.buf, a.segs = a.buf[:0], a.segs[:0]
	c.aliasBufs.Put(a)
	return obj, err
}

// keep makes obj the decoded object of r, unless another read did so
// first: it returns the object r holds.
func (c *Compact[PP]) keep(r *Record, obj PP) PP {
	p := c.dec.pointerOf(obj)
	if p == nil {
		return obj
	}
	if !atomic.CompareAndSwapPointer(&r.obj, nil, p) {
		if q := r.cached(); q != nil {
			return c.dec.cast(q)
		}
		return obj
	}
	c.cache.add(r)
	return obj
}

// Forget tells c that r has left the store that kept it: r gives its
// decoded object, and its place in c's cache of decoded objects, to the
// next record kept. Reading r afterwards decodes it again.
func (c *Compact[PP]) Forget(r *Record) { c.cache.forget(r) }

// Cached returns how many records hold a decoded object.
func (c *Compact[PP]) Cached() int { return c.cache.len() }

// SharedBytes returns the bytes of the runs in c's table of shared runs,
// each counted once however many records point at it, as the allocator
// rounds it. Once the table has started over (it is bounded), records made
// before may point at runs it no longer holds: SharedBytesOf counts those
// too.
func (c *Compact[PP]) SharedBytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs.bytes
}

// SharedBytesOf returns the bytes of the runs that the records records
// yields share and of those c's table holds, each counted once and as the
// allocator rounds it: what the runs hold of the heap while those records
// live. Until the table first starts over it holds every run a record
// points at, and records is not called; after, the runs it dropped are
// found by walking the records' refs, a map lookup for each.
func (c *Compact[PP]) SharedBytesOf(records iter.Seq[*Record]) int {
	c.mu.Lock()
	n := c.runs.bytes
	if c.runs.resets == 0 {
		c.mu.Unlock()
		return n
	}
	inTable := make(map[*byte]struct{}, len(c.runs.runs))
	for _, s := range c.runs.runs {
		inTable[unsafe.StringData(s)] = struct{}{}
	}
	c.mu.Unlock()
	dropped := make(map[*byte]struct{})
	for r := range records {
		for rf := range r.eachRef {
			if _, ok := inTable[rf.p]; ok {
				continue
			}
			if _, ok := dropped[rf.p]; !ok {
				dropped[rf.p] = struct{}{}
				n += allocBytes(int(rf.n))
			}
		}
	}
	return n
}

// Labels returns the labels of r's object, without decoding the rest of it
// when r holds protobuf: the map is shared with other objects that have
// the same labels, never to be modified.
func (c *Compact[PP]) Labels(r *Record) (map[string]string, error) {
	if p := r.cached(); p != nil || r.json || c.labels == nil {
		obj, err := c.Decode(r)
		if err != nil {
			return nil, err
		}
		if m, ok := any(obj).(interface{ GetLabels() map[string]string }); ok {
			return m.GetLabels(), nil
		}
		return nil, nil
	}
	bp := c.buf()
	defer c.bufs.Put(bp)
	b := r.AppendTo((*bp)[:0])
	*bp = b[:0]
	return c.ProtobufLabels(b)
}

// ProtobufLabels returns the labels of the object whose bare protobuf
// message is b, as Labels does.
func (c *Compact[PP]) ProtobufLabels(b []byte) (map[string]string, error) {
	if c.labels == nil {
		return nil, fmt.Errorf("%w: %s has no protobuf labels", ErrMalformed, c.dec.tname)
	}
	var m map[string]string
	err := fields(b, func(num int32, typ int, meta []byte) error {
		if num != 1 || typ != wireBytes {
			return nil
		}
		c.dec.mu.Lock()
		defer c.dec.mu.Unlock()
		s := state{strs: c.dec.strs, maps: c.dec.maps, filter: c.dec.opts.Annotations}
		for i := 0; i < len(meta); {
			num, typ, next, err := tag(meta, i)
			if err != nil {
				return err
			}
			if num != 11 || typ != wireBytes {
				if i, err = skip(meta, next, typ); err != nil {
					return err
				}
				continue
			}
			if s.maps != nil {
				i, err = s.sharedMap(meta, i, num, unsafe.Pointer(&m), c.labels)
			} else {
				i, err = s.field(meta, next, typ, unsafe.Pointer(&m), c.labels)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, &DecodeError{Path: "metadata.labels", Err: err}
	}
	return m, nil
}

// HasResourceVersion reports whether r's object has resourceVersion rv,
// which it reads from r's bytes when r holds protobuf.
func (c *Compact[PP]) HasResourceVersion(r *Record, rv []byte) (bool, error) {
	if r.json {
		obj, err := c.Decode(r)
		if err != nil {
			return false, err
		}
		m, ok := any(obj).(interface{ GetResourceVersion() string })
		return ok && m.GetResourceVersion() == string(rv), nil
	}
	bp := c.buf()
	defer c.bufs.Put(bp)
	b := r.AppendTo((*bp)[:0])
	*bp = b[:0]
	ref, err := PeekProtobufMeta(b)
	if err != nil {
		return false, err
	}
	return string(ref.ResourceVersion) == string(rv), nil
}

// buf returns a buffer from the pool.
func (c *Compact[PP]) buf() *[]byte {
	if bp, ok := c.bufs.Get().(*[]byte); ok {
		return bp
	}
	return new([]byte)
}

// growTo returns b with length n, reallocated if it is too short.
func growTo(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// DecodedBytes returns the heap bytes of the decoded objects c keeps (see
// NewCompact), as its decoder's Sizer counts them, less their strings and
// bytes made over their records' memory, which the records hold.
func (c *Compact[PP]) DecodedBytes() int {
	sz := *c.dec.Sizer()
	n := 0
	c.cache.each(func(r *Record, p unsafe.Pointer) {
		sz.rec = r
		n += sz.Size(c.dec.cast(p))
	})
	return n
}
