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
// KB), ConfigMaps of about 300 bytes, or the small Pods of the e2e cold
// start (testobj.BenchPod, about 1.3 KB).
func events(b *testing.B, n int, kind string) (stream []byte, size int) {
	var realistic []*corev1.Pod
	if kind != "smallpods" {
		realistic = testobj.RealisticPods("default", n, 4)
	}
	var parts [][]byte
	for i := range n {
		var pb []byte
		var err error
		switch kind {
		case "configmaps":
			p := realistic[i]
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, ResourceVersion: fmt.Sprint(1000 + i)},
				Data: map[string]string{"config": strings.Repeat(p.Name, 8)}}
			pb, err = cm.Marshal()
		case "smallpods":
			pb, err = testobj.BenchPod(i, 4).Marshal()
		default:
			pb, err = realistic[i].Marshal()
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
// bytes; ns/event is per member. The small Pods' stream is long (1,000
// members), as a cold start's is, so that making the reader counts for
// little.
func BenchmarkInflate(b *testing.B) {
	for _, w := range []struct {
		kind string
		n    int
	}{{"pods", 20}, {"configmaps", 20}, {"smallpods", 1000}} {
		b.Run("events="+w.kind, func(b *testing.B) { inflate(b, w.kind, w.n) })
	}
}

func inflate(b *testing.B, kind string, n int) {
	stream, size := events(b, n, kind)
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
