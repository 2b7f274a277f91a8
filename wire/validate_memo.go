package wire

import "hash/maphash"

// validMemo remembers what Validate found valid while a list is checked,
// so that the same bytes met again are not walked again. Siblings hold
// many equal parts: the containers of a ReplicaSet's Pods, their
// tolerations and owner references, the managedFields entries of the Pods
// created in one second, and in every Pod the same few Quantities ("100m",
// "64Mi"), each a parse.
//
// What it keeps is of two kinds. The messages at memoDepth, the elements
// of an object's top-level parts (spec.containers[i], spec.tolerations[i],
// status.conditions[i]), at least memoMin bytes long, by their bytes and
// plan: above that depth the parts of one object are its own (its
// metadata, spec and status differ from any sibling's in a name or a
// time), below it a message that was not found would be hashed again at
// every level. Only the messages of a plan whose walks found a field
// every memoBytesPerField bytes or more often (planCost): a managedFields
// entry, a few fields around one FieldsV1 of kilobytes, walks faster than
// it hashes and copies, and looking such entries up, equal in the ~7 Pods
// of a ReplicaSet created in one second, made a list of realistic Pods
// cost more than without the memo. A message is kept at its second
// meeting (the first notes its hash alone), so that one object's own
// parts cost a hash and no copy. And the short values of the types that
// decode themselves (memoShort bytes at most), by their bytes and op.
//
// Validation is a function of the bytes and the plan (and of the Decoder's
// annotation filter, which its map sharing already takes to be a function
// of the key), so a value found valid once is valid again: the memo
// changes what Validate costs, never what it returns. Its entries are
// compared byte for byte, never trusted on their hash. It is dropped when
// the list ends (see Decoder.EndValidation): a store's objects are
// validated once, at a list, and the memo would otherwise hold its copies
// for the informer's life.
type validMemo struct {
	seed  maphash.Seed
	seen  []onceSet   // hashes of the messages met once, four to a set
	slots []validSlot // messages found valid, direct-mapped
	bytes int         // the bytes the slots' copies hold, as the allocator rounds them
	short []shortSlot // short values found valid, direct-mapped
	costs map[*plan]*planCost
	hits  int // values found, for tests
}

// planCost is what the messages of one plan cost the walk: the bytes and
// the fields walked. A walk costs by the field, a hash and a copy by the
// byte: a message of few fields for its bytes (a managedFields entry, most
// of it one FieldsV1) walks faster than it hashes, and is never looked up.
//
// It also counts the plan's recent lookups and how many found their
// message: a lookup that finds nothing costs a hash, and one that finds
// saves a walk of about four times its cost, so a plan whose lookups find
// less than a quarter of the time, past its first memoWarmUp, is looked up
// one message in memoProbeEvery only, to notice when its messages start to repeat. Each
// harsh Pod's app container is its own (it mounts a volume named for the
// Pod): hashing them all, to find none, cost more than the walks the memo
// saved elsewhere in a list of such Pods.
type planCost struct {
	bytes, fields  int
	lookups, found int
	walks          int
}

// worthLooking reports whether the next message of the plan is to be
// looked up.
func (c *planCost) worthLooking() bool {
	if c.fields == 0 || c.bytes > c.fields*memoBytesPerField {
		return false // not seen yet, or sparse
	}
	return c.lookups < memoWarmUp || c.found*4 >= c.lookups || c.walks%memoProbeEvery == 0
}

// looked counts a lookup, and whether it found the message.
func (c *planCost) looked(found bool) {
	if c.lookups == memoRecent {
		c.lookups, c.found = c.lookups/2, c.found/2
	}
	c.lookups++
	if found {
		c.found++
	}
}

// costOf returns the cost of x's messages walked so far.
func (m *validMemo) costOf(x *plan) *planCost {
	c := m.costs[x]
	if c == nil {
		c = &planCost{}
		m.costs[x] = c
	}
	return c
}

type validSlot struct {
	h    uint64
	plan *plan
	b    string
}

type shortSlot struct {
	o *op
	n int
	b [memoShort]byte
}

const (
	// memoDepth is the depth of the messages the memo keeps: 1 is an
	// object's top-level fields.
	memoDepth = 2
	// memoBytesPerField is how many bytes a field the messages of a plan
	// may hold on average for the memo to look them up: a field's walk
	// costs about what hashing, comparing and copying 32 bytes do.
	memoBytesPerField = 32
	// memoRecent is how many lookups of a plan count (the older count
	// half at each halving), and memoProbeEvery how often a plan whose
	// lookups rarely find is looked up all the same.
	memoRecent     = 64
	memoProbeEvery = 16
	// memoWarmUp is how many lookups of a plan are made before their
	// finds are counted against it.
	memoWarmUp = 8
	// memoMin is the shortest message it keeps: below it, the walk costs
	// about what the hash does.
	memoMin = 128
	// memoMax is the longest message it keeps, and memoBudget the bytes
	// its messages hold at most: past it, it is emptied and starts over.
	memoMax    = 16 << 10
	memoBudget = 256 << 10
	memoSlots  = 1 << 10
	// memoSeenSets is the size of the table of messages met once, in
	// sets of four hashes: as many hashes as slots.
	memoSeenSets = memoSlots / 4
	// memoShort is the longest value of a type that unmarshals itself
	// that it keeps, in shortSlots slots.
	memoShort  = 24
	shortSlots = 1 << 8
)

func newValidMemo() *validMemo {
	return &validMemo{seed: maphash.MakeSeed(), seen: make([]onceSet, memoSeenSets), slots: make([]validSlot, memoSlots),
		short: make([]shortSlot, shortSlots), costs: make(map[*plan]*planCost)}
}

// valid reports whether b, a message under x, is kept as valid, and
// returns its hash for remember.
func (m *validMemo) valid(b []byte, x *plan) (uint64, bool) {
	h := maphash.Bytes(m.seed, b) | 1
	s := &m.slots[h&(memoSlots-1)]
	if s.h == h && s.plan == x && s.b == string(b) {
		m.hits++
		return h, true
	}
	return h, false
}

// remember notes that b, a message under x of hash h, is valid: at its
// second meeting, it keeps a copy.
func (m *validMemo) remember(h uint64, b []byte, x *plan) {
	if len(b) > memoMax {
		return
	}
	if !m.seen[h>>32&(memoSeenSets-1)].seenBefore(h) {
		return
	}
	if m.bytes+allocBytes(len(b)) > memoBudget {
		clear(m.slots)
		m.bytes = 0
	}
	s := &m.slots[h&(memoSlots-1)]
	m.bytes += allocBytes(len(b)) - allocBytes(len(s.b))
	*s = validSlot{h: h, plan: x, b: string(b)}
}

// validShort reports whether b, a value of o's type at most memoShort
// long, is kept as valid, and returns its hash for rememberShort.
func (m *validMemo) validShort(b []byte, o *op) (uint64, bool) {
	h := maphash.Bytes(m.seed, b) | 1
	s := &m.short[h&(shortSlots-1)]
	if s.o == o && s.n == len(b) && string(s.b[:s.n]) == string(b) {
		m.hits++
		return h, true
	}
	return h, false
}

// rememberShort notes that b, of hash h, is a valid value of o's type.
func (m *validMemo) rememberShort(h uint64, b []byte, o *op) {
	s := &m.short[h&(shortSlots-1)]
	s.o, s.n = o, copy(s.b[:], b)
}
