package informer

import (
	"cmp"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sync"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IndexFunc computes the values under which an object is indexed. An object
// may have any number of values, including none.
type IndexFunc[T any] func(obj T) ([]string, error)

// Indexers maps index names to their IndexFunc.
type Indexers[T any] map[string]IndexFunc[T]

// NamespaceIndex is the conventional name of the index by namespace.
const NamespaceIndex = "namespace"

// MetaNamespaceIndexFunc indexes an object by its namespace. For types that
// embed metav1.ObjectMeta (every built-in type) the returned slice shares
// memory with obj instead of allocating: treat it as read-only, like obj.
func MetaNamespaceIndexFunc[T Object](obj T) ([]string, error) {
	if isNil(obj) {
		return nil, ErrNilObject
	}
	if a, ok := any(obj).(metav1.ObjectMetaAccessor); ok {
		if m, ok := a.GetObjectMeta().(*metav1.ObjectMeta); ok && m != nil {
			return unsafe.Slice(&m.Namespace, 1), nil
		}
	}
	return []string{obj.GetNamespace()}, nil
}

// Indexer is a Store with secondary indexes: each IndexFunc maps an object to
// index values, and the Indexer answers which objects have a given value.
// Index values are computed once per write; an update that leaves an
// object's values unchanged does no index work.
//
// Index functions run while the writer lock is held (see Store): they may
// read the Indexer and must not write to it. An index function that fails
// makes the write fail with the Indexer unchanged.
type Indexer[T any] struct {
	Store[T]
	selections sync.Pool // of *selectBuf[T], reused by selector queries
}

// NewIndexer returns an empty Indexer with the given indexes. It panics if
// keyFunc or one of the index functions is nil.
func NewIndexer[T any](keyFunc KeyFunc[T], indexers Indexers[T]) *Indexer[T] {
	x := &Indexer[T]{}
	x.init(keyFunc, (*indexSet[T])(nil).extend(indexers))
	return x
}

// GetIndexers returns a copy of the index functions.
func (x *Indexer[T]) GetIndexers() Indexers[T] {
	x.mu.RLock()
	defer x.mu.RUnlock()
	idx := x.idx.Load()
	out := make(Indexers[T], idx.len())
	for i, name := range idx.names {
		out[name] = idx.funcs[i]
	}
	return out
}

// AddIndexers adds indexes and indexes every stored object under them. A
// name already in use is an error wrapping ErrIndexConflict, and so is a
// failing index function; either way the Indexer is unchanged.
func (x *Indexer[T]) AddIndexers(indexers Indexers[T]) error {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	old := x.idx.Load()
	if dup := old.conflicts(indexers); len(dup) > 0 {
		return fmt.Errorf("%w: %q", ErrIndexConflict, dup)
	}
	next := old.extend(indexers)
	// Writers are excluded, so the slots cannot change while the new index
	// functions run without mu.
	var slots []*slot[T]
	for sl := range x.arena.live {
		slots = append(slots, sl)
	}
	width, added := next.len(), next.len()-old.len()
	vals := make([][]string, len(slots)*added)
	for i, sl := range slots {
		obj, err := x.writtenObject(sl)
		if err != nil {
			return err
		}
		for j := range added {
			v, err := next.value(old.len()+j, obj)
			if err != nil {
				return err
			}
			vals[i*added+j] = v
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.arena.widen(width)
	for i, sl := range slots {
		for j := range added {
			sl.setVals(old.len()+j, vals[i*added+j])
		}
		for j := old.len(); j < width; j++ {
			next.add(j, sl, sl.vals[j])
		}
	}
	x.idx.Store(next)
	return nil
}

// ByIndex returns the objects whose indexName index has indexedValue, in
// unspecified order, in one newly allocated slice.
func (x *Indexer[T]) ByIndex(indexName, indexedValue string) ([]T, error) {
	if x.compact != nil {
		es, err := x.bucketEntries(indexName, indexedValue)
		return x.objects(x.materialize(es)), err
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	b, err := x.idx.Load().bucket(indexName, indexedValue)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, b.len())
	for sl := range b.all {
		out = append(out, sl.obj)
	}
	return out, nil
}

// bucketEntries returns the entries of the bucket of indexedValue in the
// index indexName, in a new slice.
func (x *Indexer[T]) bucketEntries(indexName, indexedValue string) ([]entry[T], error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	b, err := x.idx.Load().bucket(indexName, indexedValue)
	if err != nil {
		return nil, err
	}
	out := make([]entry[T], 0, b.len())
	for sl := range b.all {
		out = append(out, sl.entry())
	}
	return out, nil
}

// ByIndexSeq returns an iterator over the keys and objects ByIndex would
// return. It iterates a snapshot taken when the iteration starts, in a
// buffer reused across iterations, so it allocates nothing and holds no lock
// while the loop body runs. The order is unspecified. An unknown index
// yields nothing; ByIndex reports it as an error.
//
// It returns no error because the compiler can call an iterator directly,
// without the loop body escaping to the heap, only when it comes from a
// call with a single result.
func (x *Indexer[T]) ByIndexSeq(indexName, indexedValue string) iter.Seq2[string, T] {
	return func(yield func(string, T) bool) { x.yieldBucket(indexName, indexedValue, yield) }
}

func (x *Indexer[T]) yieldBucket(indexName, indexedValue string, yield func(string, T) bool) {
	buf := x.getSnapshot()
	defer x.putSnapshot(buf)
	x.mu.RLock()
	b, _ := x.idx.Load().bucket(indexName, indexedValue)
	for sl := range b.all {
		*buf = append(*buf, sl.entry())
	}
	x.mu.RUnlock()
	if x.compact != nil {
		*buf = x.materialize(*buf)
	}
	for _, e := range *buf {
		if !yield(e.key, e.obj) {
			return
		}
	}
}

// IndexKeys returns the keys of the objects whose indexName index has
// indexedValue, sorted.
func (x *Indexer[T]) IndexKeys(indexName, indexedValue string) ([]string, error) {
	x.mu.RLock()
	b, err := x.idx.Load().bucket(indexName, indexedValue)
	if err != nil {
		x.mu.RUnlock()
		return nil, err
	}
	out := make([]string, 0, b.len())
	for sl := range b.all {
		out = append(out, sl.key)
	}
	x.mu.RUnlock()
	slices.Sort(out)
	return out, nil
}

// Index returns the stored objects that share at least one indexName value
// with obj, in unspecified order.
func (x *Indexer[T]) Index(indexName string, obj T) ([]T, error) {
	if x.compact != nil {
		var es []entry[T]
		err := x.collect(indexName, obj, func(sl *slot[T]) { es = append(es, sl.entry()) })
		if es = x.materialize(es); len(es) == 0 {
			return nil, err
		}
		return x.objects(es), err
	}
	var out []T
	err := x.collect(indexName, obj, func(sl *slot[T]) {
		out = append(out, sl.obj)
	})
	return out, err
}

// IndexSeq returns an iterator over the keys and objects Index would return.
// It computes obj's index values when called and iterates a snapshot taken
// when the iteration starts, holding no lock while the loop body runs.
func (x *Indexer[T]) IndexSeq(indexName string, obj T) (iter.Seq2[string, T], error) {
	vals, err := x.indexValues(indexName, obj)
	if err != nil {
		return nil, err
	}
	return func(yield func(string, T) bool) {
		buf := x.getSnapshot()
		defer x.putSnapshot(buf)
		x.mu.RLock()
		x.union(indexName, vals, func(sl *slot[T]) { *buf = append(*buf, sl.entry()) })
		x.mu.RUnlock()
		if x.compact != nil {
			*buf = x.materialize(*buf)
		}
		for _, e := range *buf {
			if !yield(e.key, e.obj) {
				return
			}
		}
	}, nil
}

func (x *Indexer[T]) collect(indexName string, obj T, f func(*slot[T])) error {
	vals, err := x.indexValues(indexName, obj)
	if err != nil {
		return err
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	x.union(indexName, vals, f)
	return nil
}

// indexValues runs the indexName function on obj, without holding a lock.
func (x *Indexer[T]) indexValues(indexName string, obj T) ([]string, error) {
	idx := x.idx.Load()
	i, ok := idx.posOf(indexName)
	if !ok {
		return nil, &noSuchIndexError{indexName}
	}
	if isNil(obj) {
		return nil, ErrNilObject
	}
	return idx.value(i, obj)
}

// union calls f once for each slot in the indexName buckets of vals. The
// caller holds mu for reading.
func (x *Indexer[T]) union(indexName string, vals []string, f func(*slot[T])) {
	idx := x.idx.Load()
	i := idx.pos[indexName]
	if len(vals) == 1 {
		for sl := range idx.buckets[i][vals[0]].all {
			f(sl)
		}
		return
	}
	seen := make(map[*slot[T]]struct{})
	for _, v := range vals {
		for sl := range idx.buckets[i][v].all {
			if _, dup := seen[sl]; !dup {
				seen[sl] = struct{}{}
				f(sl)
			}
		}
	}
}

// ListIndexFuncValues returns the values the indexName index has objects
// under, in unspecified order; none for an unknown index.
func (x *Indexer[T]) ListIndexFuncValues(indexName string) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	idx := x.idx.Load()
	i, ok := idx.posOf(indexName)
	if !ok {
		return nil
	}
	return slices.AppendSeq(make([]string, 0, len(idx.buckets[i])), maps.Keys(idx.buckets[i]))
}

// noSuchIndexError is ErrNoSuchIndex with the name asked for.
type noSuchIndexError struct{ name string }

func (e *noSuchIndexError) Error() string        { return fmt.Sprintf("%v: %q", ErrNoSuchIndex, e.name) }
func (e *noSuchIndexError) Is(target error) bool { return target == ErrNoSuchIndex }

// indexSet holds the indexes of an Indexer. names, funcs and pos never
// change once built; AddIndexers builds a new set. buckets are guarded by the
// Store's mu. Every method accepts a nil receiver, the set of a plain Store.
type indexSet[T any] struct {
	names   []string
	funcs   []IndexFunc[T]
	pos     map[string]int          // name -> position in names
	buckets []map[string]*bucket[T] // per index: value -> slots with it
}

// bucket holds the slots that have one value of one index. A slot whose only
// value for the index is this one is in single, at the position
// slot.pos[index], so that adding is an append and removing a swap with the
// last; the rare slot with several values for the index is in multi.
type bucket[T any] struct {
	single []*slot[T]
	multi  map[*slot[T]]struct{}
}

func (b *bucket[T]) len() int {
	if b == nil {
		return 0
	}
	return len(b.single) + len(b.multi)
}

// all yields the slots of b, which may be nil.
func (b *bucket[T]) all(yield func(*slot[T]) bool) {
	if b == nil {
		return
	}
	for _, sl := range b.single {
		if !yield(sl) {
			return
		}
	}
	for sl := range b.multi {
		if !yield(sl) {
			return
		}
	}
}

func (s *indexSet[T]) len() int {
	if s == nil {
		return 0
	}
	return len(s.names)
}

// extend returns a new set with the indexes of s followed by indexers, in
// name order. The buckets of s are shared, not copied.
func (s *indexSet[T]) extend(indexers Indexers[T]) *indexSet[T] {
	if s.len()+len(indexers) == 0 {
		return nil
	}
	next := &indexSet[T]{pos: make(map[string]int, s.len()+len(indexers))}
	if s != nil {
		next.names = slices.Clone(s.names)
		next.funcs = slices.Clone(s.funcs)
		next.buckets = slices.Clone(s.buckets)
	}
	for _, name := range slices.Sorted(maps.Keys(indexers)) {
		if indexers[name] == nil {
			panic(fmt.Sprintf("informer: nil IndexFunc for index %q", name))
		}
		next.names = append(next.names, name)
		next.funcs = append(next.funcs, indexers[name])
		next.buckets = append(next.buckets, make(map[string]*bucket[T]))
	}
	for i, name := range next.names {
		next.pos[name] = i
	}
	return next
}

// empty returns a set with the indexes of s and no buckets filled.
func (s *indexSet[T]) empty() *indexSet[T] {
	if s == nil {
		return nil
	}
	next := *s
	next.buckets = make([]map[string]*bucket[T], len(s.names))
	for i := range next.buckets {
		next.buckets[i] = make(map[string]*bucket[T])
	}
	return &next
}

func (s *indexSet[T]) conflicts(indexers Indexers[T]) []string {
	var dup []string
	for name := range indexers {
		if _, ok := s.posOf(name); ok {
			dup = append(dup, name)
		}
	}
	slices.Sort(dup)
	return dup
}

func (s *indexSet[T]) posOf(name string) (int, bool) {
	if s == nil {
		return 0, false
	}
	i, ok := s.pos[name]
	return i, ok
}

// values appends the values of obj for every index to dst. It stops at the
// first error, unless lenient: then a failing index gets no values and the
// first error is returned with all of them.
func (s *indexSet[T]) values(obj T, dst [][]string, lenient bool) ([][]string, error) {
	var firstErr error
	for i := range s.len() {
		v, err := s.value(i, obj)
		if err != nil {
			if !lenient {
				return dst, err
			}
			firstErr = cmp.Or(firstErr, err)
		}
		dst = append(dst, v)
	}
	return dst, firstErr
}

func (s *indexSet[T]) value(i int, obj T) ([]string, error) {
	v, err := s.funcs[i](obj)
	if err != nil {
		return nil, fmt.Errorf("informer: index %q: %w", s.names[i], err)
	}
	return v, nil
}

func (s *indexSet[T]) bucket(name, value string) (*bucket[T], error) {
	i, ok := s.posOf(name)
	if !ok {
		return nil, &noSuchIndexError{name}
	}
	return s.buckets[i][value], nil
}

// index adds sl to the buckets of its values.
func (s *indexSet[T]) index(sl *slot[T]) {
	for i := range s.len() {
		s.add(i, sl, sl.vals[i])
	}
}

// unindex removes sl from the buckets of its values.
func (s *indexSet[T]) unindex(sl *slot[T]) {
	for i := range s.len() {
		s.remove(i, sl, sl.vals[i])
	}
}

// reindex moves sl from the buckets of its values to those of vals, doing
// nothing for an index whose values did not change.
func (s *indexSet[T]) reindex(sl *slot[T], vals [][]string) {
	for i := range s.len() {
		if !slices.Equal(sl.vals[i], vals[i]) {
			s.remove(i, sl, sl.vals[i])
			sl.setVals(i, vals[i])
			s.add(i, sl, sl.vals[i])
		}
	}
}

func (s *indexSet[T]) add(i int, sl *slot[T], vals []string) {
	if len(vals) == 1 {
		b := s.bucketFor(i, vals[0])
		sl.pos[i] = int32(len(b.single))
		b.single = append(b.single, sl)
		return
	}
	for _, v := range vals {
		b := s.bucketFor(i, v)
		if b.multi == nil {
			b.multi = make(map[*slot[T]]struct{})
		}
		b.multi[sl] = struct{}{}
	}
}

// bucketFor returns the bucket of value v of index i, making it if needed.
func (s *indexSet[T]) bucketFor(i int, v string) *bucket[T] {
	b := s.buckets[i][v]
	if b == nil {
		b = &bucket[T]{}
		s.buckets[i][v] = b
	}
	return b
}

// remove takes sl out of the buckets of vals, which must be the values it
// was added with.
func (s *indexSet[T]) remove(i int, sl *slot[T], vals []string) {
	if len(vals) == 1 {
		b := s.buckets[i][vals[0]]
		if b == nil || int(sl.pos[i]) >= len(b.single) || b.single[sl.pos[i]] != sl {
			s.removeLost(i, sl) // cannot happen while slots own their values; never panic
			return
		}
		p, last := sl.pos[i], len(b.single)-1
		moved := b.single[last]
		b.single[p], moved.pos[i] = moved, p
		b.single[last] = nil
		b.single = b.single[:last]
		if cap(b.single) > 64 && len(b.single) < cap(b.single)/4 {
			b.single = slices.Clone(b.single) // give back what a shrunk bucket no longer needs
		}
		s.dropIfEmpty(i, vals[0], b)
		return
	}
	for _, v := range vals {
		b := s.buckets[i][v]
		if b == nil {
			continue // a duplicate value, already removed
		}
		delete(b.multi, sl)
		s.dropIfEmpty(i, v, b)
	}
}

// removeLost takes sl out of whatever buckets of index i hold it, looking
// through them all: the slow way, for bookkeeping found inconsistent.
func (s *indexSet[T]) removeLost(i int, sl *slot[T]) {
	for v, b := range s.buckets[i] {
		if k := slices.Index(b.single, sl); k >= 0 {
			last := len(b.single) - 1
			moved := b.single[last]
			b.single[k], moved.pos[i] = moved, int32(k)
			b.single[last] = nil
			b.single = b.single[:last]
		}
		delete(b.multi, sl)
		s.dropIfEmpty(i, v, b)
	}
}

func (s *indexSet[T]) dropIfEmpty(i int, v string, b *bucket[T]) {
	if b.len() == 0 {
		delete(s.buckets[i], v)
	}
}
