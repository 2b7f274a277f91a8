// Package wire decodes the API server's protobuf and JSON straight into
// the objects a cache keeps: a full API type T, or a projection P of it,
// a struct the user writes with a subset of T's fields at every level and
// an embedded Meta[P]. A Decoder's plan is built once, by reflection over
// the Go types and their protobuf tags; no code is generated.
//
// Construction. NewDecoder checks P against T and refuses, with a
// *MismatchError naming the field's path (errors.Is ErrMismatch), every
// projection it cannot decode exactly as client-go decodes T: a field T
// lacks or of another type, a type with an encoding of its own that is
// projected, a Meta anywhere but embedded by value in the struct it names
// (DeepCopyObject finds the object around a Meta[P] by P's layout). A
// projection it accepts decodes, in protobuf and JSON, to what client-go's
// decoding of T then projected to P would hold.
//
// Errors. Every error of decoding bytes wraps ErrTruncated or
// ErrMalformed, those of a type's own decoder (metav1.Time's,
// resource.Quantity's, encoding/json's) included, and most are a
// *DecodeError naming the field. Such an error never wraps io.EOF or
// io.ErrUnexpectedEOF, which the readers of streams (ListItemsFrom,
// FrameReader, a Source's watches) return, as they are, when the stream
// itself ends or is cut, and which a list or watch retries quietly. The
// errors of a callback (ListItems' each) are returned as they are.
//
// A Decoder is safe for concurrent use. Objects decoded with map sharing
// (the default) share maps, managedFields' FieldsV1 bytes, and the
// *metav1.Time and *metav1.FieldsV1 of managedFields entries with other
// objects and must not be modified.
package wire
