package informer

import (
	"context"

	"github.com/typedkube/informer/wire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// compactMode is how a test's informer keeps its cache.
type compactMode int

const (
	notCompact     compactMode = iota
	compactObjects             // a compact store, written as objects
	compactRecords             // a compact store, listed as records (recordListWatch)
)

func (m compactMode) String() string {
	return [...]string{"plain", "compact=objects", "compact=records"}[m]
}

// recordListWatch lists as the source a Factory makes for a compact
// informer does: each page's objects as records of their protobuf, with
// their labels, the record already cached reused for an object whose
// resourceVersion has not changed.
type recordListWatch struct {
	ListerWatcher[*corev1.Pod]
	codec *wire.Compact[*corev1.Pod]
	cache func() *Indexer[*corev1.Pod] // the informer's cache
}

func newRecordListWatch(lw ListerWatcher[*corev1.Pod], cache func() *Indexer[*corev1.Pod]) *recordListWatch {
	return &recordListWatch{ListerWatcher: lw, codec: wire.NewCompact(podDecoder(), wire.DecodedCacheSize), cache: cache}
}

// recordCodecOf returns the codec of lw if it is a recordListWatch, so that
// the informer's store shares it.
func recordCodecOf(lw ListerWatcher[*corev1.Pod]) recordCodec[*corev1.Pod] {
	if r, ok := lw.(*recordListWatch); ok {
		return r.codec
	}
	return nil
}

func (lw *recordListWatch) List(ctx context.Context, opts metav1.ListOptions) (*ListPage[*corev1.Pod], error) {
	page, err := lw.ListerWatcher.List(ctx, opts)
	if err != nil || page == nil {
		return page, err
	}
	out := &ListPage[*corev1.Pod]{ListMeta: page.ListMeta, encoded: encodedList[*corev1.Pod]{codec: lw.codec}}
	for _, p := range page.Items {
		key, err := MetaNamespaceKeyFunc(p)
		if err != nil {
			return nil, err
		}
		if rec := lw.cache().recordOf(key); rec != nil {
			if same, err := lw.codec.HasResourceVersion(rec, []byte(p.ResourceVersion)); same && err == nil {
				out.encoded.items = append(out.encoded.items, encoded[*corev1.Pod]{key: key, rec: rec})
				continue
			}
		}
		b, err := p.Marshal()
		if err != nil {
			return nil, err
		}
		rec, err := lw.codec.Protobuf(b)
		if err != nil {
			return nil, err
		}
		lbls, err := lw.codec.ProtobufLabels(b)
		if err != nil {
			return nil, err
		}
		out.encoded.items = append(out.encoded.items, encoded[*corev1.Pod]{key: key, rec: rec, labels: lbls})
	}
	return out, nil
}
