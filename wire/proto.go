package wire

import (
	"errors"
	"fmt"
	"io"
	"math"
)

// Errors of malformed input. Every error of decoding bytes wraps one of
// them, so callers can tell bad bytes from a bad projection (ErrMismatch,
// when a Decoder is made) and from a reader's errors (a connection cut
// mid-body is io.ErrUnexpectedEOF, and wraps neither).
var (
	// ErrTruncated reports input that ends inside a field.
	ErrTruncated = errors.New("wire: truncated input")
	// ErrMalformed reports input that is not valid protobuf or JSON for the
	// type: an overflowing varint, a negative length, an illegal tag or
	// wire type, an envelope without the magic prefix.
	ErrMalformed = errors.New("wire: malformed input")
)

// malformed wraps err, of a decoder not ours (a type's own Unmarshal,
// encoding/json), in ErrMalformed. The bytes it read were all there, so an
// io.EOF or io.ErrUnexpectedEOF of it says that a length inside them
// overran its message, not that a stream was cut: such an error is kept
// as text only, where errors.Is cannot take it for the end of a
// connection, which a watch or a list retries quietly.
func malformed(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return fmt.Errorf("%w: %w", ErrMalformed, err)
}

// wantBytes returns nil if typ is the wire type of a length-delimited
// value (a string, bytes, a message), else the error of a field num that
// the message declares as one and the bytes carry otherwise, which the
// generated decoders refuse too.
func wantBytes(num int32, typ int) error {
	if typ == wireBytes {
		return nil
	}
	return fmt.Errorf("%w: field %d has wire type %d, want %d", ErrMalformed, num, typ, wireBytes)
}

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireStart   = 3
	wireEnd     = 4
	wireFixed32 = 5
)

// The errors of malformed input whose text says all, made once: bytes
// walked for what they might hold (see walkTag) fail often.
var (
	errVarintOverflow = fmt.Errorf("%w: varint overflows 64 bits", ErrMalformed)
	errEndOutside     = fmt.Errorf("%w: end of group outside a group", ErrMalformed)
	errUnexpectedEnd  = fmt.Errorf("%w: unexpected end of group", ErrMalformed)
)

// varint reads a base-128 varint at b[i:], returning it and the index after
// it. Like the generated decoders, it accepts at most ten bytes.
func varint(b []byte, i int) (uint64, int, error) {
	if i < len(b) && b[i] < 0x80 {
		return uint64(b[i]), i + 1, nil
	}
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, 0, errVarintOverflow
		}
		if i >= len(b) {
			return 0, 0, ErrTruncated
		}
		c := b[i]
		i++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, i, nil
		}
	}
}

// tag reads a field key at b[i:]: the field number and the wire type.
func tag(b []byte, i int) (num int32, typ int, next int, err error) {
	if num, typ, ok := oneByteTag(b, i); ok {
		return num, typ, i + 1, nil
	}
	v, next, err := varint(b, i)
	if err != nil {
		return 0, 0, 0, err
	}
	num, typ = int32(v>>3), int(v&7)
	if typ == wireEnd {
		return 0, 0, 0, errEndOutside
	}
	if num <= 0 {
		return 0, 0, 0, fmt.Errorf("%w: illegal field number %d", ErrMalformed, num)
	}
	return num, typ, next, nil
}

// walkTag reads a field key at b[i:] as tag does, for a walk of bytes that
// may not be a message (the splitter's, which looks into every value): it
// is false, with no error made, for a key tag refuses and for a group's
// (whose value skip would walk key by key, and which no Kubernetes type
// has), so that skip is asked only for values whose errors are made once.
func walkTag(b []byte, i int) (num int32, typ int, next int, ok bool) {
	if num, typ, ok = oneByteTag(b, i); ok {
		next = i + 1
	} else {
		v, n, err := varint(b, i)
		if err != nil {
			return 0, 0, 0, false
		}
		num, typ, next = int32(v>>3), int(v&7), n
	}
	if num <= 0 || typ == wireStart || typ == wireEnd || typ > wireFixed32 {
		return 0, 0, 0, false
	}
	return num, typ, next, true
}

// oneByteTag reads a field key of one byte at b[i:], the common case,
// and is false for any other key (longer, bad, or none), which tag reads.
// It inlines, where tag, with its errors, does not: the decoding loop
// calls it first.
func oneByteTag(b []byte, i int) (num int32, typ int, ok bool) {
	if i < len(b) && b[i] < 0x80 && b[i]&7 != wireEnd && b[i] >= 8 {
		return int32(b[i] >> 3), int(b[i] & 7), true
	}
	return 0, 0, false
}

// oneByteLength returns the bounds of the bytes field at b[i:] when its
// length is one byte and the field fits in b, the common case, and is
// false otherwise, for lengthDelimited to read or report. It inlines,
// where lengthDelimited does not: the decoding loop calls it first.
func oneByteLength(b []byte, i int) (start, end int, ok bool) {
	if i < len(b) && b[i] < 0x80 && i+1+int(b[i]) <= len(b) {
		return i + 1, i + 1 + int(b[i]), true
	}
	return 0, 0, false
}

// lengthDelimited reads the length of a bytes field at b[i:] and returns
// the field's bounds.
func lengthDelimited(b []byte, i int) (start, end int, err error) {
	if start, end, ok := oneByteLength(b, i); ok {
		return start, end, nil
	}
	if i < len(b) && b[i] < 0x80 {
		return 0, 0, ErrTruncated
	}
	n, i, err := varint(b, i)
	if err != nil {
		return 0, 0, err
	}
	if n > math.MaxInt32 {
		return 0, 0, fmt.Errorf("%w: length %d", ErrMalformed, n)
	}
	end = i + int(n)
	if end > len(b) {
		return 0, 0, ErrTruncated
	}
	return i, end, nil
}

// skip returns the index after the value of a field of wire type typ that
// starts at b[i:], groups included.
func skip(b []byte, i int, typ int) (int, error) {
	depth := 0
	for {
		switch typ {
		case wireVarint:
			_, n, err := varint(b, i)
			if err != nil {
				return 0, err
			}
			i = n
		case wireFixed64:
			if len(b)-i < 8 {
				return 0, ErrTruncated
			}
			i += 8
		case wireFixed32:
			if len(b)-i < 4 {
				return 0, ErrTruncated
			}
			i += 4
		case wireBytes:
			_, end, err := lengthDelimited(b, i)
			if err != nil {
				return 0, err
			}
			i = end
		case wireStart:
			depth++
		case wireEnd:
			if depth == 0 {
				return 0, errUnexpectedEnd
			}
			depth--
		default:
			return 0, fmt.Errorf("%w: illegal wire type %d", ErrMalformed, typ)
		}
		if depth == 0 {
			return i, nil
		}
		v, n, err := varint(b, i)
		if err != nil {
			return 0, err
		}
		i, typ = n, int(v&7)
	}
}

// fields calls f for each field of the message b with its number, wire
// type and value bounds: for wireBytes the payload, for the others the
// encoded value. It stops at the first error, f's included.
func fields(b []byte, f func(num int32, typ int, v []byte) error) error {
	for i := 0; i < len(b); {
		num, typ, next, err := tag(b, i)
		if err != nil {
			return err
		}
		var v []byte
		if typ == wireBytes {
			start, end, err := lengthDelimited(b, next)
			if err != nil {
				return err
			}
			v, i = b[start:end], end
		} else {
			end, err := skip(b, next, typ)
			if err != nil {
				return err
			}
			v, i = b[next:end], end
		}
		if err := f(num, typ, v); err != nil {
			return err
		}
	}
	return nil
}
