package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync/atomic"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// SourceOptions configures a Source.
type SourceOptions[PP any] struct {
	// Protobuf asks the server for protobuf first (built-in types); the
	// server answers JSON for types it only serves in JSON (CRDs), and the
	// Source decodes whichever it gets.
	Protobuf bool
	// Reuse, when set, is asked for the cached object of each listed
	// object, and of each ADDED watch event, before it is decoded: if it
	// returns an object, that object is used instead and the bytes are not
	// decoded. The Source passes the namespace, name and resourceVersion
	// it read from the bytes; Reuse must return an object only if it has
	// exactly that resourceVersion (for protobuf only).
	Reuse func(ref ObjectRef) (PP, bool)
	// Accept, when set, is the Accept header of every request, instead of
	// the one Protobuf chooses; the Source decodes protobuf or JSON,
	// whichever the server answers.
	Accept string
	// WatchAccept, when set, is the Accept header of watches instead of
	// Accept: the server's metadata views differ between a list
	// (as=PartialObjectMetadataList) and a watch's objects
	// (as=PartialObjectMetadata).
	WatchAccept string
	// Tweak changes the options of every request.
	Tweak func(*metav1.ListOptions)
	// Decoded, when set, is given each object the Source decoded from an
	// ADDED or MODIFIED event of a protobuf watch (not one Reuse
	// returned), with the bytes it was decoded from, the object's bare
	// message; b is valid only during the call. A compact store's codec
	// takes them (Compact.Offer), to make the object's record of the bytes
	// instead of encoding the object again.
	Decoded func(obj PP, b []byte)
	// Previous, when set, returns the cached object of ref's namespace and
	// name, whatever its resourceVersion. A MODIFIED or DELETED event of a
	// protobuf watch then decodes its object without the parts (top-level
	// message fields other than the metadata, such as a Pod's spec and
	// status) whose bytes are the cached object's: the new object takes
	// the cached object's values of those fields, sharing what they point
	// to (see parts.go). The Source remembers the hashes of the parts of
	// the objects ADDED and MODIFIED events brought; for another cached
	// object (a listed one: a list, and the ADDED events of a watch-list's
	// initial state, are not remembered) the decoder derives them by
	// encoding the object's parts again, and a decoder of a projection,
	// which cannot, decodes the event whole. The cached objects must be
	// as the Source decoded them: no transform.
	Previous func(ref ObjectRef) (PP, bool)
	// WeakPrevious tells that the cache Previous reads lets go of its
	// objects while they are current (a compact store's codec keeps a
	// bounded number decoded): the Source then holds none of the objects
	// it remembers alive, and does not use what it remembers of one once
	// it is collected (it forgets it at the next sweep of what it
	// remembers, after as many updates as the last sweep left objects
	// remembered, 256 at least).
	WeakPrevious bool
	// Initial, when set, is given the bare message of each object the
	// initial events of a protobuf watch-list stream bring (its ADDED
	// events before the bookmark that ends them), before it is decoded; b
	// is valid only during the call. If it returns an object, the event
	// carries that object and the bytes are not decoded (nor given to
	// Reuse or Decoded): a compact store makes its records of the bytes,
	// as it does of a list's. If it returns nil, the bytes are decoded.
	Initial func(b []byte) (runtime.Object, error)
}

// Source lists and watches one resource through a REST client, decoding
// each object straight from the response bytes with a Decoder.
type Source[PP any] struct {
	client    rest.Interface
	resource  string
	namespace string
	dec       *Decoder[PP]
	opts      SourceOptions[PP]
	parts     *partsTable // with Previous, for a P that has parts
}

// NewSource returns the Source of resource (such as "pods") in namespace
// ("" for all namespaces, or a cluster-scoped resource) through client, a
// REST client for the resource's group and version.
func NewSource[PP any](client rest.Interface, resource, namespace string, dec *Decoder[PP], opts SourceOptions[PP]) *Source[PP] {
	s := &Source[PP]{client: client, resource: resource, namespace: namespace, dec: dec, opts: opts}
	if opts.Previous != nil && dec.parts {
		s.parts = newPartsTable(opts.WeakPrevious)
	}
	return s
}

const (
	acceptProtobuf = "application/vnd.kubernetes.protobuf,application/json"
	acceptJSON     = "application/json"
)

func (s *Source[PP]) accept(watch bool) string {
	if watch && s.opts.WatchAccept != "" {
		return s.opts.WatchAccept
	}
	if s.opts.Accept != "" {
		return s.opts.Accept
	}
	if s.opts.Protobuf {
		return acceptProtobuf
	}
	return acceptJSON
}

func (s *Source[PP]) request(opts *metav1.ListOptions) *rest.Request {
	if s.opts.Tweak != nil {
		s.opts.Tweak(opts)
	}
	r := s.client.Get().
		NamespaceIfScoped(s.namespace, s.namespace != "").
		Resource(s.resource).
		VersionedParams(opts, metav1.ParameterCodec).
		SetHeader("Accept", s.accept(opts.Watch))
	if opts.TimeoutSeconds != nil {
		r = r.Timeout(time.Duration(*opts.TimeoutSeconds) * time.Second)
	}
	return r
}

// List lists one page: its objects and its list metadata. A protobuf
// response is decoded as it arrives, item by item, never held whole.
func (s *Source[PP]) List(ctx context.Context, opts metav1.ListOptions) ([]PP, metav1.ListMeta, error) {
	s.listing(opts)
	// Through RecordEncodingInflating, a compressed list is inflated as a
	// watch is.
	stream, err := s.request(&opts).Stream(withEncoding(ctx, new(streamEncoding)))
	if err != nil {
		return nil, metav1.ListMeta{}, err
	}
	defer stream.Close()
	r := bufio.NewReaderSize(stream, 32<<10)
	if head, err := r.Peek(len(protobufMagic)); err == nil && IsProtobuf(head) {
		var items []PP
		lm, err := ListItemsFrom(r, func(item []byte) error {
			p, _, err := s.object(item, true)
			if err != nil {
				return fmt.Errorf("list item %d: %w", len(items), err)
			}
			items = append(items, p)
			return nil
		})
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		return items, lm, nil
	}
	return s.listJSON(r)
}

// listJSON decodes the JSON body of a LIST response from r.
func (s *Source[PP]) listJSON(r io.Reader) ([]PP, metav1.ListMeta, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, metav1.ListMeta{}, err
	}
	var list struct {
		Metadata metav1.ListMeta   `json:"metadata"`
		Items    []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, metav1.ListMeta{}, &DecodeError{Err: malformed(err)}
	}
	items := make([]PP, 0, len(list.Items))
	for i, raw := range list.Items {
		p, err := s.dec.JSON(raw)
		if err != nil {
			return nil, metav1.ListMeta{}, fmt.Errorf("list item %d: %w", i, err)
		}
		items = append(items, p)
	}
	return items, list.Metadata, nil
}

// listing drops what the Source remembers of the objects' parts when a
// request lists them anew: the first page of a list, or a watch that sends
// the initial events.
func (s *Source[PP]) listing(opts metav1.ListOptions) {
	if s.parts == nil {
		return
	}
	if !opts.Watch && opts.Continue == "" || opts.Watch && opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		s.parts.clear()
	}
}

// changed decodes the bare protobuf message of an object a watch event
// brought after the initial state (ADDED, MODIFIED or DELETED), without
// the parts it has as the cached object had them (see parts.go). The
// parts of an added or modified object are remembered for its next event;
// a deleted object's are forgotten. An ADDED object the cache still holds
// at that resourceVersion (Reuse) is taken as it is.
func (s *Source[PP]) changed(b []byte, et watch.EventType) (p PP, reused bool, err error) {
	ref, err := PeekProtobufMeta(b)
	if err != nil {
		p, err = s.dec.Protobuf(b) // which says what is wrong
		return p, false, err
	}
	if et == watch.Added && s.opts.Reuse != nil {
		if p, ok := s.opts.Reuse(ref); ok {
			return p, true, nil
		}
	}
	var buf [128]byte
	key := appendRefKey(buf[:0], ref)
	var prev unsafe.Pointer
	var old *parts
	if obj, ok := s.opts.Previous(ref); ok {
		// The parts remembered are of the cached object only if it is the
		// one they were hashed from; else the decoder derives its parts.
		prev = s.dec.pointerOf(obj)
		if e, ok := s.parts.get(key); ok && e.object() == prev {
			old = &e.parts
		}
	}
	p, ps, err := s.dec.protobufParts(b, prev, old)
	if err != nil || et == watch.Deleted {
		s.parts.forget(key)
		return p, false, err
	}
	s.parts.put(key, s.dec.pointerOf(p), ps)
	return p, false, nil
}

// object decodes the bare protobuf message of one object, or reuses the
// cached one (reused is then true).
func (s *Source[PP]) object(b []byte, reuse bool) (p PP, reused bool, err error) {
	if reuse && s.opts.Reuse != nil {
		ref, err := PeekProtobufMeta(b)
		if err != nil {
			return p, false, err
		}
		if p, ok := s.opts.Reuse(ref); ok {
			return p, true, nil
		}
	}
	p, err = s.dec.Protobuf(b)
	return p, false, err
}

// runtimeObjectType is runtime.Object's type.
var runtimeObjectType = reflect.TypeFor[runtime.Object]()

// Watch starts a watch. The events carry *P, which must be a
// runtime.Object, or a *metav1.Status for ERROR events; bytes that cannot
// be decoded end the watch with an ERROR event.
func (s *Source[PP]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if t := s.dec.elemPointer(); !t.Implements(runtimeObjectType) {
		return nil, fmt.Errorf("wire: %v is not a runtime.Object: embed a wire.Meta", t)
	}
	opts.Watch = true
	s.listing(opts)
	var enc streamEncoding
	body, err := s.request(&opts).Stream(withEncoding(ctx, &enc))
	if err != nil {
		return nil, err
	}
	d := newEventDecoder(s, body)
	d.initial = opts.SendInitialEvents != nil && *opts.SendInitialEvents
	w := newStreamWatcher(func() (watch.Event, error) {
		typ, obj, err := d.Decode()
		return watch.Event{Type: typ, Object: obj}, err
	}, d)
	w.compressed, w.http2, w.buffered, w.largeInitial = enc.compressed, enc.http2, d.buffered, d.large.Load
	return w, nil
}

// eventDecoder decodes the events of a watch stream, protobuf or JSON.
type eventDecoder[PP any] struct {
	s      *Source[PP]
	body   io.ReadCloser
	r      *bufio.Reader
	frames *FrameReader  // protobuf
	json   *json.Decoder // JSON
	// initial says that the stream still sends the initial state of a
	// watch-list (SendInitialEvents), which ends with a BOOKMARK: its
	// ADDED events are listed objects, whose parts are not remembered
	// (see Source.changed), as a list's are not.
	initial bool
	// initialObjects and initialBytes count the initial events' objects
	// and their bytes of protobuf; large is set, at the bookmark ending
	// them, when they averaged largeObject bytes or more.
	initialObjects, initialBytes int
	large                        atomic.Bool
}

func newEventDecoder[PP any](s *Source[PP], body io.ReadCloser) *eventDecoder[PP] {
	return &eventDecoder[PP]{s: s, body: body, r: bufio.NewReaderSize(body, 32<<10)}
}

// Decode returns the next event.
func (d *eventDecoder[PP]) Decode() (watch.EventType, runtime.Object, error) {
	if d.frames == nil && d.json == nil {
		first, err := d.r.Peek(1)
		if err != nil {
			return "", nil, err
		}
		if first[0] == '{' || first[0] == ' ' || first[0] == '\n' || first[0] == '\r' || first[0] == '\t' {
			d.json = json.NewDecoder(d.r)
		} else {
			d.frames = NewFrameReader(d.r)
		}
	}
	if d.json != nil {
		return d.decodeJSON()
	}
	typ, obj, err := d.frames.Next()
	if err != nil {
		return "", nil, err
	}
	kind, raw, err := Unwrap(obj)
	if err != nil {
		return "", nil, fmt.Errorf("watch event %s: %w", typ, err)
	}
	et := watch.EventType(typ)
	if et == watch.Error || string(kind) == "Status" && et != watch.Added && et != watch.Modified && et != watch.Deleted && et != watch.Bookmark {
		st := &metav1.Status{}
		if err := st.Unmarshal(raw); err != nil {
			return "", nil, &DecodeError{Err: fmt.Errorf("status: %w", malformed(err))}
		}
		return watch.Error, st, nil
	}
	if err := knownEventType(et); err != nil {
		return "", nil, err
	}
	var p PP
	var reused bool
	switch {
	case et == watch.Bookmark:
		if d.initial && d.initialObjects > 0 && d.initialBytes/d.initialObjects >= largeObject {
			d.large.Store(true)
		}
		d.initial = false
		p, reused, err = d.s.object(raw, false)
	case et == watch.Added && d.initial: // a listed object: no parts remembered
		d.initialObjects++
		d.initialBytes += len(raw)
		if d.s.opts.Initial != nil {
			o, err := d.s.opts.Initial(raw)
			if err != nil {
				return "", nil, fmt.Errorf("watch event %s: %w", typ, err)
			}
			if o != nil {
				return et, o, nil
			}
		}
		p, reused, err = d.s.object(raw, true)
	case d.s.parts != nil:
		p, reused, err = d.s.changed(raw, et)
	default:
		p, reused, err = d.s.object(raw, et == watch.Added)
	}
	if err != nil {
		return "", nil, fmt.Errorf("watch event %s: %w", typ, err)
	}
	if d.s.opts.Decoded != nil && !reused && (et == watch.Added || et == watch.Modified) {
		d.s.opts.Decoded(p, raw)
	}
	return et, any(p).(runtime.Object), nil
}

func (d *eventDecoder[PP]) decodeJSON() (watch.EventType, runtime.Object, error) {
	var ev struct {
		Type   watch.EventType `json:"type"`
		Object json.RawMessage `json:"object"`
	}
	if err := d.json.Decode(&ev); err != nil {
		var syntax *json.SyntaxError
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return "", nil, io.EOF
		case errors.As(err, &syntax) || errors.As(err, &typeErr):
			return "", nil, &DecodeError{Err: malformed(err)}
		}
		return "", nil, err // the stream's: cut (io.ErrUnexpectedEOF), closed
	}
	if ev.Type == watch.Error {
		st := &metav1.Status{}
		if err := json.Unmarshal(ev.Object, st); err != nil {
			return "", nil, &DecodeError{Err: fmt.Errorf("status: %w", malformed(err))}
		}
		// As client-go's decoders leave it: without its kind.
		st.TypeMeta = metav1.TypeMeta{}
		return watch.Error, st, nil
	}
	if err := knownEventType(ev.Type); err != nil {
		return "", nil, err
	}
	if o := bytes.TrimSpace(ev.Object); len(o) == 0 || string(o) == "null" {
		// Decoding it would give an empty object, which a cache would
		// store under an empty key.
		return "", nil, &DecodeError{Err: fmt.Errorf("%w: watch event %s without an object", ErrMalformed, ev.Type)}
	}
	p, err := d.s.dec.JSON(ev.Object)
	if err != nil {
		return "", nil, fmt.Errorf("watch event %s: %w", ev.Type, err)
	}
	obj := any(p).(runtime.Object)
	// As client-go's decoders leave a watched object: without its kind.
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return ev.Type, obj, nil
}

// knownEventType returns an error for a watch event type other than
// ADDED, MODIFIED, DELETED and BOOKMARK (ERROR is told apart before), as
// client-go's watch decoder does.
func knownEventType(et watch.EventType) error {
	switch et {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		return nil
	}
	return &DecodeError{Err: fmt.Errorf("%w: watch event type %q", ErrMalformed, et)}
}

// Close closes the stream.
func (d *eventDecoder[PP]) Close() { d.body.Close() }

// buffered reports whether bytes of the stream have been received and not
// yet decoded: the next Decode will not wait for the network. JSON's
// decoder reads ahead into a buffer of its own, so for JSON this may be
// false while an event is waiting there.
func (d *eventDecoder[PP]) buffered() bool { return d.r.Buffered() > 0 }
