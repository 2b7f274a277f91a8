package wire

import (
	"cmp"
	"hash/maphash"
	"math"
	"slices"
	"unsafe"
)

// Sharing runs between records. A record's encoding is cut into the runs
// of bytes it has in common with other objects' and the bytes of its own:
// the values of length-delimited fields (nested messages, strings, bytes;
// in JSON, objects, arrays and strings), looked at from the whole object
// down. A value met once is remembered by its hash; met again, in this
// object or a later one, it becomes a shared run that every record with
// the same bytes points at. A value not shared is looked into, for shared
// values inside it, down to maxSplitDepth levels.
//
// A value met again whose inside is already mostly shared runs (at least
// promoteMax tenths of it) is made a run only once it has been met
// promoteAfter times: its run is a second copy of those runs' bytes, and
// saves each object that shares it only the few bytes around them, which
// pays for the copy when many objects do. The case is common: the
// managedFields entries of a ReplicaSet's Pods made in the same second are
// equal (times are in seconds), and all of them hold the same FieldsV1,
// which is shared already. Making each such entry a run at its second
// meeting filled the table with copies of FieldsV1: 1.3 KB a Pod at 10,000
// realistic Pods made 100 a second.
//
// The cut is a partition of the bytes, whatever they mean: putting the
// runs back gives the encoding exactly. So a string that happens to read
// as a message, or a malformed one, costs the split some work and never a
// wrong byte.
const (
	// minRun is the shortest value worth sharing: a ref costs about 11
	// bytes (refSize), and a run its own block.
	minRun = 32
	// maxSplitDepth is how deep the split looks for shared values: a
	// Pod's container resources are at depth 3 (spec, containers,
	// resources), a managed field's FieldsV1 at 3 too.
	maxSplitDepth = 5
	// maxEmbeddedDepth is how deep it looks inside JSON held in a
	// protobuf bytes field (a FieldsV1's, at depth 4 in a Pod): the
	// entries that name one object's own values (a volume's generated
	// name, a Pod's IP) lie 3 levels down, beside the entries its
	// siblings share (f:spec, f:volumes, k:{"name":...}).
	maxEmbeddedDepth = 6
	// seenSets is the size of the table of values met once, in sets of
	// four hashes: 4,096 values.
	seenSets = 1 << 10
	// spanSets is the size of the table of spans met once (see closeSpan),
	// in sets of four hashes: 1,024 spans.
	spanSets = 1 << 8
	// maxRuns and maxRunBytes bound the table of shared runs: past
	// either, it is emptied and starts over. Records keep the runs they
	// point at.
	maxRuns     = 1 << 14
	maxRunBytes = 8 << 20
	// promoteMax is the part of a value met again, in tenths, that the
	// shared runs inside it may cover for it to be made a run at once;
	// past it, it is made one at its promoteAfter-th meeting.
	promoteMax   = 9
	promoteAfter = 8
	// maxAgain bounds the count of the values met again and not made
	// runs.
	maxAgain = 1 << 12
	// gapPromoteAfter is the meeting at which a gap (see splitter.gap)
	// is made a run: a gap holds more of its object's own bytes than a
	// value does, and one object met again by an update would otherwise
	// make its gaps runs that no sibling shares.
	gapPromoteAfter = 3
)

// sharedRuns finds the values objects have in common. Its owner guards
// it.
type sharedRuns struct {
	seed maphash.Seed
	// seen holds the hashes of values met once, recently, four to a set,
	// the oldest replaced: a value pushed out before it comes again is
	// simply met once more. Two values that fall in one set and come in
	// turn, as two fields of every object do, stay together; in a
	// direct-mapped table each pushed the other out, so that neither was
	// ever shared (in about one table of a hundred, for a Widget's 50
	// objects: TestSharedRunsValuesInOneSet).
	seen []onceSet
	// spans is seen for the spans of messages' fields, apart: most spans
	// hold a field of their object's own and are never met again, and in
	// seen they would push out the values siblings share.
	spans []onceSet
	// again counts the meetings of the values met again that were not
	// made runs, by hash, with the meeting before which each is not looked
	// at again; it is emptied when it holds maxAgain.
	again map[uint64]againCount
	runs  map[uint64]string // shared values, by hash
	bytes int               // their total size, as the allocator rounds each
	// resets counts the times the table started over: the runs it
	// dropped then live on in the records that point at them.
	resets int
	// maxRuns and maxBytes bound the table: maxRuns and maxRunBytes but
	// in tests.
	maxRuns, maxBytes int
	// shared counts the values share looked up, for tests.
	shared int
}

func newSharedRuns() sharedRuns {
	return sharedRuns{seed: maphash.MakeSeed(), seen: make([]onceSet, seenSets), spans: make([]onceSet, spanSets), again: make(map[uint64]againCount),
		runs: make(map[uint64]string), maxRuns: maxRuns, maxBytes: maxRunBytes}
}

// meeting is what the table knows of a value.
type meeting uint8

const (
	metFirst    meeting = iota // not seen recently: now remembered as met
	metAgain                   // met before: promote may make it a run
	isSharedRun                // a shared run
)

// hash returns the hash the table knows v by, never 0, which marks an
// empty slot.
func (t *sharedRuns) hash(v []byte) uint64 { return maphash.Bytes(t.seed, v) | 1 }

// seenSet returns the set of seen that holds the hash h when it is there.
func (t *sharedRuns) seenSet(h uint64) *onceSet { return &t.seen[h>>32&(seenSets-1)] }

// spanSet is seenSet for a span's hash.
func (t *sharedRuns) spanSet(h uint64) *onceSet { return &t.spans[h>>32&(spanSets-1)] }

// share returns the shared run equal to v, of hash h, if v is one;
// otherwise it remembers v as met, in set (seenSet's or spanSet's), or says
// it was met before, how many times in all and when it is due to be looked
// at again.
func (t *sharedRuns) share(v []byte, h uint64, set *onceSet) (run string, m meeting, a againCount) {
	t.shared++
	if s, ok := t.runs[h]; ok {
		if s == string(v) {
			return s, isSharedRun, againCount{}
		}
		return "", metFirst, againCount{met: 1} // a different value with the same hash is not shared
	}
	if a, ok := t.again[h]; ok {
		if a.met < math.MaxUint8 {
			a.met++
			t.again[h] = a
		}
		return "", metAgain, a
	}
	if !set.seenBefore(h) {
		return "", metFirst, againCount{met: 1}
	}
	return "", metAgain, againCount{met: 2}
}

// meet is share of v, of hash h, met in set, that makes v a run if it was
// met before and due says so: due returns 0 to make it one now, or else
// the meeting before which it is not looked at again (-1: none; see
// notPromoted). It returns the run, whether it was made now, and whether
// there is one.
func (t *sharedRuns) meet(v []byte, h uint64, set *onceSet, due func(againCount) int) (run string, made, ok bool) {
	run, m, a := t.share(v, h, set)
	switch m {
	case metFirst:
		return "", false, false
	case metAgain:
		if d := due(a); d != 0 {
			t.notPromoted(h, int(a.met), d)
			return "", false, false
		}
		return t.promote(h, v), true, true
	}
	return run, false, true
}

// againCount is what the table knows of a value met again and not made a
// run: how many times it was met, and the meeting before which it is not
// looked at again (math.MaxUint8: never).
type againCount struct{ met, due uint8 }

// notPromoted notes that the value of hash h, met for the met-th time, was
// not made a run, and is not to be looked at again before its due-th
// meeting (if due > 0): its next meetings are counted from there.
func (t *sharedRuns) notPromoted(h uint64, met, due int) {
	a, ok := t.again[h]
	if !ok {
		if len(t.again) >= maxAgain {
			clear(t.again)
		}
		a.met = uint8(min(met, math.MaxUint8))
	}
	if due > 0 {
		a.due = uint8(min(due, math.MaxUint8))
	}
	t.again[h] = a
}

// lookup returns the shared run equal to v, of hash h, if there is one,
// and changes nothing.
func (t *sharedRuns) lookup(v []byte, h uint64) (string, bool) {
	s, ok := t.runs[h]
	return s, ok && s == string(v)
}

// promote makes v, of hash h, a shared run and returns it.
func (t *sharedRuns) promote(h uint64, v []byte) string {
	delete(t.again, h)
	if len(t.runs) >= t.maxRuns || t.bytes+len(v) > t.maxBytes {
		t.runs, t.bytes = make(map[uint64]string), 0
		t.resets++
	}
	s := string(v)
	t.runs[h] = s
	t.bytes += allocBytes(len(s))
	return s
}

// splitter cuts one encoding, src, into a record's own bytes and refs.
// Its buffers are reused from one record to the next; its owner guards
// it.
type splitter struct {
	runs *sharedRuns
	src  []byte
	json bool
	own  []byte
	refs []ref
	from int // src[from:] is not in own yet
	// dry is set while covered measures the runs inside a value: cut
	// then only adds the runs it finds to covered.
	dry                  bool
	covered, coveredRuns int
	// maxDepth is how deep the split looks: maxSplitDepth, or
	// maxEmbeddedDepth inside JSON held in a protobuf bytes field.
	maxDepth int
	// ends, while JSON is cut, holds for each byte of it at jsonBase on
	// that opens a string, an object or an array 1 + the index after
	// its value, 0 if it does not end (see matchJSON): one pass over the
	// bytes, where finding each value's end where it is met scanned its
	// bytes again at every level above it. stack is matchJSON's.
	ends     []int32
	jsonBase int
	stack    []int32
	// old and oldRefs, while a record is cut beside the one it replaces
	// (see record), are that record's encoding and its refs, each
	// at its place in old.
	old     []byte
	oldRefs []ref
	// oldNext is where reuse starts looking in oldRefs: the values it
	// is asked about come in order of place in old (a message's fields
	// in turn, a field's inside before the next field), so the first ref
	// at or after one lies at or after the first at or after the one
	// before.
	oldNext int
	// made holds the runs made while this record is cut (see takeShared).
	made []*byte
	// beside is set while a record is cut beside the one it replaces:
	// then no spans are cut (see closeSpan).
	beside bool
	// at and cores are closeCores'.
	at    []int
	cores []spanCore
	// keyed is set when field 1 of the objects cut is their
	// metav1.ObjectMeta (see message).
	keyed bool
}

// record returns the record of src, an encoding in JSON or protobuf. It
// copies what it keeps: src may be reused.
//
// src is the next encoding of the object whose record is old (nil if
// none): a field of a protobuf encoding whose bytes are those of the same
// field of old, at any depth the split looks, takes the runs old has
// inside it as they are, without looking them up again.
// An update changes a few fields of an object (a status, a resource
// version, one managedFields entry's time) and leaves the rest as it was,
// and looking up every value of the rest, each a hash and a probe of the
// table of runs, was most of what the split of an update cost.
//
// The record is then not always the one cut without old: a value that
// became a shared run after old was cut, or one met again, stays in the
// own bytes as old had it. The cut is a partition still: the runs taken
// from old hold the bytes they cover in src.
func (s *splitter) record(src []byte, json bool, old *Record) *Record {
	s.src, s.json, s.own, s.refs, s.from, s.maxDepth = src, json, s.own[:0], s.refs[:0], 0, maxSplitDepth
	s.beside = old != nil && !json && !old.json
	if s.beside {
		s.old, s.oldRefs = old.appendPlaced(s.old[:0], s.oldRefs[:0])
		s.oldNext = 0
		s.message(0, len(src), 0, 0, len(s.old))
		clear(s.oldRefs) // drop the runs
		s.oldRefs = s.oldRefs[:0]
	} else {
		s.value(0, len(src), 0)
	}
	s.gap(len(src))
	s.own = append(s.own, src[s.from:]...)
	r := newRecord(s.own, s.refs, len(src), json)
	clear(s.refs) // drop the runs
	clear(s.made)
	s.src, s.made = nil, s.made[:0]
	return r
}

// value cuts the value src[start:end] at depth, read as a message or, in
// JSON, as an object or array.
func (s *splitter) value(start, end, depth int) {
	if s.json {
		if depth == 0 {
			s.matchJSON(start, end)
		}
		s.jsonValue(start, depth)
	} else {
		s.message(start, end, depth, 0, 0)
	}
}

// cut shares src[start:end], a value at depth, if it is a shared run or
// becomes one, and reports whether it did.
func (s *splitter) cut(start, end, depth int) bool {
	return s.cutHashed(start, end, depth, s.runs.hash(s.src[start:end]))
}

// cutHashed is cut of a value whose hash is h.
func (s *splitter) cutHashed(start, end, depth int, h uint64) bool {
	v := s.src[start:end]
	if s.dry {
		if _, ok := s.runs.lookup(v, h); ok {
			s.covered += len(v)
			s.coveredRuns++
			return true
		}
		return false
	}
	run, made, ok := s.runs.meet(v, h, s.runs.seenSet(h), func(a againCount) int {
		if depth >= s.maxDepth {
			return 0
		}
		return s.worthPromoting(start, end, depth, a)
	})
	if !ok {
		return false
	}
	if made {
		s.made = append(s.made, unsafe.StringData(run))
	}
	s.take(start, end, run)
	return true
}

// takeShared puts src[start:end] in the record as a ref, and reports
// whether it did, if it is a shared run made before this record was cut:
// a field that stays in its message's span. A value the object holds
// twice (the mount of its token volume in each of its containers, in a
// cluster) is made a run at its second meeting, and is then the object's
// own, which no sibling's span holds: it ends a span as a value looked
// into does.
func (s *splitter) takeShared(start, end int, h uint64) bool {
	run, ok := s.runs.lookup(s.src[start:end], h)
	if !ok || slices.Contains(s.made, unsafe.StringData(run)) {
		return false
	}
	s.runs.shared++
	s.take(start, end, run)
	return true
}

// take puts src[start:end], whose bytes are run's, in the record as a ref
// to run, after what lies before it.
func (s *splitter) take(start, end int, run string) {
	s.gap(start)
	s.own = append(s.own, s.src[s.from:start]...)
	s.refs = append(s.refs, ref{at: uint32(len(s.own)), n: uint32(len(run)), p: unsafe.StringData(run)})
	s.from = end
}

// gap shares src[from:end], the bytes between the last run and the next
// (or the end), if they are a shared run or become one at their second
// meeting: the keys and small values between two shared values are
// often the same in every sibling (a FieldsV1's run of "f:dnsPolicy":{},
// "f:enableServiceLinks":{}, and so on). The caller then appends what is
// left of src[from:end] to own.
func (s *splitter) gap(end int) {
	v := s.src[s.from:end]
	if len(v) < minRun {
		return
	}
	h := s.runs.hash(v)
	run, _, ok := s.runs.meet(v, h, s.runs.seenSet(h), func(a againCount) int {
		if a.met < gapPromoteAfter {
			return -1
		}
		return 0
	})
	if !ok {
		return
	}
	s.refs = append(s.refs, ref{at: uint32(len(s.own)), n: uint32(len(run)), p: unsafe.StringData(run)})
	s.from = end
}

// coveredInside returns how many bytes of the value src[start:end], at
// depth, lie in shared runs already, as the split would find them looking
// into it, and in how many runs. It changes nothing.
func (s *splitter) coveredInside(start, end, depth int) (bytes, runs int) {
	s.dry, s.covered, s.coveredRuns = true, 0, 0
	s.value(start, end, depth+1)
	bytes, runs = s.covered, s.coveredRuns
	s.dry, s.covered, s.coveredRuns = false, 0, 0
	return bytes, runs
}

// worthPromoting returns 0 if the value src[start:end], at depth, met
// again as a says, is to be made a shared run now, and otherwise the
// meeting before which it is not looked at again (-1: none;
// math.MaxUint8: never; see againCount). A value whose inside is not
// mostly shared runs is made one at once. One that is (promoteMax) is a
// second copy of those runs' bytes, which saves a record that shares it
// only its own bytes around them and all but one of its refs: it is made a
// run once its meetings so far would have paid for the copy, as many again
// being expected, and not looked at before (a look is a pass over the
// value that the split's own pass repeats). The managedFields entry of a
// ReplicaSet's Pods created in one second is such a value: 5.8 KB,
// covered but for 62 bytes. In the e2e benchmarks' 10,000 Pods, created
// 139 a second over 20 ReplicaSets, a copy made at the eighth meeting
// (promoteAfter, the rule until 2026-12-02) had 1 or 2 Pods left to share
// it, and the copies held 3.4 MB.
func (s *splitter) worthPromoting(start, end, depth int, a againCount) (due int) {
	if due, waiting := a.waiting(); waiting {
		return due
	}
	covered, runs := s.coveredInside(start, end, depth)
	n := end - start
	if covered*10 < n*promoteMax {
		return 0
	}
	if int(a.met) < promoteAfter {
		return -1
	}
	return copyDue(int(a.met), n, covered, runs)
}

// waiting reports whether a value met again as a says is not to be looked
// at before a later meeting, and that meeting (math.MaxUint8: never).
func (a againCount) waiting() (due int, ok bool) {
	return int(a.due), a.due == math.MaxUint8 || a.met < a.due
}

// copyDue is when a copy of n bytes, of which covered lie in runs refs to
// shared runs, met met times, pays for itself: 0 now, when the bytes and
// refs its meetings so far save come to its block; else the meeting by
// which they will (math.MaxUint8: never).
func copyDue(met, n, covered, runs int) int {
	saves := max(n-covered, 0) + refSize*(runs-1)
	cost := allocBytes(n)
	if saves > 0 && met*saves >= cost {
		return 0
	}
	if saves <= 0 || cost/saves >= math.MaxUint8 {
		return math.MaxUint8
	}
	return (cost + saves - 1) / saves
}

// message cuts the fields of the protobuf message src[start:end], read as
// one: it stops at the first thing that is not a field. old[ostart:oend],
// if not empty, is the same message in the encoding the record replaces
// (see record): their fields are paired in order while their keys
// are the same, a field whose value has old's bytes takes old's runs
// inside it (reuse), and one that changed is cut, and looked into beside
// old's. Past the first field whose key is not old's, the rest is cut
// without old.
func (s *splitter) message(start, end, depth, ostart, oend int) {
	b, ob, oi := s.src[:end], s.old[:oend], ostart
	spans := !s.beside && !s.dry
	span := s.mark(start)
	for i := start; i < end; {
		num, typ, next, ok := walkTag(b, i)
		if !ok {
			return
		}
		var err error
		onext := 0
		if oi < oend {
			onum, otyp, n, ook := walkTag(ob, oi)
			if !ook || onum != num || otyp != typ {
				oi = oend // the rest is cut without old
			} else {
				onext = n
			}
		}
		if typ != wireBytes {
			if i, err = skip(b, next, typ); err != nil {
				return
			}
			if oi < oend {
				if oi, err = skip(ob, onext, typ); err != nil {
					oi = oend
				}
			}
			continue
		}
		vs, ve, err := lengthDelimited(b, next)
		if err != nil {
			return
		}
		ovs, ove := 0, 0 // empty: no field of old to pair with
		if oi < oend {
			if ovs, ove, err = lengthDelimited(ob, onext); err != nil {
				ovs, ove, oi = 0, 0, oend
			} else {
				oi = ove
			}
		}
		switch {
		case ve-vs < minRun:
		case ove-ovs == ve-vs && string(b[vs:ve]) == string(ob[ovs:ove]) && s.reuse(vs, ve, ovs):
		case depth == 0 && num == 1 && s.keyed:
			// An object's metadata holds its name and namespace, its
			// key, which no other object of a store has: it is never a
			// shared run, and is looked into without a hash or a probe
			// of the tables.
			if spans {
				s.closeSpan(span, i)
			}
			s.message(vs, ve, 1, ovs, ove)
			if spans {
				span = s.mark(ve)
			}
		case !spans:
			s.lookInto(vs, ve, depth, ovs, ove, s.runs.hash(b[vs:ve]))
		default:
			h := s.runs.hash(b[vs:ve])
			if s.takeShared(vs, ve, h) {
				break
			}
			s.closeSpan(span, i)
			s.lookInto(vs, ve, depth, ovs, ove, h)
			span = s.mark(ve)
		}
		i = ve
	}
	if spans && span.at != start { // else it is the whole message, a value cut already
		s.closeSpan(span, end)
	}
}

// lookInto cuts the value src[start:end] at depth, of hash h, and if it
// is not a shared run, looks into it beside old[ostart:oend] (see message).
func (s *splitter) lookInto(start, end, depth, ostart, oend int, h uint64) {
	switch {
	case s.cutHashed(start, end, depth, h) || depth >= s.maxDepth:
	case s.src[start] == '{':
		s.embeddedJSON(start, end, depth+1)
	default:
		s.message(start, end, depth+1, ostart, oend)
	}
}

// Spans. A message that is not a shared run as a whole is cut field by
// field, and a field whose value differs from every sibling's is looked
// into. The fields around it are often the siblings' byte for byte: a
// container whose mounts name the Pod's own token volume (a cluster's
// ServiceAccount admission names it per Pod) has a dozen shared values
// before that mount and more after it, each a ref, with the short fields
// between them in the record's own bytes. A span is the fields of a
// message between two that were looked into (or its start or end): once
// cut, if its bytes are a shared run, the span takes that one run's place
// instead of its refs and own bytes.
//
// A span met again is made a run once its meetings so far would have paid
// for it, as worthPromoting reckons for a value mostly covered by runs
// (which a span is: it holds at least two): the run is a second copy of
// the runs inside it. Spans are cut only in a record cut on its own (a
// listed or added object): a record cut beside the one it replaces (an
// update of the same object) takes old's spans inside the fields that did
// not change (reuse), and cuts the messages that did field by field, as
// before spans, so that an object's updates neither pay for looking its
// spans up nor make runs of spans no sibling has (a metadata span with
// the object's resource version). A field of a changed message that lay
// inside one of old's spans is cut as a changed one (see reuse).

// spanMark is where a span starts: at src[at:], and the split's state
// there, to go back to.
type spanMark struct{ at, own, refs, from int }

func (s *splitter) mark(at int) spanMark { return spanMark{at, len(s.own), len(s.refs), s.from} }

// closeSpan ends the span m at src[end:]: if its bytes are a shared run,
// or become one, the refs and own bytes its fields were cut into since m
// give way to one ref.
func (s *splitter) closeSpan(m spanMark, end int) {
	n := len(s.refs) - m.refs
	if end-m.at < minRun || n == 0 || n == 1 && int(s.refs[m.refs].n) == end-m.at {
		return // nothing to share, or one run already
	}
	v := s.src[m.at:end]
	h := s.runs.hash(v)
	run, _, ok := s.runs.meet(v, h, s.runs.spanSet(h), func(a againCount) int { return spanDue(s.refs[m.refs:], len(v), a) })
	if !ok {
		s.closeCores(m, end)
		return
	}
	clear(s.refs[m.refs:]) // drop the runs
	s.own, s.refs, s.from = s.own[:m.own], s.refs[:m.refs], m.from
	s.take(m.at, end, run)
}

// maxGlue is the most own bytes between two refs of a span's core: a
// field's tag and length, or two short fields.
const maxGlue = 4

// closeCores shares the cores of the span m, which ends at src[end:] and
// is not a shared run: its stretches of two refs or more with at most
// maxGlue own bytes between each and the next. A span holds the object's
// own short values (its resource version and creation time beside its
// labels and annotations, a container status's times beside its image),
// and the refs between them are the siblings' all the same; a core that
// is a shared run, or becomes one (as a span does), gives way to one ref.
func (s *splitter) closeCores(m spanMark, end int) {
	refs := s.refs[m.refs:]
	if len(refs) < 2 {
		return
	}
	at := s.at[:0] // where each ref lies in src
	p, o := m.from, m.own
	for _, r := range refs {
		p += int(r.at) - o
		o = int(r.at)
		at = append(at, p)
		p += int(r.n)
	}
	s.at = at
	cores := s.cores[:0]
	for i := 0; i < len(refs); {
		j := i
		for j+1 < len(refs) && at[j+1]-at[j]-int(refs[j].n) <= maxGlue {
			j++
		}
		cs, ce := at[i], at[j]+int(refs[j].n)
		if j > i && ce-cs >= minRun && (cs != m.at || ce != end) {
			v := s.src[cs:ce]
			h := s.runs.hash(v)
			run, _, ok := s.runs.meet(v, h, s.runs.spanSet(h), func(a againCount) int { return spanDue(refs[i:j+1], len(v), a) })
			if ok {
				cores = append(cores, spanCore{i, j, run})
			}
		}
		i = j + 1
	}
	s.cores = cores
	if len(cores) == 0 {
		return
	}
	// Put the span's pieces back, each core as one ref. A piece is
	// written at or before where it was read.
	own, n, from := s.own[:m.own], m.refs, m.from
	for i, k := 0, 0; i < len(refs); i++ {
		r, start, stop := refs[i], at[i], at[i]+int(refs[i].n)
		if k < len(cores) && cores[k].first == i {
			r = ref{n: uint32(len(cores[k].run)), p: unsafe.StringData(cores[k].run)}
			i = cores[k].last
			stop = at[i] + int(refs[i].n)
			k++
		}
		own = append(own, s.src[from:start]...)
		r.at = uint32(len(own))
		s.refs[n] = r
		n, from = n+1, stop
	}
	clear(s.refs[n:])               // drop the runs
	s.own, s.refs = own, s.refs[:n] // from is s.from: the last ref ends where it did
}

// spanCore is a core of a span that is a shared run: its refs first to
// last, counted from the span's first.
type spanCore struct {
	first, last int
	run         string
}

// spanDue is worthPromoting for a span (or a core of one) of n bytes cut
// into refs, met again as a says: 0 if it is to be made a run now,
// otherwise the meeting before which it is not looked at again.
func spanDue(refs []ref, n int, a againCount) int {
	if due, waiting := a.waiting(); waiting {
		return due
	}
	covered := 0
	for _, r := range refs {
		covered += int(r.n)
	}
	return copyDue(int(a.met), n, covered, len(refs))
}

// reuse puts in the record the runs of the record it replaces that lie
// inside old[ostart:ostart+end-start], at the same places in
// src[start:end], whose bytes are the same. What lies between them in old
// was its own bytes, and is here: only the bytes before the first, which
// began before the value, are looked up as a gap. It reports false, and
// does nothing, if the value lay inside one of old's runs that began
// before it (a span of its message's fields): the caller then cuts it as
// a changed value.
func (s *splitter) reuse(start, end, ostart int) bool {
	oend := ostart + end - start
	k := s.oldNext
	if k > 0 && int(s.oldRefs[k-1].at) >= ostart { // not in order: look from the start
		k, _ = slices.BinarySearchFunc(s.oldRefs, ostart, func(r ref, at int) int { return cmp.Compare(int(r.at), at) })
	}
	for k < len(s.oldRefs) && int(s.oldRefs[k].at) < ostart {
		k++
	}
	s.oldNext = k
	if k > 0 {
		if r := s.oldRefs[k-1]; int(r.at)+int(r.n) >= oend {
			return false
		}
	}
	for first := true; k < len(s.oldRefs); k++ {
		r := s.oldRefs[k]
		if int(r.at)+int(r.n) > oend {
			break // it ends past the value, and the ones after it start there
		}
		at := start + int(r.at) - ostart
		if first {
			s.gap(at)
			first = false
		}
		s.own = append(s.own, s.src[s.from:at]...)
		s.refs = append(s.refs, ref{at: uint32(len(s.own)), n: r.n, p: r.p})
		s.from = at + int(r.n)
	}
	return true
}

// embeddedJSON cuts the value src[start:end], a bytes field of a protobuf
// message that holds a JSON object (a FieldsV1's), as JSON, down to
// maxEmbeddedDepth: a managedFields entry that differs from its siblings'
// in a few bytes shares the rest. The JSON is read within its field's
// bounds only. Bytes that only start like JSON (a '{' is also the key of
// field 15 with wire type 3, a group, which no API type has) cost the
// split some work, never a wrong byte: the cut is a partition whatever the
// bytes mean.
func (s *splitter) embeddedJSON(start, end, depth int) {
	src, json, maxDepth := s.src, s.json, s.maxDepth
	s.src, s.json, s.maxDepth = src[:end], true, maxEmbeddedDepth
	s.matchJSON(start, end)
	s.jsonValue(start, depth)
	s.src, s.json, s.maxDepth, s.ends = src, json, maxDepth, s.ends[:0]
}

// matchJSON fills ends for the JSON in src[start:end]: where each string,
// object and array that starts there ends, as jsonSkip finds it, in one
// pass. An object or array that ends with the other's bracket ends there,
// as jsonSkip counts them.
func (s *splitter) matchJSON(start, end int) {
	n := end - start
	if cap(s.ends) < n {
		s.ends = make([]int32, n)
	}
	s.ends, s.jsonBase, s.stack = s.ends[:n], start, s.stack[:0]
	clear(s.ends)
	b := s.src[start:end]
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !jsonStructural[c] {
			continue
		}
		switch c {
		case '"':
			j := i + 1
			for ; j < len(b); j++ {
				if c := b[j]; c == '"' {
					break
				} else if c == '\\' {
					j++
				}
			}
			if j >= len(b) {
				return // a string that does not end: nothing after it does
			}
			s.ends[i] = int32(j + 2)
			i = j
		case '{', '[':
			s.stack = append(s.stack, int32(i))
		default: // '}', ']'
			if k := len(s.stack) - 1; k >= 0 {
				s.ends[s.stack[k]] = int32(i + 2)
				s.stack = s.stack[:k]
			}
		}
	}
}

// jsonStructural marks the bytes matchJSON looks at.
var jsonStructural = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true}

// skip returns the index after the JSON value at src[i:], -1 if there is
// none, as jsonSkip does, from ends for a string, an object or an array.
func (s *splitter) skip(i int) int {
	if i >= 0 && i < len(s.src) {
		switch s.src[i] {
		case '"', '{', '[':
			if k := i - s.jsonBase; k >= 0 && k < len(s.ends) {
				if e := s.ends[k]; e > 0 {
					return int(e) - 1 + s.jsonBase
				}
				return -1
			}
		}
	}
	return jsonSkip(s.src, i)
}

// jsonValue cuts the JSON value at src[i:], if it is an object or an
// array, and returns the index after it; -1 if src is not JSON there.
func (s *splitter) jsonValue(i, depth int) int {
	i = jsonSpace(s.src, i)
	if i >= len(s.src) || (s.src[i] != '{' && s.src[i] != '[') {
		return s.skip(i)
	}
	object := s.src[i] == '{'
	closing := byte(']')
	if object {
		closing = '}'
	}
	i = jsonSpace(s.src, i+1)
	if i < len(s.src) && s.src[i] == closing {
		return i + 1
	}
	for i < len(s.src) {
		if object {
			if i = s.skip(i); i < 0 { // the key
				return -1
			}
			if i = jsonSpace(s.src, i); i >= len(s.src) || s.src[i] != ':' {
				return -1
			}
			i = jsonSpace(s.src, i+1)
		}
		end := s.skip(i)
		if end < 0 {
			return -1
		}
		if end-i >= minRun && !s.cut(i, end, depth) && depth < s.maxDepth {
			s.jsonValue(i, depth+1)
		}
		if i = jsonSpace(s.src, end); i >= len(s.src) {
			return -1
		}
		switch s.src[i] {
		case ',':
			i = jsonSpace(s.src, i+1)
		case closing:
			return i + 1
		default:
			return -1
		}
	}
	return -1
}

// jsonSpace returns the index of the first byte at or after i that is not
// JSON white space.
func jsonSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// jsonSkip returns the index after the JSON value at b[i:], -1 if there is
// none. It checks only what it needs to find the end: brackets that
// balance, strings that end.
func jsonSkip(b []byte, i int) int {
	if i < 0 || i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		for i++; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
		return -1
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			case '"':
				end := jsonSkip(b, i)
				if end < 0 {
					return -1
				}
				i = end - 1
			}
		}
		return -1
	}
	start := i
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' && b[i] != '\r' && b[i] != '\t' {
		i++
	}
	if i == start {
		return -1
	}
	return i
}
