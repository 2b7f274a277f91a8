package wire

import (
	"bufio"
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ListRaw lists one page as List does, except that the items of a protobuf
// response are not decoded: each is handed to raw, its bare message, which
// is reused once raw returns (a compact store keeps it as it is, see
// Compact). The items of a JSON response are decoded, as List decodes
// them, and returned. SourceOptions.Reuse is not asked.
func (s *Source[PP]) ListRaw(ctx context.Context, opts metav1.ListOptions, raw func(item []byte) error) ([]PP, metav1.ListMeta, error) {
	stream, err := s.request(&opts).Stream(withEncoding(ctx, new(streamEncoding)))
	if err != nil {
		return nil, metav1.ListMeta{}, err
	}
	defer stream.Close()
	r := bufio.NewReaderSize(stream, 32<<10)
	if head, err := r.Peek(len(protobufMagic)); err == nil && IsProtobuf(head) {
		n := 0
		lm, err := ListItemsFrom(r, func(item []byte) error {
			if err := raw(item); err != nil {
				return fmt.Errorf("list item %d: %w", n, err)
			}
			n++
			return nil
		})
		return nil, lm, err
	}
	return s.listJSON(r)
}
