package informer

import (
	"slices"
	"strings"
	"unsafe"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// labelIndex is an inverted index of the labels of a Store's objects, which
// it knows by their slot ids (see arena): for every key=value pair, the
// posting of the ids whose object has it. The objects that have a key are
// the union of its values' postings, which are disjoint, so an exists
// requirement costs the number of values of its key more than a posting of
// its own would, and each write half as many posting updates. It is guarded
// by the Store's mu.
//
// Each distinct key and value is stored once (interned), so an object costs
// the index a 40-byte record, which holds the labelRefs of up to refInline
// labels (an object with more has them in a slab, 8 bytes each), and 4
// bytes of posting a label, whatever the length of the strings.
//
// Postings and refs hold no pointers, so that the garbage collector need not
// scan them: a ref names its value by its id in vals.
//
// Invariants: for every id and every r in refsOf(id), vals[r.vid].at(r.vpos)
// == id; an id is in a posting only through such a ref; refsOf(id) has at most
// one ref per key; a key's n is the sum of its values' posting lengths; no
// posting is empty (an empty value is removed from its key and vals, a key
// without values from keys).
type labelIndex struct {
	keys     map[string]*labelKey
	vals     []*labelVal // by value id; nil for a free id
	freeVals []uint32    // ids of vals free for reuse
	// recs holds the refs of each slot id's labels: recs[id/recPage]
	// [id%recPage]. It grows a page at a time, so that it is never copied.
	recs     [][]refRecord
	slabs    [][]labelRef // the refs of objects with more than refInline labels
	slabUsed int          // refs of the last slab handed out
	// memo remembers, for a few labels maps, the values they were posted
	// to (see postMemo); nil until a map is posted whole.
	memo *[memoSize]labelMemo
}

// labelMemo is the values that the labels map m was last posted to, in
// full, for an id that had no labels (none, n == 0, when m was seen
// once). Decoded objects with equal labels share one map (the wire
// decoder's, or a shallow copy's), so the next such object is posted to
// the same values without the map being read. Holding m keeps its address
// from naming another map. A map of more than memoVals labels is not
// remembered.
type labelMemo struct {
	m    map[string]string
	n    int
	vals [memoVals]*labelVal
}

// memoSize is how many maps the memo remembers, by their address: more
// than a namespace's workloads usually interleave in a list (sorted by
// name, the Pods of one ReplicaSet come one after another). The memo is
// one allocation of about 10 KiB, made when a map is first remembered and
// let go with the index's last label.
const (
	memoBits = 7
	memoSize = 1 << memoBits
	memoVals = 8
)

// refRecord holds the refs of one id: the first n of inline or, if cap is
// not zero, of a span of cap refs in the slabs, slabs[inline[0].vid]
// [inline[0].vpos:][:cap], where they moved when the id's object had more
// than refInline labels. An id keeps its span, and reuses it for the next
// object of its slot; a span too small for an object is left for a new
// one twice as large, so an id leaves behind at most as much as it has.
//
// Keeping the refs of most objects in the record, rather than a span that
// points elsewhere, saves a cache miss on every write and query test, and
// the allocation of a span on every add.
type refRecord struct {
	inline [refInline]labelRef
	n, cap uint32
}

const (
	// refInline is how many refs a record holds in place.
	refInline = 4
	// recPage is how many records a page of labelIndex.recs holds (40 KiB).
	recPage = 1024
	// slabSize is how many refs a slab holds (32 KiB).
	slabSize = 4096
)

// record returns the record of id, or nil if its page is missing.
func (li *labelIndex) record(id uint32) *refRecord {
	if p := int(id / recPage); p < len(li.recs) {
		return &li.recs[p][id%recPage]
	}
	return nil
}

// refs returns the refs of rec, of length n and capacity refInline or cap.
func (li *labelIndex) refs(rec *refRecord) []labelRef {
	if rec.cap == 0 {
		return rec.inline[:rec.n]
	}
	at := rec.inline[0]
	return li.slabs[at.vid][at.vpos : at.vpos+rec.n : at.vpos+rec.cap]
}

// refsOf returns the refs of id.
func (li *labelIndex) refsOf(id uint32) []labelRef {
	if rec := li.record(id); rec != nil {
		return li.refs(rec)
	}
	return nil
}

// grow moves the refs of rec, refs, to a span with room for n of them,
// and returns them there.
func (li *labelIndex) grow(rec *refRecord, refs []labelRef, n int) []labelRef {
	c := 2 * refInline
	for c < n {
		c *= 2
	}
	if len(li.slabs) == 0 || li.slabUsed+c > len(li.slabs[len(li.slabs)-1]) {
		li.slabs = append(li.slabs, make([]labelRef, max(slabSize, c)))
		li.slabUsed = 0
	}
	slab, off := len(li.slabs)-1, li.slabUsed
	li.slabUsed += c
	out := li.slabs[slab][off : off+len(refs) : off+c]
	copy(out, refs)
	clear(refs)
	rec.inline = [refInline]labelRef{{vid: uint32(slab), vpos: uint32(off)}}
	rec.cap = uint32(c)
	return out
}

// labelKey is one label key and its values.
type labelKey struct {
	name string
	n    int // how many ids have the key: the sum of the values' postings
	vals map[string]*labelVal
}

// labelVal is one value of a label key and its posting: the ids whose
// object has key=value, at positions 0 to n-1. The first postBlock
// positions are in ids, which grows by doubling; the others in blocks of
// postBlock, in ext.more, so that a large posting grows without being
// copied.
//
// It is 64 bytes, one cache line (the allocator aligns objects of that
// size class to 64), and holds the bytes of a short value (see
// newLabelVal): a write reads the value's string, when the key's map
// compares it, and its posting's count and ids on the same line; a
// delete, which never reads the string, the count and ids alone. What
// does not fit, rarely needed, is in ext.
type labelVal struct {
	key *labelKey
	ids []uint32 // positions 0 to min(n, postBlock)-1
	ext *valExt  // nil unless the posting has more or the value is long
	vid uint32   // position in labelIndex.vals
	n   uint32   // how many ids the posting holds
	// vlen and buf are the value when it is at most valInline bytes long
	// (long is empty); they are never written after newLabelVal.
	vlen uint8
	buf  [valInline]byte
}

// valExt is the part of a labelVal that few values need.
type valExt struct {
	more [][]uint32 // positions from postBlock on, postBlock a block; nil if none
	long string     // the value, when it is longer than valInline
}

// valInline is how long a value labelVal.buf holds can be: most label
// values (names, versions, tiers, hashes of a template) are short. It fills
// the struct to 64 bytes.
const valInline = 15

// newLabelVal returns the value v of key, its bytes copied into the struct
// if they fit, otherwise into a clone: the index keeps no object's memory
// alive.
func newLabelVal(key *labelKey, v string) *labelVal {
	val := &labelVal{key: key}
	if len(v) <= valInline {
		val.vlen = uint8(copy(val.buf[:], v))
	} else {
		val.ext = &valExt{long: strings.Clone(v)}
	}
	return val
}

// value returns the value's string, which is the key's map key for val.
func (val *labelVal) value() string {
	if val.ext != nil && val.ext.long != "" {
		return val.ext.long
	}
	return unsafe.String(&val.buf[0], int(val.vlen))
}

// more returns the blocks of the posting past postBlock, nil if none.
func (val *labelVal) more() [][]uint32 {
	if val.ext == nil {
		return nil
	}
	return val.ext.more
}

// setMore makes more the blocks of the posting past postBlock.
func (val *labelVal) setMore(more [][]uint32) {
	if val.ext == nil {
		if more == nil {
			return
		}
		val.ext = new(valExt)
	}
	val.ext.more = more
	if more == nil && val.ext.long == "" {
		val.ext = nil
	}
}

// postBlock is how many ids a posting holds in ids, and in each block of
// more (4 KiB).
const postBlock = 1024

// at returns the id at position p of the posting.
func (val *labelVal) at(p uint32) uint32 {
	if p < postBlock {
		return val.ids[p]
	}
	return val.ext.more[p/postBlock-1][p%postBlock]
}

// put makes id the one at position p of the posting.
func (val *labelVal) put(p, id uint32) {
	if p < postBlock {
		val.ids[p] = id
	} else {
		val.ext.more[p/postBlock-1][p%postBlock] = id
	}
}

// push adds id at the end of the posting.
func (val *labelVal) push(id uint32) {
	if val.n < postBlock {
		if len(val.ids) == cap(val.ids) {
			// Double, where append would grow by a quarter past 256.
			ids := make([]uint32, len(val.ids), min(max(2*len(val.ids), 4), postBlock))
			copy(ids, val.ids)
			val.ids = ids
		}
		val.ids = append(val.ids, id)
		val.n++
		return
	}
	more := val.more()
	b := int(val.n/postBlock) - 1 // the block of the new id
	if b == len(more) {
		more = append(more, make([]uint32, 0, postBlock))
		val.setMore(more)
	}
	more[b] = append(more[b], id) // within its capacity
	val.n++
}

// pop removes the last id of the posting. A block left empty is kept
// until the one before it empties too, so that a posting that moves back
// and forth across a block boundary does not allocate each time.
func (val *labelVal) pop() {
	val.n--
	if val.n < postBlock {
		val.ids = shrink(val.ids[:val.n])
		if val.n < postBlock/2 {
			val.setMore(nil)
		}
		return
	}
	more := val.more()
	b := int(val.n/postBlock) - 1 // the block of the id removed
	more[b] = more[b][:len(more[b])-1]
	if len(more[b]) == 0 && len(more) > b+1 {
		// Block b is the spare now: drop the one after it.
		more[b+1] = nil
		val.setMore(more[:b+1])
	}
}

// blocks yields the ids of the posting, a block at a time.
func (val *labelVal) blocks(yield func([]uint32) bool) {
	if !yield(val.ids) {
		return
	}
	for _, b := range val.more() {
		if len(b) > 0 && !yield(b) {
			return
		}
	}
}

// labelRef is one label of one object: its value, by id, and where the
// object's id sits in the value's posting.
type labelRef struct {
	vid, vpos uint32
}

// val returns the value r refers to.
func (li *labelIndex) val(r labelRef) *labelVal { return li.vals[r.vid] }

func newLabelIndex() *labelIndex {
	return &labelIndex{keys: make(map[string]*labelKey)}
}

// set makes m the labels indexed for id. It does no work for labels that
// did not change, and none at all if no label did.
func (li *labelIndex) set(id uint32, m map[string]string) {
	rec := li.record(id)
	if rec == nil {
		if len(m) == 0 {
			return
		}
		for int(id/recPage) >= len(li.recs) {
			li.recs = append(li.recs, make([]refRecord, recPage))
		}
		rec = li.record(id)
	}
	refs := li.refs(rec)
	if li.postMemo(id, rec, m) {
		return
	}
	if li.sameLabels(refs, m) {
		return
	}
	fresh := len(refs) == 0 // every label is posted below
	for i := 0; i < len(refs); {
		r := refs[i]
		if li.hasLabel(m, li.val(r)) {
			i++
			continue
		}
		li.unpost(id, r)
		last := len(refs) - 1
		refs[i] = refs[last]
		refs[last] = labelRef{}
		refs = refs[:last]
	}
	if len(m) > cap(refs) {
		refs = li.grow(rec, refs, len(m))
	}
	kept := len(refs) // labels unchanged, to skip below
	for k, v := range m {
		if kept == 0 || !li.hasKey(refs[:kept], k) {
			refs = append(refs, li.post(id, k, v)) // within the capacity
		}
	}
	rec.n = uint32(len(refs))
	if fresh {
		li.remember(m, refs)
	}
}

// memoAt returns the memo entry of the map m.
func (li *labelIndex) memoAt(m map[string]string) *labelMemo {
	if li.memo == nil {
		li.memo = new([memoSize]labelMemo)
	}
	p := uint64(uintptr(*(*unsafe.Pointer)(unsafe.Pointer(&m))))
	return &li.memo[p*0x9e3779b97f4a7c15>>(64-memoBits)]
}

// memoBytes returns the heap bytes of li's memo, 0 if it has none (or li
// is nil). The maps it holds are the objects' own.
func (li *labelIndex) memoBytes() int {
	if li == nil || li.memo == nil {
		return 0
	}
	return int(unsafe.Sizeof(*li.memo))
}

// postMemo posts id, whose record rec holds no refs, to the values the
// non-empty map m was last posted to, if the memo has them all still in
// the index, and reports whether it did. The map is not read: the memo
// relies on what sameMap does, that a cached object's maps are never
// modified in place.
func (li *labelIndex) postMemo(id uint32, rec *refRecord, m map[string]string) bool {
	if li.memo == nil || len(m) == 0 || rec.n != 0 {
		return false
	}
	e := li.memoAt(m)
	if !samePointer(e.m, m) || e.n != len(m) {
		return false
	}
	vals := e.vals[:e.n]
	for _, val := range vals {
		if li.vals[val.vid] != val { // emptied since, and let go
			return false
		}
	}
	refs := li.refs(rec)
	if len(m) > cap(refs) {
		refs = li.grow(rec, refs, len(m))
	}
	for _, val := range vals {
		refs = append(refs, li.postVal(id, val))
	}
	rec.n = uint32(len(refs))
	return true
}

// remember keeps refs, the refs of every label of m (one each, as set
// posts them for an id that had none), as m's memo entry, if m is its
// entry's map already; otherwise m becomes the entry's map, without
// values. So a map of one object only, as a map not shared is, costs the
// memo one pointer, and a shared map is posted from the memo from its
// third object on.
func (li *labelIndex) remember(m map[string]string, refs []labelRef) {
	if len(m) == 0 || len(m) > memoVals {
		return
	}
	e := li.memoAt(m)
	if !samePointer(e.m, m) {
		e.m, e.n = m, 0
		return
	}
	e.n = len(refs)
	for i, r := range refs {
		e.vals[i] = li.val(r)
	}
	clear(e.vals[e.n:])
}

// remove drops every label of id.
func (li *labelIndex) remove(id uint32) {
	rec := li.record(id)
	if rec == nil || rec.n == 0 {
		return
	}
	refs := li.refs(rec)
	for _, r := range refs {
		li.unpost(id, r)
	}
	clear(refs)
	rec.n = 0 // the slot's next object reuses the record, and its span
}

func (li *labelIndex) sameLabels(refs []labelRef, m map[string]string) bool {
	if len(refs) != len(m) {
		return false
	}
	for _, r := range refs {
		if !li.hasLabel(m, li.val(r)) {
			return false
		}
	}
	return true
}

// hasLabel reports whether m has the label val.
func (li *labelIndex) hasLabel(m map[string]string, val *labelVal) bool {
	v, ok := m[val.key.name]
	return ok && v == val.value()
}

func (li *labelIndex) hasKey(refs []labelRef, k string) bool {
	for _, r := range refs {
		if li.val(r).key.name == k {
			return true
		}
	}
	return false
}

// post adds id to the postings of k and k=v and returns its ref. New keys
// and values are copied, so the index keeps no object's memory alive.
func (li *labelIndex) post(id uint32, k, v string) labelRef {
	key := li.keys[k]
	if key == nil {
		key = &labelKey{name: strings.Clone(k), vals: make(map[string]*labelVal, 1)}
		li.keys[key.name] = key
	}
	val := key.vals[v]
	if val == nil {
		val = newLabelVal(key, v)
		if n := len(li.freeVals); n > 0 {
			val.vid = li.freeVals[n-1]
			li.freeVals = li.freeVals[:n-1]
			li.vals[val.vid] = val
		} else {
			val.vid = uint32(len(li.vals))
			li.vals = append(li.vals, val)
		}
		key.vals[val.value()] = val
	}
	return li.postVal(id, val)
}

// postVal adds id to the posting of val, and so to its key's count, and
// returns its ref.
func (li *labelIndex) postVal(id uint32, val *labelVal) labelRef {
	r := labelRef{vid: val.vid, vpos: val.n}
	val.push(id)
	val.key.n++
	return r
}

// unpost takes id out of the postings r points at: a swap with the last
// id, whose ref is told its new position.
func (li *labelIndex) unpost(id uint32, r labelRef) {
	val := li.val(r)
	key := val.key
	if last := val.n - 1; r.vpos != last {
		moved := val.at(last)
		val.put(r.vpos, moved)
		li.refOf(moved, r.vid).vpos = r.vpos
	}
	val.pop()
	key.n--
	if val.n == 0 {
		delete(key.vals, val.value())
		li.vals[val.vid] = nil
		li.freeVals = append(li.freeVals, val.vid)
	}
	if key.n == 0 {
		delete(li.keys, key.name)
		if len(li.keys) == 0 {
			li.memo = nil // none of its values is left: let it and its maps go
		}
	}
}

// refOf returns the ref of id to the value vid, which id must have: it is
// told by the value's id alone, without reading the values. The invariants
// exclude a missing one; it would get a throwaway ref rather than a panic
// with the Store's lock held.
func (li *labelIndex) refOf(id, vid uint32) *labelRef {
	refs := li.refsOf(id)
	for i := range refs {
		if refs[i].vid == vid {
			return &refs[i]
		}
	}
	return new(labelRef)
}

// shrink gives back the room of a posting that has shrunk to a quarter of
// its capacity.
func shrink(ids []uint32) []uint32 {
	if cap(ids) > 64 && len(ids) < cap(ids)/4 {
		return slices.Clone(ids)
	}
	return ids
}

// labelTerm is a requirement the index answers: the ids whose object has
// key (exists) or key with one of the values q.vals[lo:hi].
type labelTerm struct {
	key    *labelKey
	lo, hi int
	exists bool
	size   int // how many ids the term's postings hold
	// one is set for a term of a single value, whose id is vid: an id
	// satisfies it if one of its refs has that value id.
	one bool
	vid uint32
}

// labelQuery is a selector prepared for the index: the terms it answers,
// smallest first, and the requirements left to test on each candidate.
// It is reused across queries.
type labelQuery struct {
	terms  []labelTerm
	vals   []*labelVal
	filter []labels.Requirement // tested with Requirement.Matches
}

func (q *labelQuery) reset() {
	clear(q.terms)
	clear(q.vals)
	clear(q.filter)
	q.terms, q.vals, q.filter = q.terms[:0], q.vals[:0], q.filter[:0]
}

// plan prepares q for the requirements of sel. It returns false if the
// index shows that nothing matches. Equality, in and exists become terms;
// the other operators (!=, notin, !key, gt, lt) become filters.
func (li *labelIndex) plan(q *labelQuery, sel labels.Selector) bool {
	if set, ok := sel.(labels.ValidatedSetSelector); ok {
		// Its Requirements method builds a new selector: read the set.
		for k, v := range set {
			if !li.addTerm(q, k, v, nil) {
				return false
			}
		}
		q.sortTerms()
		return true
	}
	reqs, _ := sel.Requirements()
	for i := range reqs {
		r := &reqs[i]
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			var ok bool
			if v, exact := exactValue(sel, reqs, i); exact {
				ok = li.addTerm(q, r.Key(), v, nil)
			} else {
				// Several values, or a key required twice: the values
				// can only be had in a new slice.
				ok = li.addTerm(q, r.Key(), "", r.ValuesUnsorted())
			}
			if !ok {
				return false
			}
		case selection.Exists:
			key := li.keys[r.Key()]
			if key == nil {
				return false
			}
			q.terms = append(q.terms, labelTerm{key: key, exists: true, size: key.n})
		default:
			q.filter = append(q.filter, *r)
		}
	}
	q.sortTerms()
	return true
}

// exactValue returns the one value requirement i of sel requires, without
// allocating, when Selector.RequiresExactMatch can tell it: when i is the
// first requirement on its key.
func exactValue(sel labels.Selector, reqs labels.Requirements, i int) (string, bool) {
	k := reqs[i].Key()
	for j := range i {
		if reqs[j].Key() == k {
			return "", false
		}
	}
	return sel.RequiresExactMatch(k)
}

// addTerm adds the term "k has value v", or "k has one of vs" if vs is not
// nil. It returns false if no object has such a label.
func (li *labelIndex) addTerm(q *labelQuery, k, v string, vs []string) bool {
	key := li.keys[k]
	if key == nil {
		return false
	}
	t := labelTerm{key: key, lo: len(q.vals)}
	if vs == nil {
		if val := key.vals[v]; val != nil {
			q.vals = append(q.vals, val)
			t.size = int(val.n)
		}
	} else {
		for _, v := range vs {
			if val := key.vals[v]; val != nil && !slices.Contains(q.vals[t.lo:], val) {
				q.vals = append(q.vals, val)
				t.size += int(val.n)
			}
		}
	}
	t.hi = len(q.vals)
	if t.size == 0 {
		return false
	}
	if t.hi-t.lo == 1 {
		t.one, t.vid = true, q.vals[t.lo].vid
	}
	q.terms = append(q.terms, t)
	return true
}

// sortTerms orders the terms smallest first (there are few: insertion sort,
// which allocates nothing).
func (q *labelQuery) sortTerms() {
	for i := 1; i < len(q.terms); i++ {
		for j := i; j > 0 && q.terms[j].size < q.terms[j-1].size; j-- {
			q.terms[j], q.terms[j-1] = q.terms[j-1], q.terms[j]
		}
	}
}

// has reports whether id satisfies term t.
func (li *labelIndex) has(q *labelQuery, t *labelTerm, id uint32) bool {
	if t.one {
		for _, r := range li.refsOf(id) {
			if r.vid == t.vid {
				return true
			}
		}
		return false
	}
	for _, r := range li.refsOf(id) {
		val := li.val(r)
		if val.key != t.key {
			continue
		}
		return t.exists || slices.Contains(q.vals[t.lo:t.hi], val)
	}
	return false
}

// hasAll reports whether id satisfies every term of q from the first on.
func (li *labelIndex) hasAll(q *labelQuery, first int, id uint32) bool {
	for i := first; i < len(q.terms); i++ {
		if !li.has(q, &q.terms[i], id) {
			return false
		}
	}
	return true
}
