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
	if len(b) == len(protobufMagic) {
		return nil, nil, fmt.Errorf("%w: empty body", ErrMalformed) // as client-go says
	}
	err = fields(b[len(protobufMagic):], func(num int32, typ int, v []byte) error {
		if num > 4 { // not a field of runtime.Unknown
			return nil
		}
		if err := wantBytes(num, typ); err != nil {
			return err
		}
		switch num {
		case 1:
			var err error
			kind, err = typeMetaKind(v)
			return err
		case 2:
			raw = v
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return kind, raw, nil
}

// typeMetaKind returns the kind in the runtime.TypeMeta b, {apiVersion=1,
// kind=2}.
func typeMetaKind(b []byte) (kind []byte, err error) {
	err = fields(b, func(num int32, typ int, v []byte) error {
		if num > 2 {
			return nil
		}
		if num == 2 {
			kind = v
		}
		return wantBytes(num, typ)
	})
	return kind, err
}

// ListItems reads the protobuf body of a LIST response: it returns the
// list's metadata and calls each with the bare message of every item, in
// order. The item bytes alias body. An error of each is returned as it
// is; every other wraps ErrTruncated or ErrMalformed, a body without a
// list in its envelope included (which client-go's decoder would read as
// an empty list, and the API server never sends).
func ListItems(body []byte, each func(item []byte) error) (metav1.ListMeta, error) {
	var lm metav1.ListMeta
	_, raw, err := Unwrap(body)
	if err != nil {
		return lm, err
	}
	if raw == nil {
		return lm, fmt.Errorf("%w: no list in the envelope", ErrMalformed)
	}
	err = fields(raw, func(num int32, typ int, v []byte) error {
		if num > 2 {
			return nil
		}
		if err := wantBytes(num, typ); err != nil {
			return err
		}
		if num == 2 {
			return each(v)
		}
		if err := lm.Unmarshal(v); err != nil {
			return &DecodeError{Path: "metadata", Err: malformed(err)}
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
		if num != 1 {
			if i, err = skip(obj, next, typ); err != nil {
				return ref, err
			}
			continue
		}
		if err := wantBytes(num, typ); err != nil {
			return ref, err
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
			if num != 1 && num != 3 && num != 6 {
				if j, err = skip(meta, next, typ); err != nil {
					return ref, err
				}
				continue
			}
			if err := wantBytes(num, typ); err != nil {
				return ref, err
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
	// size is where a frame's length is read: a local array handed to
	// the reader, an interface, would be allocated at every frame.
	size [4]byte
}

// NewFrameReader reads frames from r.
func NewFrameReader(r io.Reader) *FrameReader { return &FrameReader{r: r} }

// Next returns the type of the next event and the protobuf body of its
// object (with its envelope). The object aliases a buffer that the next
// call reuses. At the end of the stream it returns io.EOF.
func (f *FrameReader) Next() (eventType string, object []byte, err error) {
	if _, err := io.ReadFull(f.r, f.size[:]); err != nil {
		return "", nil, err
	}
	size := binary.BigEndian.Uint32(f.size[:])
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
		if num > 2 {
			return nil
		}
		if err := wantBytes(num, wt); err != nil {
			return err
		}
		if num == 1 {
			typ = v
			return nil
		}
		return fields(v, func(num int32, wt int, v []byte) error { // RawExtension {raw=1}
			if num != 1 {
				return nil
			}
			object = v
			return wantBytes(num, wt)
		})
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
