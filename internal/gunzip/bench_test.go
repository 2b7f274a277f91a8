package gunzip

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedkube/informer/internal/testobj"
)

// events are n objects' protobuf, each compressed as a member of its
// own, as the apiserver writes a watch-list stream: realistic Pods (11
// KB), or ConfigMaps of about 300 bytes.
func events(b *testing.B, n int, small bool) (stream []byte, size int) {
	var parts [][]byte
	for i, p := range testobj.RealisticPods("default", n, 4) {
		var pb []byte
		var err error
		if small {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, ResourceVersion: fmt.Sprint(1000 + i)},
				Data: map[string]string{"config": strings.Repeat(p.Name, 8)}}
			pb, err = cm.Marshal()
		} else {
			pb, err = p.Marshal()
		}
		if err != nil {
			b.Fatal(err)
		}
		parts = append(parts, pb)
		size += len(pb)
	}
	return gz(b, gzip.DefaultCompression, parts...), size
}

// BenchmarkInflate: a stream of events, inflated by this package and by
// compress/gzip (impl=std), both through an io.Reader of the stream's
// bytes; events/op is the stream's members.
func BenchmarkInflate(b *testing.B) {
	for _, small := range []bool{false, true} {
		name := "events=pods"
		if small {
			name = "events=configmaps"
		}
		b.Run(name, func(b *testing.B) { inflate(b, small) })
	}
}

func inflate(b *testing.B, small bool) {
	const n = 20
	stream, size := events(b, n, small)
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
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
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
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
	})
}
