package wire

import "encoding/binary"

// A compact store keeps the bytes of a listed object as its record. When
// the Decoder leaves something of the bytes out of every object it
// decodes (Options.DropManagedFields, the annotations Options.Annotations
// rejects), those bytes can never be read back, and keeping them would
// make a record of a listed object larger than one of the same object
// encoded from a watch event. trimmer cuts them out of the message before
// the record is made, in one pass that copies the rest as it is.

// trimmer removes from protobuf messages what a Decoder's options leave
// out of its objects.
type trimmer struct {
	// trims holds the plans whose messages lose bytes: an ObjectMeta's,
	// and each plan that reaches one through its message fields.
	trims      map[*plan]bool
	dropFields bool              // Options.DropManagedFields
	filter     func(string) bool // Options.Annotations; nil keeps all
}

// managedFieldsNum is the field number of ObjectMeta.ManagedFields.
const managedFieldsNum = 17

// newTrimmer returns the trimmer of a Decoder with root plan x and options
// opts, or nil when the options leave nothing out.
func newTrimmer(x *plan, opts *Options) *trimmer {
	if x == nil || (!opts.DropManagedFields && opts.Annotations == nil) {
		return nil
	}
	t := &trimmer{trims: make(map[*plan]bool), dropFields: opts.DropManagedFields, filter: opts.Annotations}
	if !t.mark(x, make(map[*plan]bool)) {
		return nil
	}
	return t
}

// mark reports whether messages of x lose bytes, recording each plan that
// does in t.trims; seen guards against recursive types.
func (t *trimmer) mark(x *plan, seen map[*plan]bool) bool {
	if seen[x] {
		return t.trims[x]
	}
	seen[x] = true
	trims := x.meta && t.dropFields
	for _, o := range x.byNum {
		if o == nil {
			continue
		}
		if o.annot && t.filter != nil {
			trims = true
		}
		if sub := subPlan(o); sub != nil && t.mark(sub, seen) {
			trims = true
		}
	}
	if trims {
		t.trims[x] = true
	}
	return trims
}

// subPlan returns the plan of the messages of field o, nil if its values
// are not messages decoded by a plan.
func subPlan(o *op) *plan {
	if o.kind == opRepeated {
		o = o.elem
	}
	if o.kind == opMessage || o.kind == opPtrMessage {
		return o.plan
	}
	return nil
}

// trim returns b, a valid message of plan x, without the bytes the
// Decoder leaves out, appended to dst; ok is false, with dst unchanged,
// when there are none, and b is to be kept as it is.
func (t *trimmer) trim(dst, b []byte, x *plan) (out []byte, ok bool, err error) {
	n := len(dst)
	out, err = t.message(dst, b, x)
	if err != nil || len(out)-n == len(b) {
		return dst, false, err
	}
	return out, true, nil
}

// message appends the message b of plan x to dst, less what the Decoder
// leaves out.
func (t *trimmer) message(dst, b []byte, x *plan) ([]byte, error) {
	for i := 0; i < len(b); {
		num, typ, next, err := tag(b, i)
		if err != nil {
			return dst, err
		}
		end, err := skip(b, next, typ)
		if err != nil {
			return dst, err
		}
		o := x.lookup(num)
		switch {
		case x.meta && t.dropFields && num == managedFieldsNum:
			// left out
		case o == nil || typ != wireBytes:
			dst = append(dst, b[i:end]...)
		case o.annot && t.filter != nil:
			keep, err := t.keepAnnotation(b, next)
			if err != nil {
				return dst, err
			}
			if keep {
				dst = append(dst, b[i:end]...)
			}
		default:
			sub := subPlan(o)
			if sub == nil || !t.trims[sub] {
				dst = append(dst, b[i:end]...)
				break
			}
			start, stop, err := lengthDelimited(b, next)
			if err != nil {
				return dst, err
			}
			dst = append(dst, b[i:next]...) // the key
			if dst, err = t.nested(dst, b[start:stop], sub); err != nil {
				return dst, err
			}
		}
		i = end
	}
	return dst, nil
}

// nested appends the length and the trimmed bytes of the message b of
// plan x to dst. The message is written after room for the longest
// length, then moved back to follow its length.
func (t *trimmer) nested(dst, b []byte, x *plan) ([]byte, error) {
	const room = 5 // a length below 2^35
	at := len(dst)
	dst = append(dst, make([]byte, room)...)
	dst, err := t.message(dst, b, x)
	if err != nil {
		return dst, err
	}
	n := len(dst) - at - room
	var lenBuf [room]byte
	l := binary.AppendUvarint(lenBuf[:0], uint64(n))
	copy(dst[at:], l)
	copy(dst[at+len(l):], dst[at+room:])
	return dst[:at+len(l)+n], nil
}

// keepAnnotation reports whether the annotations filter keeps the map
// entry whose length starts at b[i:].
func (t *trimmer) keepAnnotation(b []byte, i int) (bool, error) {
	start, end, err := lengthDelimited(b, i)
	if err != nil {
		return false, err
	}
	entry := b[start:end]
	var key string
	for j := 0; j < len(entry); {
		num, typ, next, err := tag(entry, j)
		if err != nil {
			return false, err
		}
		stop, err := skip(entry, next, typ)
		if err != nil {
			return false, err
		}
		if num == 1 && typ == wireBytes {
			s, e, err := lengthDelimited(entry, next)
			if err != nil {
				return false, err
			}
			key = string(entry[s:e]) // the last one wins, as in decoding
		}
		j = stop
	}
	return key == initialEventsEnd || t.filter(key), nil
}
