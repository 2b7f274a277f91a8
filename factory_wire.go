package informer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/typedkube/informer/wire"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// DecodingMode chooses how the informers of a Factory made by NewFactory
// decode the API server's responses into typed objects.
type DecodingMode int

const (
	// DecodeWire, the default, decodes with package wire, straight from
	// the response bytes into each object, which equals client-go's
	// decoding under go-cmp (checked on every built-in type): a LIST's
	// items are decoded one by one into objects of their own (no list to
	// copy them out of), short repeated strings are shared
	// (FactoryOptions.Wire), and on a relist an object whose namespace,
	// name and resourceVersion, read from the bytes, match the cached
	// object's is not decoded at all: the cached object is used, and its
	// handlers' OnUpdate receives the same pointer twice. An update or a
	// delete (a MODIFIED or DELETED event) of an object the cache holds
	// decodes only the top-level fields whose bytes changed, besides the
	// metadata: a Pod whose status changed takes the cached Pod's spec,
	// sharing what it points to (see wire.SourceOptions.Previous; a
	// compact store's cached object is the one its codec holds decoded,
	// if any). An informer with
	// a transform (ForOptions.Transform, FactoryOptions.DefaultTransform, or
	// one set with SetTransform before it runs) decodes every object, since
	// its cached objects are the transform's output, and shares no maps
	// between them, since a transform may edit them in place. A type whose
	// Go struct package wire cannot mirror falls back to DecodeClientGo.
	DecodeWire DecodingMode = iota
	// DecodeClientGo decodes with client-go's codecs and the factory's
	// scheme, as client-go's informers do.
	DecodeClientGo
)

// wireListWatch lists and watches through a wire.Source, opened at its
// first request.
type wireListWatch[T Object] struct {
	src func() *wire.Source[T]
	d   *wireDecoding[T]
	// compact, when set, is the codec of the informer's compact store:
	// List then hands over a protobuf LIST's items as its records, their
	// bytes kept as they came (see listRecords), unless the informer has a
	// transform once d settles (a transform reads objects).
	compact *wire.Compact[T]
}

func (lw *wireListWatch[T]) List(ctx context.Context, opts metav1.ListOptions) (*ListPage[T], error) {
	if lw.compact != nil {
		if _, reuse := lw.d.settle(); reuse {
			return lw.listRecords(ctx, opts)
		}
	}
	items, lm, err := lw.src().List(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &ListPage[T]{Items: items, ListMeta: lm}, nil
}

// listRecords lists one page for a compact store: each item of a protobuf
// response becomes a record of its bytes, checked to decode, with its
// labels read for the label index; an object whose namespace, name and
// resourceVersion match a cached record's reuses that record (as
// DecodeWire reuses objects). A JSON response's items are decoded.
func (lw *wireListWatch[T]) listRecords(ctx context.Context, opts metav1.ListOptions) (*ListPage[T], error) {
	page := &ListPage[T]{encoded: encodedList[T]{codec: lw.compact}}
	if opts.Limit > 0 && opts.Limit <= maxPrealloc {
		page.encoded.items = make([]encoded[T], 0, opts.Limit)
	}
	var cache *Indexer[T]
	if inf := lw.d.inf.Load(); inf != nil {
		cache = inf.GetIndexer()
	}
	var buf []byte
	items, lm, err := lw.src().ListRaw(ctx, opts, func(b []byte) error {
		ref, err := wire.PeekProtobufMeta(b)
		if err != nil {
			return err
		}
		var e encoded[T]
		if e, buf, err = lw.record(b, ref, cache, buf); err != nil {
			return err
		}
		page.encoded.items = append(page.encoded.items, e)
		return nil
	})
	if err != nil || lm.Continue == "" {
		// The list ends: what the codec remembered to validate its
		// items, over its pages, is let go.
		lw.compact.EndList()
	}
	if err != nil {
		return nil, err
	}
	page.Items, page.ListMeta = items, lm
	return page, nil
}

// record returns the entry of b, the bare protobuf message of a listed or
// streamed object whose metadata is ref, for a compact store: a record of
// its bytes, checked to decode (the check remembers what it found valid
// until the codec's EndList), with its labels; or the record cache (if not
// nil) holds of the same namespace, name and resourceVersion. buf is
// scratch for the key, returned grown.
func (lw *wireListWatch[T]) record(b []byte, ref wire.ObjectRef, cache *Indexer[T], buf []byte) (encoded[T], []byte, error) {
	buf = appendMetaNamespaceKey(buf[:0], ref.Namespace, ref.Name)
	key := string(buf)
	if cache != nil && len(ref.ResourceVersion) > 0 {
		if rec := cache.recordOf(key); rec != nil {
			if same, err := lw.compact.HasResourceVersion(rec, ref.ResourceVersion); same && err == nil {
				return encoded[T]{key: key, rec: rec}, buf, nil
			}
		}
	}
	rec, err := lw.compact.Protobuf(b)
	if err != nil {
		return encoded[T]{}, buf, err
	}
	lbls, err := lw.compact.ProtobufLabels(b)
	if err != nil {
		return encoded[T]{}, buf, err
	}
	return encoded[T]{key: key, rec: rec, labels: lbls}, buf, nil
}

// initialRecord is the Initial of a compact store's source (see
// wire.SourceOptions.Initial): the object of a watch-list stream's initial
// event, from its bytes b, is a streamedRecord, made as a listed item's
// record is, which the Reflector collects as it collects objects; an object
// without a name is decoded, for the Reflector to report.
func (lw *wireListWatch[T]) initialRecord(b []byte) (runtime.Object, error) {
	ref, err := wire.PeekProtobufMeta(b)
	if err != nil || len(ref.Name) == 0 {
		return nil, nil
	}
	var cache *Indexer[T]
	if inf := lw.d.inf.Load(); inf != nil {
		cache = inf.GetIndexer()
	}
	var buf [128]byte
	e, _, err := lw.record(b, ref, cache, buf[:0])
	if err != nil {
		return nil, err
	}
	return &streamedRecord[T]{e: e, codec: lw.compact}, nil
}

func (lw *wireListWatch[T]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return lw.src().Watch(ctx, opts)
}

// IsWatchListSemanticsUnSupported returns false, as for restListWatch: a
// compact store's source brings the initial objects of a watch-list stream
// as records (see initialRecord).
func (lw *wireListWatch[T]) IsWatchListSemanticsUnSupported() bool { return false }

// newWireListWatch returns a ListerWatcher of mapping's resource in sc,
// decoding as d settles at its first request, and listing records with
// compact, if not nil. When objects is set, the informer's store keeps
// decoded objects (not a compact store's records), which an update may
// share unchanged parts with (wire.SourceOptions.Previous).
func newWireListWatch[T Object](f *Factory, mapping *meta.RESTMapping, sc scope, h how[T], d *wireDecoding[T], compact *wire.Compact[T], objects bool) (ListerWatcher[T], error) {
	client, err := f.restClient(mapping, h.protobuf)
	if err != nil {
		return nil, err
	}
	opts := wire.SourceOptions[T]{Protobuf: h.protobuf, Tweak: sc.tweak}
	switch {
	case h.listAccept != "":
		// The server's view (ForMetadata's), asked for whatever the
		// config's content types, as client-go's metadata client does.
		opts.Accept, opts.WatchAccept = h.listAccept, h.watchAccept
	case h.protobuf:
		// As for client-go's typed clients: the config's content types
		// apply as given when it sets them.
		if opts.Accept = f.cfg.AcceptContentTypes; opts.Accept == "" {
			opts.Accept = f.cfg.ContentType
		}
	}
	lw := &wireListWatch[T]{d: d, compact: compact}
	lw.src = sync.OnceValue(func() *wire.Source[T] {
		dec, reuse := d.settle()
		if reuse {
			opts.Reuse = d.cached
			if objects {
				opts.Previous = d.previous
			}
			if compact != nil {
				// The objects are the store's as decoded: their records
				// are made of the watch's bytes, and the codec holds a
				// bounded number of them, which an update may share
				// unchanged parts with while it does.
				opts.Decoded = compact.Offer
				opts.Previous = d.held(compact)
				opts.WeakPrevious = true
				opts.Initial = lw.initialRecord
			}
		}
		return wire.NewSource(client, mapping.Resource.Resource, sc.namespace, dec, opts)
	})
	return lw, nil
}

// restClient returns a REST client for the group and version of mapping
// that asks for protobuf with JSON as a fallback when protobuf is true
// (and the factory's *rest.Config sets no content types), and for JSON
// only otherwise.
func (f *Factory) restClient(mapping *meta.RESTMapping, protobuf bool) (*rest.RESTClient, error) {
	gv := mapping.GroupVersionKind.GroupVersion()
	cfg := rest.CopyConfig(f.cfg)
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	if gv.Group == "" {
		cfg.APIPath = "/api"
	}
	cfg.NegotiatedSerializer = f.codecs.WithoutConversion()
	switch {
	case !protobuf:
		cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	case cfg.ContentType == "" && cfg.AcceptContentTypes == "":
		// As client-go's typed clients do (gentype.PrefersProtobuf).
		cfg.ContentType = runtime.ContentTypeProtobuf
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	if err := rest.SetKubernetesDefaults(cfg); err != nil {
		return nil, err
	}
	client, err := rest.RESTClientForConfigAndClient(cfg, f.http)
	if err != nil {
		return nil, fmt.Errorf("informer: REST client for %v: %w", gv, err)
	}
	return client, nil
}

// wireDecoding is how one informer of the factory decodes with package
// wire. What its objects may share is settled at its first request, when
// its transform is final (ForOptions.Transform, the factory's default, or
// one set with SetTransform before it runs): without a transform, objects
// share equal label and annotation maps, and a relist reuses the cached
// objects it finds unchanged; a transform may edit objects in place, and
// must not get its own output again, so with one, neither.
type wireDecoding[T Object] struct {
	inf        atomic.Pointer[SharedIndexInformer[T]] // set once registered
	newDecoder func(wire.Options) (*wire.Decoder[T], error)
	opts       wire.Options // dec's: NoMapSharing if the informer has a transform
	dec        *wire.Decoder[T]
	reuse      bool // the informer has no transform; settled by settle
	once       sync.Once
}

// decoding returns how the informer made with o decodes T with package
// wire, or nil when it does not. A projection always does, and one that
// does not mirror its API type is an error naming the field, before any
// request; For does when the factory decodes with package wire and it can
// decode T.
func decoding[T Object](f *Factory, o ForOptions[T], h how[T]) (*wireDecoding[T], error) {
	if h.decoder == nil || !h.projection && (f.clients != nil || f.opts.Decoding != DecodeWire) {
		return nil, nil
	}
	d, err := newWireDecoding(f, o, h.decoder)
	if err != nil && !h.projection {
		f.opts.Logger.V(2).Info("Decoding with client-go's codecs: package wire cannot decode this type", "type", h.typ.String(), "reason", err.Error())
		return nil, nil
	}
	return d, err
}

// newWireDecoding returns the decoding of an informer made with o, with
// newDecoder, such as wire.NewDecoder[T, T].
func newWireDecoding[T Object](f *Factory, o ForOptions[T], newDecoder func(wire.Options) (*wire.Decoder[T], error)) (*wireDecoding[T], error) {
	d := &wireDecoding[T]{newDecoder: newDecoder, opts: f.opts.Wire, reuse: o.Transform == nil && f.opts.DefaultTransform == nil}
	d.opts.NoMapSharing = d.opts.NoMapSharing || !d.reuse
	var err error
	d.dec, err = newDecoder(d.opts)
	return d, err
}

// settle decides, once, what the informer's objects may share, and returns
// its decoder and whether a relist may reuse cached objects.
func (d *wireDecoding[T]) settle() (*wire.Decoder[T], bool) {
	d.once.Do(func() {
		if inf := d.inf.Load(); inf != nil { // else not given out yet: as made
			d.reuse = !inf.hasTransform()
		}
		if !d.reuse && !d.opts.NoMapSharing { // a transform set after For
			d.opts.NoMapSharing = true
			if dec, err := d.newDecoder(d.opts); err == nil { // as the first one
				d.dec = dec
			}
		}
	})
	return d.dec, d.reuse
}

// previous returns the cached object of ref's namespace and name, for an
// update to share the parts it did not change.
func (d *wireDecoding[T]) previous(ref wire.ObjectRef) (T, bool) {
	s := d.store()
	if s == nil {
		var zero T
		return zero, false
	}
	var buf [128]byte // the key, spelled on the stack for the lookup
	return s.getKeyBytes(appendMetaNamespaceKey(buf[:0], ref.Namespace, ref.Name))
}

// store returns the store of the informer d decodes for, nil if it has
// none yet or an empty one.
func (d *wireDecoding[T]) store() *Store[T] {
	inf := d.inf.Load()
	if inf == nil || inf.GetIndexer().Len() == 0 {
		return nil
	}
	return &inf.GetIndexer().Store
}

// held returns the Previous of a compact store of c's records: the decoded
// object c holds for the record of ref's namespace and name, never decoding
// one.
func (d *wireDecoding[T]) held(c *wire.Compact[T]) func(wire.ObjectRef) (T, bool) {
	return func(ref wire.ObjectRef) (T, bool) {
		var zero T
		s := d.store()
		if s == nil {
			return zero, false
		}
		var buf [128]byte // the key, spelled on the stack for the lookup
		_, rec, ok := lookup(s, appendMetaNamespaceKey(buf[:0], ref.Namespace, ref.Name))
		if !ok || rec == nil {
			return zero, false
		}
		return c.HeldObject(rec)
	}
}

// cached returns the cached object of ref's namespace and name, if it has
// ref's resource version, for a relist to reuse.
func (d *wireDecoding[T]) cached(ref wire.ObjectRef) (T, bool) {
	var zero T
	if len(ref.ResourceVersion) == 0 {
		return zero, false
	}
	obj, ok := d.previous(ref)
	if !ok || obj.GetResourceVersion() != string(ref.ResourceVersion) {
		return zero, false
	}
	return obj, true
}
