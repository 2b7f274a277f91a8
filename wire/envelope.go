package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// protobufMagic starts every protobuf body and watch event object of the
// API server.
var protobufMagic = []byte("k8s\x00")

// IsProtobuf reports whether b starts with the magic prefix of the API
// server's protobuf encoding.
func IsProtobuf(b []byte) bool { return bytes.HasPrefix(b, protobufMagic) }

// Unwrap returns the kind and the raw message inside the envelope of a
// protobuf body: the magic prefix and a runtime.Unknown. The results alias
// b.
func Unwrap(b []byte) (kind, raw []byte, err error) {
	if !IsProtobuf(b) {
		return nil, nil, fmt.Errorf("%w: no protobuf magic prefix", ErrMalformed)
	}
	err = fields(b[len(protobufMagic):], func(num int32, typ int, v []byte) error {
		if typ != wireBytes {
			return nil
		}
		switch num {
		case 1: // typeMeta {apiVersion=1, kind=2}
			return fields(v, func(num int32, typ int, v []byte) error {
				if num == 2 && typ == wireBytes {
					kind = v
				}
				return nil
			})
		case 2:
			raw = v
		}
		return nil
	})
	return kind, raw, err
}

// ListItems reads the protobuf body of a LIST response: it returns the
// list's metadata and calls each with the bare message of every item, in
// order. The item bytes alias body.
func ListItems(body []byte, each func(item []byte) error) (metav1.ListMeta, error) {
	var lm metav1.ListMeta
	_, raw, err := Unwrap(body)
	if err != nil {
		return lm, err
	}
	err = fields(raw, func(num int32, typ int, v []byte) error {
		switch {
		case num == 1 && typ == wireBytes:
			if err := lm.Unmarshal(v); err != nil {
				return &DecodeError{Path: "metadata", Err: fmt.Errorf("%w: %w", ErrMalformed, err)}
			}
		case num == 2 && typ == wireBytes:
			return each(v)
		}
		return nil
	})
	return lm, err
}

// ObjectRef is what PeekProtobufMeta reads of an object before it is
// decoded. Its slices alias the object's bytes.
type ObjectRef struct {
	Namespace, Name, ResourceVersion []byte
}

// PeekProtobufMeta reads the namespace, name and resourceVersion of the
// bare protobuf message of an API object (field 1 is its ObjectMeta)
// without decoding it or allocating.
func PeekProtobufMeta(obj []byte) (ObjectRef, error) {
	var ref ObjectRef
	for i := 0; i < len(obj); {
		num, typ, next, err := tag(obj, i)
		if err != nil {
			return ref, err
		}
		if num != 1 || typ != wireBytes {
			if i, err = skip(obj, next, typ); err != nil {
				return ref, err
			}
			continue
		}
		start, end, err := lengthDelimited(obj, next)
		if err != nil {
			return ref, err
		}
		meta := obj[start:end]
		for j := 0; j < len(meta); {
			num, typ, next, err := tag(meta, j)
			if err != nil {
				return ref, err
			}
			if typ != wireBytes || (num != 1 && num != 3 && num != 6) {
				if j, err = skip(meta, next, typ); err != nil {
					return ref, err
				}
				continue
			}
			s, e, err := lengthDelimited(meta, next)
			if err != nil {
				return ref, err
			}
			switch num {
			case 1:
				ref.Name = meta[s:e]
			case 3:
				ref.Namespace = meta[s:e]
			case 6:
				ref.ResourceVersion = meta[s:e]
			}
			j = e
		}
		i = end
	}
	return ref, nil
}

// MaxFrame is the largest watch event frame a FrameReader accepts.
const MaxFrame = 64 << 20

// FrameReader reads the frames of a protobuf watch stream: a 4-byte
// big-endian length, then a metav1.WatchEvent.
type FrameReader struct {
	r   io.Reader
	buf []byte
}

// NewFrameReader reads frames from r.
func NewFrameReader(r io.Reader) *FrameReader { return &FrameReader{r: r} }

// Next returns the type of the next event and the protobuf body of its
// object (with its envelope). The object aliases a buffer that the next
// call reuses. At the end of the stream it returns io.EOF.
func (f *FrameReader) Next() (eventType string, object []byte, err error) {
	var n [4]byte
	if _, err := io.ReadFull(f.r, n[:]); err != nil {
		return "", nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > MaxFrame {
		return "", nil, fmt.Errorf("%w: watch frame of %d bytes, more than %d", ErrMalformed, size, MaxFrame)
	}
	if cap(f.buf) < int(size) {
		f.buf = make([]byte, size)
	}
	f.buf = f.buf[:size]
	if _, err := io.ReadFull(f.r, f.buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return "", nil, err
	}
	var typ []byte
	err = fields(f.buf, func(num int32, wt int, v []byte) error {
		if wt != wireBytes {
			return nil
		}
		switch num {
		case 1:
			typ = v
		case 2: // RawExtension {raw=1}
			return fields(v, func(num int32, wt int, v []byte) error {
				if num == 1 && wt == wireBytes {
					object = v
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	for _, known := range eventTypes {
		if string(typ) == known {
			return known, object, nil
		}
	}
	return string(typ), object, nil
}

var eventTypes = [...]string{"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"}
