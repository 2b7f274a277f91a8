package wire

// A compact store makes the record of an object that came by a watch event
// by encoding the decoded object again (Encode): for a realistic Pod, about
// twice the CPU of splitting the bytes the event carried, which are the same
// encoding. A Source hands those bytes over as it decodes them
// (SourceOptions.Decoded, Offer), and Encode, given the object they were
// decoded into, makes its record of them instead of encoding the object.
//
// The bytes are copied into a pooled buffer and split only when Encode takes
// them: an informer's event queue may hold many events between the watch
// that decoded them and the store, or drop one for a newer event of the
// same object, and an offer no store takes must leave no trace in the
// table of shared runs.

// Bounds of the offers a Compact holds, the oldest giving way: an informer
// that keeps up takes each offer soon after it is made; one behind by more
// encodes what falls out.
const (
	maxOffers     = 4096
	maxOfferBytes = 8 << 20
)

// offers are the bytes of objects offered and not yet taken.
type offers struct {
	byObj map[any]*[]byte
	order []any // the objects offered, oldest first from head; taken ones too
	head  int
	bytes int // held in byObj's buffers
}

// Offer tells c that obj was decoded from b, the bare protobuf message of a
// T, with c's Decoder's options: Encode(obj) then makes obj's record of b
// (trimmed as Protobuf trims a listed object's bytes) instead of encoding
// obj. obj must not be modified after; b may be reused once Offer returns.
// A Compact that keeps its records in JSON ignores offers.
func (c *Compact[PP]) Offer(obj PP, b []byte) {
	if !c.marshal || len(b) > maxOfferBytes {
		return
	}
	bp := c.buf()
	*bp = append((*bp)[:0], b...)
	c.offerMu.Lock()
	defer c.offerMu.Unlock()
	o := &c.offered
	if o.byObj == nil {
		o.byObj = make(map[any]*[]byte)
	}
	if old, ok := o.byObj[any(obj)]; ok { // offered twice: the newer bytes
		o.bytes -= len(*old)
		c.bufs.Put(old)
	} else {
		o.order = append(o.order, any(obj))
	}
	o.byObj[any(obj)] = bp
	o.bytes += len(*bp)
	for len(o.byObj) > maxOffers || o.bytes > maxOfferBytes || len(o.order)-o.head > 2*maxOffers {
		c.dropOldestLocked()
	}
}

// dropOldestLocked forgets the oldest object of c's offers, and its bytes
// if they were not taken. The caller holds offerMu.
func (c *Compact[PP]) dropOldestLocked() {
	o := &c.offered
	obj := o.order[o.head]
	o.order[o.head] = nil
	o.head++
	if bp, ok := o.byObj[obj]; ok {
		delete(o.byObj, obj)
		o.bytes -= len(*bp)
		c.bufs.Put(bp)
	}
	if o.head == len(o.order) {
		o.order, o.head = o.order[:0], 0
	} else if o.head >= 1024 && 2*o.head >= len(o.order) {
		n := copy(o.order, o.order[o.head:])
		clear(o.order[n:])
		o.order, o.head = o.order[:n], 0
	}
}

// takeOffer returns the record of the bytes obj was offered with, nil if
// there are none (or they do not make one), and forgets them; the record
// is cut beside old if not nil.
func (c *Compact[PP]) takeOffer(obj PP, old *Record) *Record {
	c.offerMu.Lock()
	o := &c.offered
	bp, ok := o.byObj[any(obj)]
	if ok {
		delete(o.byObj, any(obj))
		o.bytes -= len(*bp)
		// The objects a store takes in the order they came leave the
		// front of order as they are taken.
		for o.head < len(o.order) {
			if _, live := o.byObj[o.order[o.head]]; live {
				break
			}
			c.dropOldestLocked()
		}
	}
	c.offerMu.Unlock()
	if !ok {
		return nil
	}
	r, err := c.valid(*bp, old)
	c.bufs.Put(bp)
	if err != nil {
		return nil // Encode encodes obj
	}
	c.fromOffers.Add(1)
	return r
}

// OfferedRecords returns how many records Encode has made of offered bytes
// rather than by encoding their objects.
func (c *Compact[PP]) OfferedRecords() int64 { return c.fromOffers.Load() }
