package informer

import "github.com/typedkube/informer/internal/deque"

// coalescer holds the pending notifications of a handler in Coalesce mode:
// at most two per object, a delete of a state the handler saw followed by
// the add or update that came after it, so that its memory is bounded by
// the number of objects, not of changes. Its owner guards it.
type coalescer[T Object] struct {
	byKey map[string]*pendingState[T]
	// order holds the keys in the order they became pending. An entry is
	// live if byKey has its key with the same seq; entries of states that
	// cancelled out are dead and skipped, and compacted away once they
	// outnumber the live ones, so that memory stays bounded by the objects
	// with pending changes however much churn a stalled handler sees.
	order deque.Deque[orderEntry]
	seq   uint64 // the seq of the last state made pending
}

type orderEntry struct {
	key string
	seq uint64
}

// pendingState is what a handler has not yet been told about one object.
type pendingState[T Object] struct {
	seq uint64          // its entry in order
	del notification[T] // kind 0 when there is no pending deletion
	cur notification[T] // kind 0 when there is no pending add or update
}

func newCoalescer[T Object]() *coalescer[T] {
	return &coalescer[T]{byKey: make(map[string]*pendingState[T])}
}

// add merges n into the pending state of its object and returns by how
// much the number of pending notifications changed. An initial-list add
// that cancels out is reported to l as handled.
func (c *coalescer[T]) add(n *notification[T], l *listener[T]) int {
	s, ok := c.byKey[n.key]
	if !ok {
		c.seq++
		s = &pendingState[T]{seq: c.seq}
		c.byKey[n.key] = s
		c.order.PushBack(orderEntry{n.key, c.seq})
	}
	before := s.count()
	switch n.kind {
	case nAdd:
		if s.cur.kind == nAdd && s.cur.initial {
			l.initialDone() // replaced, so never delivered
		}
		s.cur = *n
	case nUpdate:
		switch s.cur.kind {
		case nAdd: // still an add, of the newest state
			s.cur.new, s.cur.rec = n.new, n.rec
		case nUpdate: // one update from the oldest unseen state to the newest
			s.cur.new, s.cur.rec = n.new, n.rec
			s.cur.sync = s.cur.sync && n.sync
		default:
			s.cur = *n
		}
	case nDelete:
		switch s.cur.kind {
		case nAdd: // the handler never saw this object: nothing to tell
			if s.cur.initial {
				l.initialDone()
			}
			s.cur = notification[T]{}
		default:
			s.cur = notification[T]{}
			// Of two deletions keep the first, the state the handler saw,
			// unless only the second one knows the final state.
			if s.del.kind == 0 || s.del.unknown && !n.unknown {
				s.del = *n
			}
		}
	}
	if s.count() == 0 {
		delete(c.byKey, n.key) // its entry in order is now dead
		if dead := c.order.Len() - len(c.byKey); dead > len(c.byKey) && dead > 64 {
			c.compact()
		}
	}
	return s.count() - before
}

// compact drops the dead entries of order, keeping the others in order.
func (c *coalescer[T]) compact() {
	var live deque.Deque[orderEntry]
	for c.order.Len() > 0 {
		e, _ := c.order.PopFront()
		if s, ok := c.byKey[e.key]; ok && s.seq == e.seq {
			live.PushBack(e)
		}
	}
	c.order = live
}

// size returns the number of entries it holds, live or dead: what its
// memory is proportional to.
func (c *coalescer[T]) size() int { return c.order.Len() + len(c.byKey) }

func (s *pendingState[T]) count() int {
	n := 0
	if s.del.kind != 0 {
		n++
	}
	if s.cur.kind != 0 {
		n++
	}
	return n
}

// drainTo moves every pending notification to dst, in order.
func (c *coalescer[T]) drainTo(dst *deque.Deque[notification[T]]) {
	for c.order.Len() > 0 {
		e, _ := c.order.PopFront()
		s, ok := c.byKey[e.key]
		if !ok || s.seq != e.seq {
			continue
		}
		delete(c.byKey, e.key)
		if s.del.kind != 0 {
			dst.PushBack(s.del)
		}
		if s.cur.kind != 0 {
			dst.PushBack(s.cur)
		}
	}
}
