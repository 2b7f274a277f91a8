package informer

import (
	"fmt"
	"iter"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
)

// LabelsFunc returns the labels of an object, for the label index. The map
// may be the object's own, and one map may serve several objects with the
// same labels, but it must not be modified once returned, as a cached
// object is never modified: the index keeps a few of the maps it was given
// and knows them by their address, so that an object whose map is the very
// one of an object indexed before is indexed without the map being read.
type LabelsFunc[T any] func(obj T) map[string]string

// MetaLabelsFunc returns obj.GetLabels(): the LabelsFunc of every Kubernetes
// object.
func MetaLabelsFunc[T Object](obj T) map[string]string { return obj.GetLabels() }

// errNoLabelIndex is ErrNoSuchIndex for the label index.
var errNoLabelIndex = fmt.Errorf("%w: no label index", ErrNoSuchIndex)

// AddLabelIndex adds a label index, an inverted index of the objects'
// labels, and indexes every stored object. BySelector and BySelectorSeq
// answer label selectors from it, as do the Listers of an informer, and it is
// kept up to date by every write.
//
// With the index, a selector's equality (=, ==), in and exists requirements
// are answered from the objects that have the labels they name, in time
// proportional to the smallest of those sets; the other requirements (!=,
// notin, !key, gt, lt) are tested on those objects only, and on every object
// only if the selector has no requirement of the first kind.
//
// Each distinct label key and value is stored once, so the index costs about
// 19 bytes per object per label (docs/label-index.md);
// a label whose value is unique to its object, such as a Pod's name, also
// costs its own value entry.
//
// labelsOf runs while the writer lock is held, like an IndexFunc, and when a
// query tests the requirements the index cannot answer, holding no lock.
// AddLabelIndex panics if labelsOf is nil and returns an error wrapping
// ErrIndexConflict if the Indexer has a label index already.
//
// In a compact store (SharedIndexInformerOptions.Compact), labelsOf runs on
// decoded objects, as an IndexFunc does: the informer's own label index,
// whose function is MetaLabelsFunc, is the one that reads labels from the
// records' bytes instead.
func (x *Indexer[T]) AddLabelIndex(labelsOf LabelsFunc[T]) error {
	return x.addLabelIndex(labelsOf, false)
}

// addLabelIndex is AddLabelIndex; meta says that labelsOf is
// MetaLabelsFunc, which a compact store may answer from its records' bytes.
func (x *Indexer[T]) addLabelIndex(labelsOf LabelsFunc[T], meta bool) error {
	if labelsOf == nil {
		panic("informer: AddLabelIndex with a nil LabelsFunc")
	}
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	if x.labelsOf != nil {
		return fmt.Errorf("%w: a label index exists", ErrIndexConflict)
	}
	// Writers are excluded, so the slots cannot change while labelsOf runs
	// without mu; mu is held only to publish the index.
	li := newLabelIndex()
	for sl := range x.arena.live {
		lbls, err := x.writtenLabels(sl, labelsOf, meta)
		if err != nil {
			return err
		}
		x.indexLabels(li, sl, lbls) // sl.lbls is read by writers only, who are excluded
	}
	x.mu.Lock()
	x.labels, x.labelsOf, x.metaLabels = li, labelsOf, meta
	x.mu.Unlock()
	return nil
}

// BySelector returns the objects whose labels match selector, in unspecified
// order, in one newly allocated slice; a nil or empty selector matches every
// object. It needs a label index (AddLabelIndex): without one it returns an
// error wrapping ErrNoSuchIndex.
func (x *Indexer[T]) BySelector(selector labels.Selector) ([]T, error) {
	if selector == nil || selector.Empty() {
		return x.List(), nil
	}
	out, ok := x.selectList("", false, selector)
	if !ok {
		return nil, errNoLabelIndex
	}
	return out, nil
}

// BySelectorSeq returns an iterator over the keys and objects BySelector
// would return. Like ByIndexSeq, it iterates a snapshot of the matching
// objects taken when the iteration starts, in a buffer reused across
// iterations, so that in steady state it allocates nothing, and it holds no
// lock while the loop body runs. Without a label index it yields nothing.
func (x *Indexer[T]) BySelectorSeq(selector labels.Selector) iter.Seq2[string, T] {
	return func(yield func(string, T) bool) {
		if selector == nil || selector.Empty() {
			x.yieldAll(yield)
			return
		}
		x.yieldSelected("", false, selector, yield)
	}
}

// selectBuf is the reusable state of one selector query: the prepared
// query, and the candidates it found.
type selectBuf[T any] struct {
	q        labelQuery
	entries  []entry[T]
	whole    labels.Selector // tested whole on each candidate, if set
	labelsOf LabelsFunc[T]
	// metaLabels says that labelsOf is MetaLabelsFunc (Store.metaLabels).
	metaLabels bool
}

// accepts reports whether obj, a candidate, passes the requirements the
// index could not answer; its callers skip it when acceptsAll. It runs
// holding no lock.
func (b *selectBuf[T]) accepts(obj T) bool { return b.acceptsLabels(b.labelsOf(obj)) }

// acceptsLabels is accepts for a candidate with labels m.
func (b *selectBuf[T]) acceptsLabels(m map[string]string) bool {
	ls := labels.Set(m)
	if b.whole != nil && !b.whole.Matches(ls) {
		return false
	}
	for i := range b.q.filter {
		if !b.q.filter[i].Matches(ls) {
			return false
		}
	}
	return true
}

// acceptsAll reports whether every candidate passes: whether the index
// answered every requirement.
func (b *selectBuf[T]) acceptsAll() bool { return b.whole == nil && len(b.q.filter) == 0 }

// accepted reports whether every candidate of b passes, as acceptsAll
// does. In a compact store it first leaves only the candidates that pass,
// their records decoded, and returns true.
func (x *Indexer[T]) accepted(b *selectBuf[T]) bool {
	all := b.acceptsAll()
	if x.compact == nil {
		return all
	}
	if !all {
		n := 0
		for _, e := range b.entries {
			if x.acceptsRecord(b, e) {
				b.entries[n] = e
				n++
			}
		}
		clear(b.entries[n:])
		b.entries = b.entries[:n]
	}
	b.entries = x.materialize(b.entries)
	return true
}

func (x *Indexer[T]) getSelection() *selectBuf[T] {
	if b, ok := x.selections.Get().(*selectBuf[T]); ok {
		return b
	}
	return new(selectBuf[T])
}

func (x *Indexer[T]) putSelection(b *selectBuf[T]) {
	b.q.reset()
	clear(b.entries) // drop the object references
	b.entries = b.entries[:0]
	b.whole, b.labelsOf, b.metaLabels = nil, nil, false
	x.selections.Put(b)
}

// yieldSelected yields the objects matching selector, of namespace if
// inNamespace, from the label index; nothing if there is none.
func (x *Indexer[T]) yieldSelected(namespace string, inNamespace bool, selector labels.Selector, yield func(string, T) bool) bool {
	b := x.getSelection()
	defer x.putSelection(b)
	if !x.selectLocked(b, namespace, inNamespace, selector) {
		return false
	}
	all := x.accepted(b)
	for _, e := range b.entries {
		if (all || b.accepts(e.obj)) && !yield(e.key, e.obj) {
			break
		}
	}
	return true
}

// yieldSelectedObjects is yieldSelected for a loop that wants the objects
// only, as a Lister's: it saves a call per object.
func (x *Indexer[T]) yieldSelectedObjects(namespace string, inNamespace bool, selector labels.Selector, yield func(T) bool) bool {
	b := x.getSelection()
	defer x.putSelection(b)
	if !x.selectLocked(b, namespace, inNamespace, selector) {
		return false
	}
	all := x.accepted(b)
	for _, e := range b.entries {
		if (all || b.accepts(e.obj)) && !yield(e.obj) {
			break
		}
	}
	return true
}

// selectList returns the objects matching selector, of namespace if
// inNamespace, from the label index, and false if there is none.
func (x *Indexer[T]) selectList(namespace string, inNamespace bool, selector labels.Selector) ([]T, bool) {
	b := x.getSelection()
	defer x.putSelection(b)
	if !x.selectLocked(b, namespace, inNamespace, selector) {
		return nil, false
	}
	n, all := 0, x.accepted(b)
	for _, e := range b.entries {
		if all || b.accepts(e.obj) {
			b.entries[n] = e
			n++
		}
	}
	if n == 0 {
		return nil, true
	}
	out := make([]T, n)
	for i, e := range b.entries[:n] {
		out[i] = e.obj
	}
	return out, true
}

// selectLocked fills b with the candidates for selector, which must not be
// empty, holding the read lock: the objects that satisfy the requirements
// the index answers and, if inNamespace, whose NamespaceIndex value is
// namespace. It returns false, with b unchanged, without a label index or,
// if inNamespace, without a NamespaceIndex.
func (x *Indexer[T]) selectLocked(b *selectBuf[T], namespace string, inNamespace bool, selector labels.Selector) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	li := x.labels
	if li == nil {
		return false
	}
	idx := x.idx.Load()
	nsPos, ok := idx.posOf(NamespaceIndex)
	if inNamespace && !ok {
		return false
	}
	b.labelsOf, b.metaLabels = x.labelsOf, x.metaLabels
	if labels.MatchesNothing(selector) {
		return true
	}
	if _, isSet := selector.(labels.ValidatedSetSelector); !isSet {
		if _, selectable := selector.Requirements(); !selectable {
			b.whole = selector // a Selector the index cannot read
		}
	}
	if b.whole == nil && !li.plan(&b.q, selector) {
		return true // a label no object has
	}
	var nsBucket *bucket[T]
	if inNamespace {
		nsBucket = idx.buckets[nsPos][namespace]
		if nsBucket.len() == 0 {
			return true
		}
	}
	q := &b.q
	switch {
	case len(q.terms) > 0 && (nsBucket == nil || q.terms[0].size <= nsBucket.len()):
		// Drive from the smallest posting, test the others and the namespace.
		if t := &q.terms[0]; t.exists {
			for _, val := range t.key.vals {
				for ids := range val.blocks {
					x.collectLocked(b, li, ids, nsBucket, nsPos, namespace)
				}
			}
		} else {
			for _, val := range q.vals[t.lo:t.hi] {
				for ids := range val.blocks {
					x.collectLocked(b, li, ids, nsBucket, nsPos, namespace)
				}
			}
		}
	case nsBucket != nil:
		for sl := range nsBucket.all {
			if li.hasAll(q, 0, sl.id) {
				b.entries = append(b.entries, sl.entry())
			}
		}
	default:
		// No requirement the index answers: every object is a candidate.
		for sl := range x.arena.live {
			b.entries = append(b.entries, sl.entry())
		}
	}
	return true
}

// collectLocked appends to b the objects of ids that satisfy the terms of
// b.q after the first and, if nsBucket is not nil, are in it, the bucket
// of namespace in the NamespaceIndex (at nsPos). The caller holds mu for
// reading.
func (x *Indexer[T]) collectLocked(b *selectBuf[T], li *labelIndex, ids []uint32, nsBucket *bucket[T], nsPos int, namespace string) {
	for _, id := range ids {
		sl := x.arena.slot(id)
		if !li.hasAll(&b.q, 1, id) || (nsBucket != nil && !nsBucket.has(sl, nsPos, namespace)) {
			continue
		}
		b.entries = append(b.entries, sl.entry())
	}
}

// has reports whether sl is in b, the bucket of value v of index i,
// without comparing strings when sl has one value for the index (then it is
// in b.single at sl.pos[i], or not in b).
func (b *bucket[T]) has(sl *slot[T], i int, v string) bool {
	if p := int(sl.pos[i]); p < len(b.single) && b.single[p] == sl {
		return true
	}
	return len(sl.vals[i]) > 1 && slices.Contains(sl.vals[i], v)
}
