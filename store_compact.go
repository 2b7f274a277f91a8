package informer

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync/atomic"

	"github.com/typedkube/informer/wire"
	"k8s.io/klog/v2"
)

// A compact Store keeps each object as a wire.Record, its encoding with the
// runs of bytes objects have in common kept once, instead of the object
// (see SharedIndexInformerOptions.Compact). Its keys, index values and
// labels are computed once, when the object is written, and kept as a
// plain Store keeps them: reads find objects as fast, and decode each one
// they return, unless the codec's small cache of decoded objects has it.
// The Store meets the records through their codec alone (recordCodec): it
// never reads their bytes.
//
// An object written as an object (Add, Update, a watch event) has its
// index functions run on it and is encoded; one listed by a compact source
// arrives as a record (encoded), and is decoded for the index functions
// that need the whole object only: the namespace index and the label
// index read what they need from its key and its bytes.

// recordCodec encodes objects into records and decodes them back: package
// wire's Compact, called as itself. Not through an interface of T's
// methods: the linker keeps, for a method called through a generic
// interface, every method of that name of every type a program puts in an
// interface (it knows the name alone), and Encode and Decode kept
// go.yaml.in/yaml/v3's encoder and decoder, among others, in every
// program with a compact store's code: about 0.5 MB of a manager's
// binary.
type recordCodec[T any] = *wire.Compact[T]

// compactState is what a compact Store adds to a Store.
type compactState[T any] struct {
	codec recordCodec[T]
	// metaNamespace says that the NamespaceIndex is MetaNamespaceIndexFunc,
	// whose value for an object is the namespace in its key.
	metaNamespace bool
	// bytes is what the stored records hold (wire.Record.Bytes); updated
	// under the Store's mu.
	bytes atomic.Int64
	// failed is told about a stored record that does not decode, which a
	// read then leaves out: never seen, as records are checked when made.
	failed func(key string, err error)
	// decode is codec.Decode and sharedBytesOf codec.SharedBytesOf, for
	// the stored records: a test's may refuse, or note what it is given.
	decode        func(rec *wire.Record) (T, error)
	sharedBytesOf func(records iter.Seq[*wire.Record]) int
}

// errNotCached reports an object a compact store could not encode, which it
// left out.
var errNotCached = errors.New("informer: object not cached: it does not encode")

// encoded is an object given to a compact Store as a record: listed by a
// compact source, or encoded from an object at hand.
type encoded[T any] struct {
	key string
	rec *wire.Record // nil until obj is encoded
	// obj is the decoded object, when decoded is set: the index functions
	// run on it.
	obj     T
	decoded bool
	// labels are the object's labels read from rec's bytes, nil when not
	// read.
	labels map[string]string
	// beside is the record of the object's state that obj replaces, if
	// the store holds one: obj's encoding is cut beside it (see
	// wire.Compact.EncodeBeside).
	beside *wire.Record
}

// encodedList is a list from a compact source: its objects as records, and
// the codec that made them, for a reader that needs the objects.
type encodedList[T any] struct {
	items []encoded[T]
	codec recordCodec[T]
}

// decoded returns the objects of l and their keys, decoding the records.
func (l *encodedList[T]) decoded() ([]T, []string, error) {
	objs := make([]T, len(l.items))
	keys := make([]string, len(l.items))
	for i := range l.items {
		e := &l.items[i]
		keys[i] = e.key
		if e.decoded {
			objs[i] = e.obj
			continue
		}
		obj, err := l.codec.Decode(e.rec)
		if err != nil {
			return nil, nil, fmt.Errorf("informer: decode the listed object %s: %w", e.key, err)
		}
		objs[i] = obj
	}
	return objs, keys, nil
}

// setCompact makes s, which must be empty, a compact store of codec's
// records. metaNamespace is as for compactState.
func (s *Store[T]) setCompact(codec recordCodec[T], metaNamespace bool) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.compact = &compactState[T]{codec: codec, metaNamespace: metaNamespace, failed: logDecodeFailure, decode: codec.Decode, sharedBytesOf: codec.SharedBytesOf}
}

func logDecodeFailure(key string, err error) {
	klog.Background().Error(err, "Left out of a read a cached object that does not decode", "key", key)
}

// Compact reports whether s keeps its objects as records, and how many
// bytes those hold: each record's own (wire.Record.Bytes), and the runs
// they share, once (wire.Compact.SharedBytesOf); not the objects its codec
// caches decoded, nor what the Store spends on keys and indexes. Once the
// codec's bounded table of shared runs has started over, this walks the
// stored records' runs, holding the Store's read lock.
func (s *Store[T]) Compact() (compact bool, bytes int64) {
	if s.compact == nil {
		return false, 0
	}
	shared := s.compact.sharedBytesOf(func(yield func(*wire.Record) bool) {
		s.mu.RLock()
		defer s.mu.RUnlock()
		for _, sl := range s.items {
			if sl.rec != nil && !yield(sl.rec) {
				return
			}
		}
	})
	return true, s.compact.bytes.Load() + int64(shared)
}

// account records that old, if not nil, left the store and rec, if not nil,
// came in. The caller holds mu.
func (c *compactState[T]) account(old, rec *wire.Record) {
	var d int64
	if old != nil {
		d -= int64(old.Bytes())
	}
	if rec != nil {
		d += int64(rec.Bytes())
	}
	c.bytes.Add(d)
}

// decode returns the object of rec, stored under key; ok is false if it
// does not decode.
func (s *Store[T]) decode(key string, rec *wire.Record) (obj T, ok bool) {
	return decodeRecord(s, key, rec)
}

// decodeRecord is Store.decode with key a string or the bytes of one,
// made a string only to report a record that does not decode.
func decodeRecord[T any, K string | []byte](s *Store[T], key K, rec *wire.Record) (obj T, ok bool) {
	obj, err := s.compact.decode(rec)
	if err != nil {
		s.compact.failed(string(key), err)
		return obj, false
	}
	return obj, true
}

// forget tells a compact store's codec that old's record has left the
// store, once nothing more needs its object from the codec's cache (an
// update's old object is read for the handlers first): its place in the
// cache of decoded objects goes to the next record, rather than the clock
// hand evicting a live one for it.
func (s *Store[T]) forget(old entry[T]) {
	if old.rec != nil && s.compact != nil {
		s.compact.codec.Forget(old.rec)
	}
}

// objectOf returns the object of e, decoded from its record in a compact
// store; ok is false if it does not decode.
func (s *Store[T]) objectOf(e entry[T]) (T, bool) {
	if e.rec == nil {
		return e.obj, true
	}
	return s.decode(e.key, e.rec)
}

// objectBeside returns the object of old, which stored replaced (see
// wire.Compact.DecodeBeside), for a reader that has stored's object like:
// the parts of old's record whose bytes are stored's are like's.
func (s *Store[T]) objectBeside(old, stored entry[T], like T) (T, bool) {
	if old.rec == nil {
		return old.obj, true
	}
	obj, err := s.compact.codec.DecodeBeside(old.rec, stored.rec, like)
	if err != nil {
		s.compact.failed(old.key, err)
		return obj, false
	}
	return obj, true
}

// materialize decodes the records of es in place, leaving out those that
// do not decode, and returns what remains. It holds no lock.
func (s *Store[T]) materialize(es []entry[T]) []entry[T] {
	n := 0
	for _, e := range es {
		if obj, ok := s.objectOf(e); ok {
			es[n] = entry[T]{key: e.key, obj: obj}
			n++
		}
	}
	clear(es[n:])
	return es[:n]
}

// objects returns the objects of es in a new slice.
func (s *Store[T]) objects(es []entry[T]) []T {
	out := make([]T, len(es))
	for i, e := range es {
		out[i] = e.obj
	}
	return out
}

// recordOf returns the record stored under key in a compact store, nil if
// none.
func (s *Store[T]) recordOf(key string) *wire.Record {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sl, ok := s.items[key]; ok {
		return sl.rec
	}
	return nil
}

// prepare computes e's index values into dst, and its labels if the Store
// has a label index, decoding e's record only for the functions that need
// the object; then it encodes e's object if e has no record. It returns
// the values (dst, grown), the labels, and the first error: with lenient,
// only an encoding error fails it (a failing index leaves its values out,
// as in replace); without, any error does. The caller holds writeMu.
//
// The namespace index's value is read from e's key into a slice the next
// call reuses, unless keep is set.
func (s *Store[T]) prepare(e *encoded[T], dst [][]string, lenient, keep bool) ([][]string, map[string]string, error) {
	c := s.compact
	idx := s.idx.Load()
	var firstErr error
	// object decodes e's record once, for the functions that need it.
	object := func() (T, error) {
		if !e.decoded {
			obj, err := c.decode(e.rec)
			if err != nil {
				return obj, err
			}
			e.obj, e.decoded = obj, true
		}
		return e.obj, nil
	}
	for i := range idx.len() {
		var v []string
		var err error
		if !e.decoded && c.metaNamespace && idx.names[i] == NamespaceIndex {
			v = s.namespaceValue(e.key, keep)
		} else if obj, derr := object(); derr != nil {
			err = derr
		} else {
			v, err = idx.value(i, obj)
		}
		if err != nil {
			if !lenient {
				return dst, nil, err
			}
			firstErr = cmp.Or(firstErr, err)
		}
		dst = append(dst, v)
	}
	var lbls map[string]string
	if s.labelsOf != nil {
		switch {
		case e.decoded:
			lbls = s.labelsOf(e.obj)
		case s.metaLabels && e.labels != nil:
			lbls = e.labels
		case s.metaLabels:
			var err error
			if lbls, err = c.codec.Labels(e.rec); err != nil {
				firstErr = cmp.Or(firstErr, err)
			}
		default:
			if obj, err := object(); err != nil {
				firstErr = cmp.Or(firstErr, err)
			} else {
				lbls = s.labelsOf(obj)
			}
		}
	}
	if e.rec == nil {
		rec, err := c.codec.EncodeBeside(e.obj, e.beside)
		if err != nil {
			return dst, nil, fmt.Errorf("%w: %w", errNotCached, err)
		}
		e.rec = rec
	}
	return dst, lbls, firstErr
}

// namespaceValue returns, as an index value, the namespace of key: the
// part before its slash, "" without one, which is part of key. Unless
// keep, the slice is reused by the next call. The caller holds writeMu.
func (s *Store[T]) namespaceValue(key string, keep bool) []string {
	ns, _, _ := cutLast(key)
	if keep {
		return []string{ns}
	}
	s.nsScratch[0] = ns
	return s.nsScratch[:]
}

// cutLast splits key at its slash.
func cutLast(key string) (before, after string, found bool) {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return "", key, false
}

// upsertRecord stores e under key in a compact store, as upsertVersion
// does (key "" included), and returns the entry it stored (its key, and
// its record unless it stored none) and the entry it replaced.
// lenient is as for replace.
func (s *Store[T]) upsertRecord(key string, e encoded[T], lenient bool) (stored entry[T], old entry[T], existed bool, err error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	key = s.keyLocked(key, e.obj)
	e.key = key
	if sl, ok := s.items[key]; ok {
		e.beside = sl.rec
	}
	vals, lbls, err := s.prepare(&e, s.scratch[:0], lenient, false)
	s.scratch = vals
	defer clear(vals)
	stored.key = key
	if e.rec == nil || (err != nil && !lenient) {
		return stored, old, false, err
	}
	s.mu.Lock()
	var zero T
	old, existed = s.putLocked(key, zero, e.rec, vals, lbls, 0)
	s.mu.Unlock()
	stored.rec = e.rec
	return stored, old, existed, err
}

// replaceEncoded makes the Store hold the objects of list, records from a
// compact source, as replace does; a Store that is not compact decodes
// them.
func (s *Store[T]) replaceEncoded(list *encodedList[T], lenient bool) error {
	if s.compact != nil {
		return s.replaceRecords(list.items, lenient)
	}
	objs, keys, err := list.decoded()
	if err != nil {
		return err
	}
	return s.replace(objs, keys, lenient)
}

// replaceObjects is replace for a compact store: the objects are encoded
// first.
func (s *Store[T]) replaceObjects(list []T, keys []string, lenient bool) error {
	recs := make([]encoded[T], len(list))
	for i, obj := range list {
		recs[i] = encoded[T]{key: keys[i], obj: obj, decoded: true}
	}
	return s.replaceRecords(recs, lenient)
}

// replaceRecords makes a compact Store hold list, as replace does, keeping
// the slots of the records already stored (a relist that reused them) as
// they are when most are.
func (s *Store[T]) replaceRecords(list []encoded[T], lenient bool) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if lenient && s.fewRecordChanges(list) {
		return s.patchRecords(list)
	}
	idx := s.idx.Load().empty()
	items := make(map[string]*slot[T], len(list))
	ar := arena[T]{width: idx.len()}
	ar.reserve(len(list))
	var li *labelIndex
	if s.labelsOf != nil {
		li = newLabelIndex()
	}
	// The index functions run on the new index set's functions, which
	// are the old set's.
	defer func() { clear(s.scratch) }()
	var firstErr error
	var bytes, entries int64
	for i := range list {
		e := &list[i]
		vals, lbls, err := s.prepare(e, s.scratch[:0], lenient, false)
		s.scratch = vals
		if err != nil {
			if !lenient {
				return err
			}
			firstErr = cmp.Or(firstErr, err)
		}
		if e.rec == nil { // it does not encode: left out
			clear(vals)
			continue
		}
		sl, ok := items[e.key]
		if !ok {
			sl = ar.alloc()
			sl.key = e.key
			items[sl.key] = sl
			sl.setAllVals(vals)
			idx.index(sl)
		} else {
			bytes -= int64(sl.rec.Bytes())
			entries -= int64(sl.size)
			idx.reindex(sl, vals)
		}
		sl.rec = e.rec
		bytes += int64(e.rec.Bytes())
		if li != nil {
			li.set(sl.id, lbls)
		}
		sl.size = s.entrySize(sl.key, len(vals), len(lbls))
		entries += int64(sl.size)
		clear(vals)
		// The object decoded for the index functions is not kept with
		// the list: a list of thousands would otherwise hold every
		// object decoded until the last is stored (the codec's cache
		// keeps the most recent).
		var zero T
		e.obj, e.decoded = zero, false
	}
	s.mu.Lock()
	prev := s.items
	s.items, s.arena, s.labels = items, ar, li
	s.idx.Store(idx)
	s.compact.bytes.Store(bytes)
	s.bytes.Store(entries)
	s.mu.Unlock()
	for key, sl := range prev {
		if now, ok := items[key]; !ok || now.rec != sl.rec {
			s.compact.codec.Forget(sl.rec)
		}
	}
	return firstErr
}

// fewRecordChanges is fewChanges for records: an unchanged object is the
// very same record. The caller holds writeMu.
func (s *Store[T]) fewRecordChanges(list []encoded[T]) bool {
	if len(s.items) == 0 {
		return false
	}
	budget := len(list)/4 + 1
	same := 0
	for i := range list {
		if sl, ok := s.items[list[i].key]; ok && sl.rec == list[i].rec {
			same++
		} else if budget--; budget == 0 {
			return false
		}
	}
	return len(s.items)-same < budget
}

// patchRecords is patch for records: the records already stored stay as
// they are, with their index entries. The caller holds writeMu.
func (s *Store[T]) patchRecords(list []encoded[T]) error {
	s.gen++
	gen := s.gen
	type change struct {
		i    int
		vals [][]string
		lbls map[string]string
	}
	var changes []change
	var firstErr error
	var added map[string]bool
	var zero T
	for i := len(list) - 1; i >= 0; i-- {
		e := &list[i]
		if sl, ok := s.items[e.key]; ok {
			if sl.mark == gen {
				continue
			}
			sl.mark = gen
			if sl.rec == e.rec {
				continue
			}
		} else {
			if added[e.key] {
				continue
			}
			if added == nil {
				added = make(map[string]bool)
			}
			added[e.key] = true
		}
		vals, lbls, err := s.prepare(e, nil, true, true)
		firstErr = cmp.Or(firstErr, err)
		if e.rec == nil {
			continue
		}
		changes = append(changes, change{i: i, vals: vals, lbls: lbls})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range changes {
		e := &list[c.i]
		old, _ := s.putLocked(e.key, zero, e.rec, c.vals, c.lbls, 0)
		s.forget(old) // the handlers' old objects were read before
		s.items[e.key].mark = gen
	}
	for key, sl := range s.items {
		if sl.mark != gen {
			s.deleteLocked(key)
		}
	}
	return firstErr
}

// writtenObject returns the object of sl, for a writer computing index
// values: in a compact store, its record decoded. The caller holds writeMu.
func (s *Store[T]) writtenObject(sl *slot[T]) (T, error) {
	if sl.rec == nil {
		return sl.obj, nil
	}
	return s.compact.decode(sl.rec)
}

// writtenLabels returns the labels labelsOf gives sl's object, for a
// writer: in a compact store, read from its record's bytes when meta says
// that labelsOf is MetaLabelsFunc. The caller holds writeMu.
func (s *Store[T]) writtenLabels(sl *slot[T], labelsOf LabelsFunc[T], meta bool) (map[string]string, error) {
	if sl.rec != nil && meta {
		return s.compact.codec.Labels(sl.rec)
	}
	obj, err := s.writtenObject(sl)
	if err != nil {
		return nil, err
	}
	return labelsOf(obj), nil
}

// acceptsRecord is selectBuf.accepts for a candidate of a compact store,
// whose labels are read from its record's bytes rather than decoded when
// the label index's function is MetaLabelsFunc. A candidate that does not
// decode fails.
func (x *Indexer[T]) acceptsRecord(b *selectBuf[T], e entry[T]) bool {
	c := x.compact
	var ls map[string]string
	if b.metaLabels {
		var err error
		if ls, err = c.codec.Labels(e.rec); err != nil {
			c.failed(e.key, err)
			return false
		}
	} else {
		obj, ok := x.decode(e.key, e.rec)
		if !ok {
			return false
		}
		ls = b.labelsOf(obj)
	}
	return b.acceptsLabels(ls)
}

// object returns the object of the i-th item of l, decoding its record if
// needed.
func (l *encodedList[T]) object(i int) (T, error) {
	if e := &l.items[i]; e.decoded {
		return e.obj, nil
	}
	return l.codec.Decode(l.items[i].rec)
}

// len returns the length of l, which may be nil.
func (l *encodedList[T]) len() int {
	if l == nil {
		return 0
	}
	return len(l.items)
}

// orNil returns l, or nil if it holds nothing.
func (l *encodedList[T]) orNil() *encodedList[T] {
	if l.len() == 0 {
		return nil
	}
	return l
}

// appendPage returns l, which may be nil, with the records of page
// appended. A first page that is not the last makes room for the rest, as
// the server counts it.
func (l *encodedList[T]) appendPage(page *ListPage[T]) *encodedList[T] {
	if len(page.encoded.items) == 0 {
		return l
	}
	if l == nil {
		l = &encodedList[T]{items: page.encoded.items, codec: page.encoded.codec}
		if rest := page.RemainingItemCount; page.Continue != "" && rest != nil && *rest > 0 {
			l.items = slices.Grow(slices.Clip(l.items), int(min(*rest, maxPrealloc)))
		}
		return l
	}
	l.items = append(l.items, page.encoded.items...)
	return l
}
