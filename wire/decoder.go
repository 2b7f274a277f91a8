package wire

import (
	"fmt"
	"hash/maphash"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
)

// Options configures a Decoder. The zero value decodes what P declares,
// sharing repeated strings.
type Options struct {
	// Annotations, when set, keeps only the annotations of a Meta or an
	// ObjectMeta whose key it returns true for: in protobuf every one of
	// an object's, in JSON the object's own. The bookmark annotation that
	// ends a watch-list stream's initial events is always kept. Default:
	// all.
	Annotations func(key string) bool
	// DropManagedFields leaves metav1.ObjectMeta.ManagedFields empty when
	// decoding a type with a full ObjectMeta (a Meta never has them), in
	// protobuf and JSON. It is never a default: client-go keeps them.
	DropManagedFields bool
	// NoSharing gives every object its own copy of every string. By
	// default, short strings that repeat across objects (namespaces, label
	// and annotation keys and values, images, node names, owner kinds) are
	// shared through a bounded table, which saves heap and changes nothing
	// a reader can see.
	NoSharing bool
	// NoMapSharing gives every object its own maps (labels, annotations,
	// the ResourceLists of containers' requests and limits, any map
	// field) and its own managedFields bytes. By default, objects whose
	// map field has the same entries on the wire (the Pods of one
	// ReplicaSet share their labels, often their annotations, and their
	// containers' requests and limits) share one map, found through a
	// bounded table keyed by the map's type and bytes (in JSON, labels and
	// annotations only); and equal FieldsV1 bytes of managedFields (those
	// of the create of the Pods of one ReplicaSet) are one slice, found
	// through another (at most 4 MiB); and equal pointed-at messages (a
	// container's probes and security context, a volume's source) are one
	// value, found through a third (see share_msg.go). A ResourceList, or
	// a message, holding a Quantity kept as an inf.Dec (more digits than
	// an int64 holds), whose copies share it, is never shared. The objects
	// an informer caches are read-only already; with shared maps, bytes
	// and messages, writing to one object's map, FieldsV1.Raw or probe
	// (which the contract forbids) would change the others too. Set it
	// when objects
	// are modified in place after decoding, as a transform may; the
	// factory does so for informers with a transform. NoSharing implies
	// it.
	NoMapSharing bool
	// NoPartReuse makes a Source decode every update whole. By default,
	// with SourceOptions.Previous, an update or a delete (a MODIFIED or
	// DELETED event) takes the parts whose bytes did not change (top-level
	// message fields but the metadata, such as a Pod's spec) from the
	// cached object it replaces, sharing what they point to. A program
	// that writes to a cached object's part (which the contract forbids)
	// then sees its write in the object's next versions too, as long as
	// the server's bytes of that part stay the same; unlike a shared
	// map's, such a write is not detected. Set it to keep such a write to
	// the one version it was made in, as client-go does.
	NoPartReuse bool
}

// Decoder decodes the protobuf or JSON encoding of a *T into a *P that
// mirrors it: P has a subset of T's fields at every level, each of T's type
// or a projection of it, and possibly an embedded Meta[P]; P may be T
// itself. Its type parameter is the pointer type *P, the type an informer
// caches. It is safe for concurrent use.
type Decoder[PP any] struct {
	plan  *plan
	elem  reflect.Type // P
	json  reflect.Type // the shadow of P with T's JSON names; nil when P's own names are right
	mu    sync.Mutex   // guards strs, maps, bytes, times, msgs, jsonMaps, scratch and memo
	strs  *interner
	maps  *mapTable
	bytes *bytesTable // the FieldsV1 of managedFields, in protobuf and JSON
	times *timeTable  // the times of managedFields (see share_ptr.go)
	msgs  *msgTable   // pointed-at messages (see share_msg.go)
	// jsonMaps shares the labels and annotations of JSON-decoded objects,
	// at jsonMapOffsets in P: a table of its own, keyed otherwise.
	jsonMaps       *mapTable
	jsonMapOffsets []uintptr
	scratch        map[*op]*scratchValue // the values Validate unmarshals into (see validator)
	memo           *validMemo            // what Validate found valid, until EndValidation (see validMemo)
	// share is what the decoder shares, for its Sizer; nil without
	// sharing. Its tables are the ones above.
	share      *sharing
	opts       Options
	meta       int // offset of P's Meta, or -1
	objectMeta int // offset of P's embedded metav1.ObjectMeta, or -1
	// elemType is the descriptor of P, for allocating one.
	elemType unsafe.Pointer
	tname    string
	// parts: P has parts an update may leave as they were (see parts.go),
	// whose bytes are hashed with seed.
	parts bool
	seed  maphash.Seed
	// derive: P is T, whose parts have their generated encoders, so that
	// the parts of an object nothing remembers can be hashed by encoding
	// them again (see derivedParts).
	derive bool
	// decodedJSON is set once the decoder has decoded JSON: such an
	// object's Quantities need not hold their strings (see cacheString),
	// and the decoder derives no parts from then on.
	decodedJSON atomic.Bool
	// tab is the first word of a PP that holds a *P, when PP is an
	// interface type (see NewDecoderOf): its interface table, or for an
	// empty interface *P's type descriptor. It is nil when PP is *P.
	tab unsafe.Pointer
}

// NewDecoder checks that P mirrors T, where PP is *P and TP is *T, pointers
// to structs, and returns a Decoder of T's encodings into P. A field of P
// that T lacks, or whose type is neither T's nor a projection of it, is a
// *MismatchError naming the field's path. A field may also have the
// predeclared or unnamed type under T's named one (string for
// corev1.PodPhase, map[corev1.ResourceName]resource.Quantity for
// corev1.ResourceList), unless T's type has an encoding of its own
// (metav1.Verbs). A field of a type T inlines in JSON (corev1.Volume's
// VolumeSource) is declared by its name, as in T, or embedded.
//
// A wire.Meta must be embedded, by value, in the struct it names: P embeds
// a Meta[P], and a nested struct S of P may embed a Meta[S]. Any other
// Meta (a *Meta, or a Meta[Q] in P, which would make DeepCopyObject copy P
// as a Q) is a *MismatchError, as are two fields of P that are one field
// of T on the wire (a Meta beside a metav1.ObjectMeta).
func NewDecoder[PP, TP any](opts Options) (*Decoder[PP], error) {
	return newDecoder[PP](reflect.TypeFor[PP](), reflect.TypeFor[TP](), opts)
}

// NewDecoderOf returns a Decoder of the encodings of typ, a pointer to a
// struct such as *corev1.Pod, into new values of typ handed out as PP: an
// interface type that typ implements, such as runtime.Object, or typ
// itself. One instantiation of the generic code that holds a Decoder (an
// informer of runtime.Object, say) then serves every such type, where
// NewDecoder[PP, PP] compiles one for each; it decodes exactly as
// NewDecoder[*T, *T] does. A PP holding a value of another type is
// treated as a nil one: DecodeBeside and the Source's Previous then take
// nothing from it, and ProtobufInto panics.
func NewDecoderOf[PP any](typ reflect.Type, opts Options) (*Decoder[PP], error) {
	pp := reflect.TypeFor[PP]()
	if typ == nil || pp != typ && (pp.Kind() != reflect.Interface || !typ.Implements(pp)) {
		return nil, &MismatchError{fmt.Sprint(typ), fmt.Sprintf("the type must be %v or implement it", pp)}
	}
	d, err := newDecoder[PP](typ, typ, opts)
	if err != nil || pp == typ {
		return d, err
	}
	box, _ := reflect.New(typ.Elem()).Interface().(PP)
	d.tab = (*[2]unsafe.Pointer)(unsafe.Pointer(&box))[0]
	return d, nil
}

// newDecoder is NewDecoder for the types pp (PP, or an implementation of
// PP: see NewDecoderOf) and tp.
func newDecoder[PP any](pp, tp reflect.Type, opts Options) (*Decoder[PP], error) {
	if pp.Kind() != reflect.Pointer || tp.Kind() != reflect.Pointer || pp.Elem().Kind() != reflect.Struct || tp.Elem().Kind() != reflect.Struct {
		return nil, &MismatchError{pp.String(), "the projection and the type must be pointers to structs, such as *corev1.Pod"}
	}
	p, t := pp.Elem(), tp.Elem()
	if err := checkMetas(p); err != nil {
		return nil, err
	}
	d := &Decoder[PP]{elem: p, opts: opts, meta: metaOffset(p), objectMeta: objectMetaOffset(p), tname: t.String()}
	if tp.Implements(unmarshalerType) { // T has a protobuf encoding
		pl := &planner{plans: map[[2]reflect.Type]*plan{}, opts: &opts}
		x, err := pl.build(p, t, "")
		if err != nil {
			return nil, err
		}
		finish(x)
		d.plan = x
		d.elemType = typeDescriptor(p)
		d.parts, d.seed = !opts.NoPartReuse && hasParts(x), maphash.MakeSeed()
		d.derive = d.parts && p == t && partsEncode(x)
	}
	if !opts.NoSharing {
		d.strs = newInterner()
		if !opts.NoMapSharing {
			d.maps = newMapTable()
			d.bytes = newBytesTable()
			d.times = new(timeTable)
			d.msgs = newMsgTable()
			d.jsonMaps = newMapTable()
			d.jsonMapOffsets = jsonMapFields(p)
		}
		d.share = &sharing{mu: &d.mu, strs: d.strs, bytes: d.bytes, times: d.times, msgs: d.msgs}
		if d.maps != nil {
			d.share.maps = new([sharedMapSlots]sharedMapRef)
			d.share.tables = []*mapTable{d.maps, d.jsonMaps}
		}
	}
	if p != t {
		sh := &shadower{done: map[shadowKey]reflect.Type{}}
		var err error
		if d.json, err = sh.shadow(p, t, ""); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// noProtobuf is the error of decoding the protobuf of a T that has none.
func (d *Decoder[PP]) noProtobuf() error {
	return &DecodeError{Err: fmt.Errorf("%w: %s has no protobuf encoding", ErrMalformed, d.tname)}
}

// recoverMalformed, deferred, makes a panic of a type's own Unmarshal the
// error *err of the decoding it happened in.
func recoverMalformed(err *error) {
	if r := recover(); r != nil {
		*err = &DecodeError{Err: fmt.Errorf("%w: %v", ErrMalformed, r)}
	}
}

// cast returns the object at p as a PP.
func (d *Decoder[PP]) cast(p unsafe.Pointer) PP {
	if d.tab == nil {
		return *(*PP)(unsafe.Pointer(&p))
	}
	if p == nil {
		var zero PP
		return zero
	}
	w := [2]unsafe.Pointer{d.tab, p}
	return *(*PP)(unsafe.Pointer(&w))
}

// pointerOf returns the address x points to: cast's inverse. A PP holding
// a value of another type than *P is nil here.
func (d *Decoder[PP]) pointerOf(x PP) unsafe.Pointer {
	if d.tab == nil {
		return *(*unsafe.Pointer)(unsafe.Pointer(&x))
	}
	if w := (*[2]unsafe.Pointer)(unsafe.Pointer(&x)); w[0] == d.tab {
		return w[1]
	}
	return nil
}

// elemPointer returns *P, the type of the objects d decodes.
func (d *Decoder[PP]) elemPointer() reflect.Type { return reflect.PointerTo(d.elem) }

// Protobuf decodes the bare protobuf message of a T (no envelope) into a
// new P.
func (d *Decoder[PP]) Protobuf(b []byte) (PP, error) {
	if d.plan == nil {
		var zero PP
		return zero, d.into(b, nil)
	}
	p := unsafe_New(d.elemType)
	if err := d.into(b, p); err != nil {
		var zero PP
		return zero, err
	}
	return d.cast(p), nil
}

// ProtobufInto decodes the bare protobuf message of a T into p, merging as
// protobuf does: scalars are replaced, repeated fields and maps added to.
// It panics if p is nil, a programming error, rather than write through it.
func (d *Decoder[PP]) ProtobufInto(b []byte, p PP) error {
	ptr := d.pointerOf(p)
	if ptr == nil {
		panic("wire: ProtobufInto a nil " + reflect.PointerTo(d.elem).String())
	}
	return d.into(b, ptr)
}

func (d *Decoder[PP]) into(b []byte, p unsafe.Pointer) error { return d.decodeInto(b, p, nil, false) }

// record decodes b, the encoding of a record put back together, into a
// new P whose strings alias the record's memory where a finds them there.
// With own, the P is for a reader that keeps or changes it: it shares no
// map, FieldsV1 or managedFields time with any other object, as with
// Options.NoMapSharing (its strings, which no one can change, are shared
// all the same).
func (d *Decoder[PP]) record(b []byte, a *aliases, own bool) (PP, error) {
	var zero PP
	if d.plan == nil {
		return zero, d.decodeInto(b, nil, a, own)
	}
	p := unsafe_New(d.elemType)
	if err := d.decodeInto(b, p, a, own); err != nil {
		return zero, err
	}
	return d.cast(p), nil
}

// decodeInto decodes b into the P at p; with a, strings alias the memory
// a maps b to, where they can; with own, sharing nothing but strings (see
// record).
func (d *Decoder[PP]) decodeInto(b []byte, p unsafe.Pointer, a *aliases, own bool) error {
	return d.decodeAround(b, p, a, own, nil, nil)
}

// JSON decodes the JSON encoding of a T into a new P, with the decoder the
// API machinery uses (case-sensitive field names, integers kept as
// integers).
func (d *Decoder[PP]) JSON(b []byte) (PP, error) { return d.decodeJSON(b, true) }

// decodeJSON is JSON; without share, the object shares no map or FieldsV1
// with any other (see record).
func (d *Decoder[PP]) decodeJSON(b []byte, share bool) (PP, error) {
	var zero PP
	if !d.decodedJSON.Load() {
		d.decodedJSON.Store(true)
	}
	p := reflect.New(d.elem).UnsafePointer()
	target := reflect.NewAt(d.elem, p).Interface()
	if d.json != nil {
		target = reflect.NewAt(d.json, p).Interface()
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(b, target); err != nil {
		return zero, &DecodeError{Err: malformed(err)}
	}
	// The options the protobuf plan applies as it decodes, applied to the
	// object's own metadata (not to nested ones, such as a template's).
	if d.meta >= 0 && d.opts.Annotations != nil {
		m := (*Meta[struct{}])(unsafe.Add(p, d.meta))
		m.Annotations = d.keptAnnotations(m.Annotations)
	}
	if d.objectMeta >= 0 {
		m := (*metav1.ObjectMeta)(unsafe.Add(p, d.objectMeta))
		if d.opts.Annotations != nil {
			m.Annotations = d.keptAnnotations(m.Annotations)
		}
		if d.opts.DropManagedFields {
			m.ManagedFields = nil
		}
	}
	if !share {
		return d.cast(p), nil
	}
	if d.jsonMaps != nil && len(d.jsonMapOffsets) > 0 {
		d.mu.Lock()
		for _, off := range d.jsonMapOffsets {
			m := (*map[string]string)(unsafe.Add(p, off))
			before := *m
			if d.jsonMaps.share(m); len(*m) > 0 && !samePtr(before, *m) {
				d.share.noteShared(*(*unsafe.Pointer)(unsafe.Pointer(m)), stringMapType)
			}
		}
		d.mu.Unlock()
	}
	if d.bytes != nil && d.objectMeta >= 0 {
		d.shareFields((*metav1.ObjectMeta)(unsafe.Add(p, d.objectMeta)))
	}
	return d.cast(p), nil
}

// shareFields replaces the FieldsV1 bytes of m's managedFields, decoded
// from JSON, by equal ones seen recently, or remembers them.
func (d *Decoder[PP]) shareFields(m *metav1.ObjectMeta) {
	if len(m.ManagedFields) == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range m.ManagedFields {
		if f := m.ManagedFields[i].FieldsV1; f != nil && len(f.GetRawBytes()) > 0 {
			//lint:ignore SA1019 sharing sets the slice itself; SetRawBytes would copy it
			f.Raw = d.bytes.get(f.GetRawBytes())
		}
	}
}

// keptAnnotations removes from m the annotations opts.Annotations does not
// keep, and returns it, nil if empty.
func (d *Decoder[PP]) keptAnnotations(m map[string]string) map[string]string {
	for k := range m {
		if k != initialEventsEnd && !d.opts.Annotations(k) {
			delete(m, k)
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// objectMetaOffset returns the offset in p of its embedded
// metav1.ObjectMeta, or -1.
func objectMetaOffset(p reflect.Type) int {
	if f, ok := p.FieldByName("ObjectMeta"); ok && f.Type == reflect.TypeFor[metav1.ObjectMeta]() && len(f.Index) == 1 {
		return int(f.Offset)
	}
	return -1
}

// jsonMapFields returns the offsets in p of the labels and annotations of
// its metadata: an embedded metav1.ObjectMeta's, or its Meta's.
func jsonMapFields(p reflect.Type) []uintptr {
	var base uintptr
	var meta reflect.Type
	if off := metaOffset(p); off >= 0 {
		base, meta = uintptr(off), reflect.TypeFor[Meta[struct{}]]()
	} else if off := objectMetaOffset(p); off >= 0 {
		base, meta = uintptr(off), reflect.TypeFor[metav1.ObjectMeta]()
	} else {
		return nil
	}
	var out []uintptr
	for _, name := range []string{"Labels", "Annotations"} {
		if f, ok := meta.FieldByName(name); ok && f.Type == stringMapType {
			out = append(out, base+f.Offset)
		}
	}
	return out
}
