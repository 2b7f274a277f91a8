package gunzip

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/typedkube/informer/internal/testobj"
)

// events are n realistic Pods' protobuf, each compressed as a member of
// its own, as the apiserver writes a watch-list stream.
func events(b *testing.B, n int) (stream []byte, size int) {
	var parts [][]byte
	for _, p := range testobj.RealisticPods("default", n, 4) {
		pb, err := p.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		parts = append(parts, pb)
		size += len(pb)
	}
	return gz(b, gzip.DefaultCompression, parts...), size
}

// BenchmarkInflate: a stream of realistic Pods' events, inflated by this
// package and by compress/gzip (impl=std), both through an io.Reader
// of the stream's bytes.
func BenchmarkInflate(b *testing.B) {
	stream, size := events(b, 20)
	p := make([]byte, 32<<10)
	drain := func(r io.Reader) {
		for {
			if _, err := r.Read(p); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				return
			}
		}
	}
	b.Run("impl=ours", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			drain(NewReader(bytes.NewReader(stream)))
		}
	})
	b.Run("impl=std", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			r, err := gzip.NewReader(bytes.NewReader(stream))
			if err != nil {
				b.Fatal(err)
			}
			drain(r)
		}
	})
}
