package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxItem is the largest list item ListItemsFrom accepts.
const MaxItem = MaxFrame

// ListItemsFrom is ListItems reading the protobuf body of a LIST response
// from r as it arrives, so that the whole body is never in memory: each
// item is read into a buffer that the next item reuses, and handed to
// each, which must not keep it. Errors reading r are returned as they
// are (a connection cut mid-body is io.ErrUnexpectedEOF, not a decoding
// error), and so are errors of each; bytes that are not such a body wrap
// ErrMalformed, as for ListItems.
func ListItemsFrom(r *bufio.Reader, each func(item []byte) error) (metav1.ListMeta, error) {
	var lm metav1.ListMeta
	magic := make([]byte, len(protobufMagic))
	if _, err := io.ReadFull(r, magic); err != nil {
		return lm, unexpected(err)
	}
	if string(magic) != string(protobufMagic) {
		return lm, fmt.Errorf("%w: no protobuf magic prefix", ErrMalformed)
	}
	s := &stream{r: r}
	sawList := false
	// The runtime.Unknown envelope, to the end of the body.
	for {
		num, typ, err := s.tag()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return lm, err
		}
		if num <= 4 { // a field of runtime.Unknown: all are length-delimited
			if err := wantBytes(num, typ); err != nil {
				return lm, err
			}
		}
		if num == 1 { // the TypeMeta, read as Unwrap reads it
			n, err := s.length()
			if err != nil {
				return lm, err
			}
			b, err := s.read(n)
			if err != nil {
				return lm, err
			}
			if _, err := typeMetaKind(b); err != nil {
				return lm, err
			}
			continue
		}
		if num != 2 {
			if err := s.skip(typ); err != nil {
				return lm, err
			}
			continue
		}
		if sawList {
			return lm, fmt.Errorf("%w: two lists in the envelope", ErrMalformed)
		}
		// The list is read an item at a time: only each item is bounded.
		n, err := s.lengthUpTo(math.MaxInt64)
		if err != nil {
			return lm, err
		}
		if err := s.list(n, &lm, each); err != nil {
			return lm, err
		}
		sawList = true
	}
	if !sawList {
		if s.n == 0 {
			return lm, fmt.Errorf("%w: empty body", ErrMalformed) // as client-go says
		}
		return lm, fmt.Errorf("%w: no list in the envelope", ErrMalformed)
	}
	return lm, nil
}

// stream reads protobuf fields from a reader, counting the bytes read.
type stream struct {
	r   *bufio.Reader
	n   int64 // bytes read
	buf []byte
}

// unexpected turns an end of input inside a value into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// uvarint reads a varint.
func (s *stream) uvarint() (uint64, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, fmt.Errorf("%w: varint overflows", ErrMalformed)
		}
		c, err := s.r.ReadByte()
		if err != nil {
			if shift == 0 {
				return 0, err // io.EOF between fields is the end
			}
			return 0, unexpected(err)
		}
		s.n++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, nil
		}
	}
}

// tag reads a field's tag. io.EOF means the input ended before it.
func (s *stream) tag() (int32, int, error) {
	k, err := s.uvarint()
	if err != nil {
		return 0, 0, err
	}
	num, typ := k>>3, int(k&7)
	if num == 0 || num > 1<<29-1 {
		return 0, 0, fmt.Errorf("%w: field number %d", ErrMalformed, num)
	}
	return int32(num), typ, nil
}

// length reads the length of a length-delimited value read or skipped
// whole: at most MaxItem.
func (s *stream) length() (int64, error) { return s.lengthUpTo(MaxItem) }

// lengthUpTo reads the length of a length-delimited value of at most limit
// bytes.
func (s *stream) lengthUpTo(limit uint64) (int64, error) {
	n, err := s.uvarint()
	if err != nil {
		return 0, unexpected(err)
	}
	if n > limit {
		return 0, fmt.Errorf("%w: value of %d bytes, more than %d", ErrMalformed, n, limit)
	}
	return int64(n), nil
}

// discard skips n bytes.
func (s *stream) discard(n int64) error {
	for n > 0 {
		d, err := s.r.Discard(int(min(n, 1<<30)))
		s.n += int64(d)
		n -= int64(d)
		if err != nil {
			return unexpected(err)
		}
	}
	return nil
}

// read reads n bytes into the reused buffer.
func (s *stream) read(n int64) ([]byte, error) {
	if int64(cap(s.buf)) < n {
		s.buf = make([]byte, n)
	}
	b := s.buf[:n]
	if _, err := io.ReadFull(s.r, b); err != nil {
		return nil, unexpected(err)
	}
	s.n += n
	return b, nil
}

// skip skips the value of a field of wire type typ.
func (s *stream) skip(typ int) error {
	switch typ {
	case wireVarint:
		_, err := s.uvarint()
		return unexpected(err)
	case wireFixed64:
		return s.discard(8)
	case wireFixed32:
		return s.discard(4)
	case wireBytes:
		n, err := s.length()
		if err != nil {
			return err
		}
		return s.discard(n)
	}
	return fmt.Errorf("%w: wire type %d", ErrMalformed, typ)
}

// list reads a list message of n bytes: its metadata (field 1) into lm,
// and each item (field 2).
func (s *stream) list(n int64, lm *metav1.ListMeta, each func(item []byte) error) error {
	end := s.n + n
	for s.n < end {
		num, typ, err := s.tag()
		if err != nil {
			return unexpected(err)
		}
		if num != 1 && num != 2 {
			if err := s.skip(typ); err != nil {
				return err
			}
			continue
		}
		if err := wantBytes(num, typ); err != nil {
			return err
		}
		m, err := s.length()
		if err != nil {
			return err
		}
		if s.n+m > end {
			return fmt.Errorf("%w: a field overruns its list", ErrMalformed)
		}
		b, err := s.read(m)
		if err != nil {
			return err
		}
		if num == 1 {
			if err := lm.Unmarshal(b); err != nil {
				return &DecodeError{Path: "metadata", Err: malformed(err)}
			}
			continue
		}
		if err := each(b); err != nil {
			return err
		}
	}
	if s.n != end {
		return fmt.Errorf("%w: a field overruns its list", ErrMalformed)
	}
	return nil
}
