package informer

import (
	"cmp"
	"hash/maphash"
	"iter"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/typedkube/informer/wire"
)

// Store is a thread-safe cache of objects of type T, each under the key its
// KeyFunc gives. It is the typed counterpart of client-go's cache.Store; an
// Indexer is a Store with secondary indexes.
//
// Objects handed out by a Store are shared with it: never mutate them.
//
// Every write computes the object's key before taking any lock, and an
// Indexer computes index values while holding only the writer lock, which
// excludes other writers but not readers: key and index functions may read
// the Store, and must not write to it.
//
// A Store must not be copied after first use.
type Store[T any] struct {
	keyFunc KeyFunc[T]

	// writeMu serializes writers. A writer holds it while it runs index
	// functions, so that the values it computes outside mu stay valid until
	// it applies them under mu; AddIndexers holds it while it indexes every
	// object. Readers never take it.
	writeMu sync.Mutex
	scratch [][]string // index values of the write in progress; guarded by writeMu
	// nsScratch holds the namespace index value of a record being
	// written to a compact store; guarded by writeMu.
	nsScratch [1]string
	// appendKey, set before the Store is first written, appends to its
	// first argument the key of an object, as keyFunc makes it, for a
	// writer that leaves the key to the Store (see keyLocked); keyBuf
	// holds it, guarded by writeMu. nil in a Store of its own.
	appendKey func([]byte, T) []byte
	keyBuf    []byte

	mu    sync.RWMutex // guards items, arena and the buckets of idx
	items map[string]*slot[T]
	arena arena[T]
	// idx holds the indexes; nil for a plain Store. It is replaced, by
	// Replace and AddIndexers, only with writeMu and mu held, and its names
	// never change, so a reader may load it without a lock to look a name
	// up; its buckets are guarded by mu.
	idx atomic.Pointer[indexSet[T]]
	// labels indexes the objects' labels, as labelsOf gives them; nil
	// without a label index. Both are set, and labels replaced, only with
	// writeMu and mu held, so a writer may read them holding writeMu; the
	// postings of labels are guarded by mu.
	labels   *labelIndex
	labelsOf LabelsFunc[T]
	// metaLabels says that labelsOf is MetaLabelsFunc, set by the
	// informer that adds it: a compact store then reads an object's
	// labels from its record's bytes rather than decoding it. A label
	// index added by AddLabelIndex never sets it, whatever its function.
	// Set with labelsOf.
	metaLabels bool
	// versionOf, set by an informer before it starts, gives an object's
	// resource version, whose versionHash the slots keep (see entry.rvh);
	// nil in a Store of its own, whose slots keep none.
	versionOf func(T) string

	snapshots sync.Pool // of *[]entry[T], reused by the iterators

	// pointers is true when T is a pointer type, whose values tell an
	// unchanged object (the very same pointer) from a changed one.
	pointers bool
	gen      uint32 // relist generation, for patch; guarded by writeMu

	// compact is set, before the Store is first written, for a compact
	// store, which keeps each object as a record (see store_compact.go):
	// its slots hold records, never objects.
	compact *compactState[T]

	// sizer, set before the Store is first written, tells the bytes of
	// its objects; without, the Store counts none (see storebytes.go).
	sizer objectSizer[T]
	// bytes is the sum of the slots' sizes; updated under mu.
	bytes atomic.Int64
}

// slot holds one stored object. Slots live in an arena, so a *slot stays
// valid while its key is stored, and index buckets point at slots directly.
//
// Invariant: items[k] == s iff s.key == k; a free slot has an empty key.
type slot[T any] struct {
	id   uint32 // the slot's id in its arena (see arena.slot), for the label index
	mark uint32 // the Store's relist generation that last saw the slot (see patch)
	key  string
	obj  T
	rec  *wire.Record // in a compact store, the object's record; obj is then zero
	vals [][]string   // the index values of obj, one entry per index of idx, owned by the slot (see setVals)
	one  []string     // per index: where vals keeps a single value
	pos  []int32      // per index with one value: the slot's position in its bucket
	size uint32       // the bytes the entry holds besides obj, as entrySize counted them when it was stored
	// rvh is versionHash of obj's resource version when the informer
	// stored it, 0 when unknown (see entry.rvh).
	rvh uint32
	// lbls is the labels map of obj that the label index holds, in a
	// decoded store with one: a new object's map is compared with it
	// without reading the old object, whose memory is rarely in the CPU's
	// cache any more when its next version arrives.
	lbls map[string]string
	// objSize is obj's bytes, counted by the first storeBytes after obj
	// was stored (see sizeObjects); 0 until then. ver counts the objects
	// stored in the slot, so that a count taken of one is never kept for
	// the next.
	objSize, ver uint32
}

// setVals records v as the values of index i. The slot keeps its own copy,
// never the slice an index function returned: a function may reuse its
// buffer, or return memory of the object (MetaNamespaceIndexFunc), which a
// caller who mutates a stored object would change under the index. A single
// value, the common case, is kept in the slot's arena storage: copying a
// string header allocates nothing.
func (sl *slot[T]) setVals(i int, v []string) {
	switch len(v) {
	case 0:
		sl.vals[i] = nil
	case 1:
		sl.one[i] = v[0]
		sl.vals[i] = sl.one[i : i+1 : i+1]
	default:
		sl.vals[i] = slices.Clone(v)
	}
}

// setAllVals records vals as the values of every index.
func (sl *slot[T]) setAllVals(vals [][]string) {
	for i, v := range vals {
		sl.setVals(i, v)
	}
}

// entry is a stored object as a read takes it out under the lock: its
// object, or in a compact store its record, which the read decodes once
// the lock is released (see materialize).
type entry[T any] struct {
	key string
	obj T
	rec *wire.Record
	// rvh is versionHash of obj's resource version, or 0 if the writer
	// gave none: two different hashes tell that two versions differ
	// without reading obj, whose memory is rarely in the CPU's cache any
	// more when the next version arrives.
	rvh uint32
}

// entry returns the slot's entry.
func (sl *slot[T]) entry() entry[T] { return entry[T]{sl.key, sl.obj, sl.rec, sl.rvh} }

// NewStore returns an empty Store that keys objects with keyFunc. It panics
// if keyFunc is nil.
func NewStore[T any](keyFunc KeyFunc[T]) *Store[T] {
	s := &Store[T]{}
	s.init(keyFunc, nil)
	return s
}

func (s *Store[T]) init(keyFunc KeyFunc[T], idx *indexSet[T]) {
	if keyFunc == nil {
		panic("informer: NewStore with a nil KeyFunc")
	}
	s.keyFunc = keyFunc
	k := reflect.TypeFor[T]().Kind()
	s.pointers = k == reflect.Pointer || k == reflect.Interface
	s.items = make(map[string]*slot[T])
	s.idx.Store(idx)
	s.arena.width = idx.len()
}

// Add inserts obj, or replaces the object stored under its key.
func (s *Store[T]) Add(obj T) error {
	key, err := keyOf(s.keyFunc, obj)
	if err != nil {
		return err
	}
	return s.put(key, obj)
}

// Update is Add: it stores obj under its key, whether or not it was present.
func (s *Store[T]) Update(obj T) error { return s.Add(obj) }

// Delete removes the object stored under obj's key, if any.
func (s *Store[T]) Delete(obj T) error {
	key, err := keyOf(s.keyFunc, obj)
	if err != nil {
		return err
	}
	s.deleteKey(key)
	return nil
}

// Get returns the object stored under obj's key.
func (s *Store[T]) Get(obj T) (item T, exists bool, err error) {
	key, err := keyOf(s.keyFunc, obj)
	if err != nil {
		return item, false, err
	}
	item, exists = s.GetByKey(key)
	return item, exists, nil
}

// GetByKey returns the object stored under key.
func (s *Store[T]) GetByKey(key string) (item T, exists bool) { return getByKey(s, key) }

// GetByKeyOwned is GetByKey for a reader that keeps or changes the object
// it reads, as controller-runtime's cache does with the copy its Get
// returns: owned reports that item is the reader's own, an object a
// compact store decoded for this read alone, which shares nothing a reader
// could write to (a map, a slice, a pointer) with any other object, so
// that the reader may keep and change it without a copy. Otherwise item is
// the cached object, read-only, as GetByKey returns it: always, in a store
// that is not compact, and in a compact one for an object its codec's
// small cache holds decoded.
func (s *Store[T]) GetByKeyOwned(key string) (item T, owned, exists bool) {
	item, rec, ok := lookup(s, key)
	if rec == nil {
		return item, false, ok
	}
	obj, owned, err := s.compact.codec.DecodeOwned(rec)
	if err != nil {
		s.compact.failed(key, err)
		var zero T
		return zero, false, false
	}
	return obj, owned, true
}

// getKeyBytes is GetByKey of the key spelled by key, which it does not
// keep: a caller builds the key in a buffer of its own, and a read that
// finds its object allocates no string for it.
func (s *Store[T]) getKeyBytes(key []byte) (item T, exists bool) { return getByKey(s, key) }

// getByKey is GetByKey of key, a string or the bytes of one.
func getByKey[T any, K string | []byte](s *Store[T], key K) (item T, exists bool) {
	item, rec, ok := lookup(s, key)
	if rec != nil {
		return decodeRecord(s, key, rec)
	}
	return item, ok
}

// lookup returns what s stores under key: the object, or in a compact
// store the record (item is then zero).
func lookup[T any, K string | []byte](s *Store[T], key K) (item T, rec *wire.Record, exists bool) {
	s.mu.RLock()
	sl, ok := s.items[string(key)] // no copy: the compiler reads key in place
	if ok {
		item, rec = sl.obj, sl.rec
	}
	s.mu.RUnlock()
	return item, rec, ok
}

// Len returns the number of stored objects.
func (s *Store[T]) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.items)
}

// List returns every stored object, in unspecified order, in one newly
// allocated slice.
func (s *Store[T]) List() []T {
	if s.compact != nil {
		return s.objects(s.snapshot())
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]T, 0, len(s.items))
	for sl := range s.arena.live {
		out = append(out, sl.obj)
	}
	return out
}

// ListKeys returns every key, in unspecified order.
func (s *Store[T]) ListKeys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.items))
	for sl := range s.arena.live {
		out = append(out, sl.key)
	}
	return out
}

// All returns an iterator over the keys and objects of the Store, in
// unspecified order. It takes no snapshot and allocates nothing: it copies
// the objects a batch at a time while holding the read lock, and holds no
// lock while the loop body runs, so the body may read and write the Store.
// Like sync.Map.Range, it yields exactly once every object stored for the
// whole iteration, and may or may not yield objects stored or deleted
// meanwhile; an object updated meanwhile is yielded in one of its states.
func (s *Store[T]) All() iter.Seq2[string, T] {
	return func(yield func(string, T) bool) { s.yieldAll(yield) }
}

// Keys returns an iterator over the keys of the Store, in unspecified order,
// with the guarantees of All.
func (s *Store[T]) Keys() iter.Seq[string] {
	return func(yield func(string) bool) {
		s.yieldAll(func(k string, _ T) bool { return yield(k) })
	}
}

// iterBatch is how many objects All copies per acquisition of the read lock.
const iterBatch = 128

func (s *Store[T]) yieldAll(yield func(string, T) bool) {
	var buf [iterBatch]entry[T]
	defer clear(buf[:]) // drop the object references
	// Slots never move while they hold an object, and Replace builds a new
	// arena without touching the old one, so the position (ci, si) in the
	// chunks first seen stays meaningful between batches.
	var chunks []*chunk[T]
	ci, si := 0, 0
	for first := true; ; first = false {
		n := 0
		s.mu.RLock()
		if first {
			chunks = s.arena.chunks
		}
		for ci < len(chunks) && n < len(buf) {
			c := chunks[ci]
			for ; si < c.used && n < len(buf); si++ {
				if sl := &c.slots[si]; sl.key != "" {
					buf[n] = sl.entry()
					n++
				}
			}
			if si >= c.used {
				ci, si = ci+1, 0
			}
		}
		s.mu.RUnlock()
		batch := buf[:n]
		if s.compact != nil {
			batch = s.materialize(batch)
		}
		for _, e := range batch {
			if !yield(e.key, e.obj) {
				return
			}
		}
		if n < len(buf) {
			return
		}
	}
}

// snapshot returns the keys and objects of the Store in a new slice.
func (s *Store[T]) snapshot() []entry[T] {
	s.mu.RLock()
	out := make([]entry[T], 0, len(s.items))
	for sl := range s.arena.live {
		out = append(out, sl.entry())
	}
	s.mu.RUnlock()
	if s.compact != nil {
		out = s.materialize(out)
	}
	return out
}

// snapshotRecords is snapshot that leaves a compact store's records
// undecoded, for a reader that decodes each when it needs it (a late
// handler's replay): it holds only the records, which the store holds
// anyway, not an object decoded for each.
func (s *Store[T]) snapshotRecords() []entry[T] {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]entry[T], 0, len(s.items))
	for sl := range s.arena.live {
		out = append(out, sl.entry())
	}
	return out
}

func (s *Store[T]) getSnapshot() *[]entry[T] {
	if b, ok := s.snapshots.Get().(*[]entry[T]); ok {
		return b
	}
	return new([]entry[T])
}

func (s *Store[T]) putSnapshot(b *[]entry[T]) {
	clear(*b) // drop the object references
	*b = (*b)[:0]
	s.snapshots.Put(b)
}

// Replace makes the Store hold exactly list, atomically for readers. When
// list has several objects with one key, the last one wins. On error the
// Store is unchanged. resourceVersion is accepted for the reflector's sake
// and not used.
func (s *Store[T]) Replace(list []T, resourceVersion string) error {
	keys := make([]string, len(list))
	for i, obj := range list {
		key, err := keyOf(s.keyFunc, obj)
		if err != nil {
			return err
		}
		keys[i] = key
	}
	return s.replace(list, keys, false)
}

// replace makes the Store hold list, whose keys are keys. If lenient, an
// object an index function fails on is stored without that index's values
// and the first such error is returned; otherwise the first error fails the
// call and changes nothing.
func (s *Store[T]) replace(list []T, keys []string, lenient bool) error {
	if s.compact != nil {
		return s.replaceObjects(list, keys, lenient)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if lenient && s.fewChanges(list, keys) {
		return s.patch(list, keys)
	}
	// Build the new contents without holding mu: readers see the old
	// contents until the swap below.
	idx := s.idx.Load().empty()
	items := make(map[string]*slot[T], len(list))
	ar := arena[T]{width: idx.len()}
	ar.reserve(len(list))
	var li *labelIndex
	if s.labelsOf != nil {
		li = newLabelIndex()
	}
	defer func() { clear(s.scratch) }()
	var firstErr error
	var bytes int64
	for i, obj := range list {
		vals, err := idx.values(obj, s.scratch[:0], lenient)
		s.scratch = vals
		if err != nil {
			if !lenient {
				return err
			}
			firstErr = cmp.Or(firstErr, err)
		}
		sl, ok := items[keys[i]]
		if !ok {
			sl = ar.alloc()
			sl.key = keys[i]
			items[sl.key] = sl
			sl.setAllVals(vals)
			idx.index(sl)
		} else {
			idx.reindex(sl, vals)
			bytes -= int64(sl.size)
		}
		sl.obj = obj
		if s.versionOf != nil {
			sl.rvh = versionHash(s.versionOf(obj))
		}
		var lbls map[string]string
		if li != nil {
			lbls = s.labelsOf(obj)
			s.indexLabels(li, sl, lbls)
		}
		sl.size = s.entrySize(sl.key, idx.len(), len(lbls))
		bytes += int64(sl.size)
	}
	s.mu.Lock()
	s.items, s.arena, s.labels = items, ar, li
	s.idx.Store(idx)
	s.bytes.Store(bytes)
	s.mu.Unlock()
	return firstErr
}

// fewChanges reports whether list, whose keys are keys, differs from the
// Store's contents in few objects: a relist that finds most objects
// unchanged, as a relist after a 410 does when the cached objects are
// reused (the very same pointers). The caller holds writeMu.
func (s *Store[T]) fewChanges(list []T, keys []string) bool {
	if !s.pointers || len(s.items) == 0 {
		return false
	}
	budget := len(list)/4 + 1
	same := 0
	for i, obj := range list {
		if sl, ok := s.items[keys[i]]; ok && sameObject(sl.obj, obj) {
			same++
		} else if budget--; budget == 0 {
			return false
		}
	}
	// The objects no longer listed are deleted: they count too.
	return len(s.items)-same < budget
}

// samePointer reports whether a and b, of a pointer-shaped type (a pointer,
// or a func value, which points at its closure record), are one pointer.
func samePointer[T any](a, b T) bool {
	return *(*unsafe.Pointer)(unsafe.Pointer(&a)) == *(*unsafe.Pointer)(unsafe.Pointer(&b))
}

// sameObject reports whether a and b, objects of a Store whose pointers is
// true, are one object: one pointer, or interfaces holding one pointer of
// one type.
func sameObject[T any](a, b T) bool {
	if unsafe.Sizeof(a) == unsafe.Sizeof(unsafe.Pointer(nil)) {
		return samePointer(a, b)
	}
	return *(*[2]unsafe.Pointer)(unsafe.Pointer(&a)) == *(*[2]unsafe.Pointer)(unsafe.Pointer(&b))
}

// patch makes the Store hold list, whose keys are keys, in place: the
// objects that are the very same pointers stay as they are, with their
// index entries; the others are stored or replaced, and the objects not
// in list deleted. The index functions and labels of the changed objects
// run first, without mu, since they may read the Store; then patch holds
// mu throughout, so readers see the old contents or the new. It allocates
// only for what changed. Index errors are as for a lenient replace. The
// caller holds writeMu, so that the contents cannot change meanwhile.
func (s *Store[T]) patch(list []T, keys []string) error {
	s.gen++
	gen := s.gen
	type change struct {
		i    int
		vals [][]string
		lbls map[string]string
		rvh  uint32
	}
	var changes []change
	var firstErr error
	var added map[string]bool // keys not stored yet that a later duplicate decided
	idx := s.idx.Load()
	// Backwards, so that of a key listed twice the last wins, as in a
	// replace: the first met decides, and marks the key.
	for i := len(list) - 1; i >= 0; i-- {
		obj := list[i]
		if sl, ok := s.items[keys[i]]; ok {
			if sl.mark == gen {
				continue // listed again later
			}
			sl.mark = gen // only writers read marks
			if sameObject(sl.obj, obj) {
				continue
			}
		} else {
			if added[keys[i]] {
				continue
			}
			if added == nil {
				added = make(map[string]bool)
			}
			added[keys[i]] = true
		}
		vals, err := idx.values(obj, nil, true)
		firstErr = cmp.Or(firstErr, err)
		c := change{i: i, vals: vals}
		if s.labelsOf != nil {
			c.lbls = s.labelsOf(obj)
		}
		if s.versionOf != nil {
			c.rvh = versionHash(s.versionOf(obj))
		}
		changes = append(changes, c)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range changes {
		s.putLocked(keys[c.i], list[c.i], nil, c.vals, c.lbls, c.rvh)
		s.items[keys[c.i]].mark = gen
	}
	for key, sl := range s.items {
		if sl.mark != gen {
			s.deleteLocked(key)
		}
	}
	return firstErr
}

// put stores obj under key.
func (s *Store[T]) put(key string, obj T) error {
	_, _, err := s.upsert(key, obj, false)
	return err
}

// upsert stores obj under key and returns the entry it replaced (see
// objectOf). lenient is as for replace.
func (s *Store[T]) upsert(key string, obj T, lenient bool) (old entry[T], existed bool, err error) {
	_, old, existed, err = s.upsertVersion(key, obj, 0, lenient)
	return old, existed, err
}

// upsertVersion is upsert for a writer that knows rvh, the versionHash of
// obj's resource version, which the slot keeps (see entry.rvh). A key of
// "" asks for the key appendKey makes of obj, which the Store must have
// (see keyLocked); upsertVersion returns the entry it stored: the key it
// stored obj under, and in a compact store obj's record (nil if none).
func (s *Store[T]) upsertVersion(key string, obj T, rvh uint32, lenient bool) (stored entry[T], old entry[T], existed bool, err error) {
	if s.compact != nil {
		return s.upsertRecord(key, encoded[T]{key: key, obj: obj, decoded: true}, lenient)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	key = s.keyLocked(key, obj)
	stored = entry[T]{key: key, obj: obj}
	vals, err := s.idx.Load().values(obj, s.scratch[:0], lenient)
	s.scratch = vals
	if err != nil && !lenient {
		return stored, old, false, err
	}
	var lbls map[string]string
	if s.labelsOf != nil {
		lbls = s.labelsOf(obj)
	}
	s.mu.Lock()
	old, existed = s.putLocked(key, obj, nil, vals, lbls, rvh)
	s.mu.Unlock()
	clear(vals)
	return stored, old, existed, err
}

// keyLocked returns key, or if it is "", the key appendKey makes of obj:
// the very string the Store keeps when it holds the object, so that
// storing a new version of it allocates no key. The caller holds writeMu,
// which every change of items is made under.
func (s *Store[T]) keyLocked(key string, obj T) string {
	if key != "" {
		return key
	}
	s.keyBuf = s.appendKey(s.keyBuf[:0], obj)
	if sl, ok := s.items[string(s.keyBuf)]; ok {
		return sl.key
	}
	return string(s.keyBuf)
}

// putLocked stores obj, or in a compact store its record rec, whose index
// values are vals and labels lbls, and whose resource version's
// versionHash is rvh (0 if unknown), under key, and returns the entry it
// replaced. The caller holds writeMu and mu.
func (s *Store[T]) putLocked(key string, obj T, rec *wire.Record, vals [][]string, lbls map[string]string, rvh uint32) (old entry[T], existed bool) {
	idx := s.idx.Load()
	sl, ok := s.items[key]
	if !ok {
		sl = s.arena.alloc()
		sl.key = key
		s.items[key] = sl
		sl.setAllVals(vals)
		idx.index(sl)
	} else {
		old, existed = sl.entry(), true
		idx.reindex(sl, vals)
	}
	size := s.entrySize(key, idx.len(), len(lbls))
	s.bytes.Add(int64(size) - int64(sl.size) - int64(sl.objSize))
	sl.obj, sl.rec, sl.size, sl.objSize, sl.rvh = obj, rec, size, 0, rvh
	sl.ver++
	if s.compact != nil {
		s.compact.account(old.rec, rec)
	}
	// A compact store keeps no labels map to compare with: it sets the
	// labels every time.
	if s.labels != nil && !(existed && s.compact == nil && sameMap(sl.lbls, lbls)) {
		s.indexLabels(s.labels, sl, lbls)
	}
	return old, existed
}

// indexLabels sets the labels of sl's object to lbls in li and, in a
// decoded store, keeps lbls in the slot, where putLocked compares the
// next object's map with it. A compact store keeps no map alive for that.
func (s *Store[T]) indexLabels(li *labelIndex, sl *slot[T], lbls map[string]string) {
	li.set(sl.id, lbls)
	if s.compact == nil {
		sl.lbls = lbls
	}
}

// versionSeed seeds versionHash.
var versionSeed = maphash.MakeSeed()

// versionHash hashes a resource version for entry.rvh: never 0, which
// stands for unknown.
func versionHash(rv string) uint32 {
	return uint32(maphash.String(versionSeed, rv)) | 1
}

// sameMap reports whether a and b are one map (or both empty). An object
// whose labels map is the very map of the object it replaces (a shallow
// copy, or a map the wire decoder shares among objects with the same
// labels) keeps its label postings without them being read again: cached
// objects, their maps included, are never modified in place. The pointers
// are compared first, so that the old map is not read when they are equal.
func sameMap(a, b map[string]string) bool {
	if samePointer(a, b) {
		return true
	}
	return len(a) == 0 && len(b) == 0
}

// deleteKey removes the object stored under key and reports whether there
// was one.
func (s *Store[T]) deleteKey(key string) (entry[T], bool) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deleteLocked(key)
}

// deleteLocked removes the object stored under key. The caller holds writeMu
// and mu.
func (s *Store[T]) deleteLocked(key string) (entry[T], bool) {
	sl, ok := s.items[key]
	if !ok {
		return entry[T]{}, false
	}
	old := sl.entry()
	if s.compact != nil {
		s.compact.account(old.rec, nil)
		s.forget(old)
	}
	s.bytes.Add(-int64(sl.size) - int64(sl.objSize))
	s.idx.Load().unindex(sl)
	if s.labels != nil {
		s.labels.remove(sl.id)
	}
	delete(s.items, key)
	s.arena.release(sl)
	return old, true
}
