package wire

import (
	"hash/maphash"
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
// The cut is a partition of the bytes, whatever they mean: putting the
// runs back gives the encoding exactly. So a string that happens to read
// as a message, or a malformed one, costs the split some work and never a
// wrong byte.
const (
	// minRun is the shortest value worth sharing: a ref costs 16 bytes.
	minRun = 32
	// maxSplitDepth is how deep the split looks for shared values: a
	// Pod's container resources are at depth 3 (spec, containers,
	// resources), a managed field's FieldsV1 at 3 too.
	maxSplitDepth = 5
	// seenSlots is the size of the table of values met once.
	seenSlots = 1 << 12
	// maxRuns and maxRunBytes bound the table of shared runs: past
	// either, it is emptied and starts over. Records keep the runs they
	// point at.
	maxRuns     = 1 << 14
	maxRunBytes = 8 << 20
)

// sharedRuns finds the values objects have in common. Its owner guards
// it.
type sharedRuns struct {
	seed maphash.Seed
	// seen is direct-mapped: each slot holds the hash of a value met
	// once, recently. A value whose slot another takes before it comes
	// again is simply met once more.
	seen  []uint64
	runs  map[uint64]string // shared values, by hash
	bytes int               // their total size, as the allocator rounds each
	// resets counts the times the table started over: the runs it
	// dropped then live on in the records that point at them.
	resets int
	// maxRuns and maxBytes bound the table: maxRuns and maxRunBytes but
	// in tests.
	maxRuns, maxBytes int
}

func newSharedRuns() sharedRuns {
	return sharedRuns{seed: maphash.MakeSeed(), seen: make([]uint64, seenSlots), runs: make(map[uint64]string),
		maxRuns: maxRuns, maxBytes: maxRunBytes}
}

// share returns the shared run equal to v and true if v is one, or is met
// for the second time; otherwise it remembers v as met.
func (t *sharedRuns) share(v []byte) (string, bool) {
	h := maphash.Bytes(t.seed, v) | 1 // 0 marks an empty slot
	if s, ok := t.runs[h]; ok {
		return s, s == string(v) // a different value with the same hash is not shared
	}
	slot := &t.seen[h&(seenSlots-1)]
	if *slot != h {
		*slot = h
		return "", false
	}
	*slot = 0
	if len(t.runs) >= t.maxRuns || t.bytes+len(v) > t.maxBytes {
		t.runs, t.bytes = make(map[uint64]string), 0
		t.resets++
	}
	s := string(v)
	t.runs[h] = s
	t.bytes += allocBytes(len(s))
	return s, true
}

// splitter cuts one encoding, src, into a record's own bytes and refs.
// Its buffers are reused from one record to the next; its owner guards
// it.
type splitter struct {
	runs *sharedRuns
	src  []byte
	own  []byte
	refs []ref
	from int // src[from:] is not in own yet
}

// record returns the record of src, an encoding in JSON or protobuf. It
// copies what it keeps: src may be reused.
func (s *splitter) record(src []byte, json bool) *Record {
	s.src, s.own, s.refs, s.from = src, s.own[:0], s.refs[:0], 0
	if json {
		s.jsonValue(0, 0)
	} else {
		s.message(0, len(src), 0)
	}
	s.own = append(s.own, src[s.from:]...)
	r := &Record{own: string(s.own), size: uint32(len(src)), json: json}
	if len(s.refs) > 0 {
		r.refs = slices.Clone(s.refs)
	}
	clear(s.refs) // drop the runs
	s.src = nil
	return r
}

// cut shares src[start:end] if it is a shared run, and reports whether it
// did.
func (s *splitter) cut(start, end int) bool {
	run, ok := s.runs.share(s.src[start:end])
	if !ok {
		return false
	}
	s.own = append(s.own, s.src[s.from:start]...)
	s.refs = append(s.refs, ref{at: uint32(len(s.own)), n: uint32(len(run)), p: unsafe.StringData(run)})
	s.from = end
	return true
}

// message cuts the fields of the protobuf message src[start:end], read as
// one: it stops at the first thing that is not a field.
func (s *splitter) message(start, end, depth int) {
	b := s.src[:end]
	for i := start; i < end; {
		_, typ, next, err := tag(b, i)
		if err != nil {
			return
		}
		if typ != wireBytes {
			if i, err = skip(b, next, typ); err != nil {
				return
			}
			continue
		}
		vs, ve, err := lengthDelimited(b, next)
		if err != nil {
			return
		}
		if ve-vs >= minRun && !s.cut(vs, ve) && depth < maxSplitDepth {
			s.message(vs, ve, depth+1)
		}
		i = ve
	}
}

// jsonValue cuts the JSON value at src[i:], if it is an object or an
// array, and returns the index after it; -1 if src is not JSON there.
func (s *splitter) jsonValue(i, depth int) int {
	i = jsonSpace(s.src, i)
	if i >= len(s.src) || (s.src[i] != '{' && s.src[i] != '[') {
		return jsonSkip(s.src, i)
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
			if i = jsonSkip(s.src, i); i < 0 { // the key
				return -1
			}
			if i = jsonSpace(s.src, i); i >= len(s.src) || s.src[i] != ':' {
				return -1
			}
			i = jsonSpace(s.src, i+1)
		}
		end := jsonSkip(s.src, i)
		if end < 0 {
			return -1
		}
		if end-i >= minRun && !s.cut(i, end) && depth < maxSplitDepth {
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
