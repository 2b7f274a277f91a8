package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// listBody is the protobuf body of a LIST response of pods, as the API
// server sends it.
func listBody(t testing.TB, n int) []byte {
	t.Helper()
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "12345", Continue: "next"}}
	for i := range n {
		list.Items = append(list.Items, *benchPod(i))
	}
	raw, err := list.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	u := &runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Raw: raw, ContentType: "application/vnd.kubernetes.protobuf"}
	b, err := u.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(append([]byte{}, protobufMagic...), b...)
}

// collect runs both readers of list bodies over body.
func collect(body []byte) (fromBytes, fromStream [][]byte, lmBytes, lmStream metav1.ListMeta, errBytes, errStream error) {
	lmBytes, errBytes = ListItems(body, func(item []byte) error {
		fromBytes = append(fromBytes, bytes.Clone(item))
		return nil
	})
	// A reader that returns one byte at a time finds every boundary.
	lmStream, errStream = ListItemsFrom(bufio.NewReaderSize(&oneByte{body}, 16), func(item []byte) error {
		fromStream = append(fromStream, bytes.Clone(item))
		return nil
	})
	return
}

type oneByte struct{ b []byte }

func (r *oneByte) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0], r.b = r.b[0], r.b[1:]
	return 1, nil
}

// ListItemsFrom reads what ListItems reads, item by item; a body cut short
// is an error, never a shorter list.
func TestListItemsFrom(t *testing.T) {
	body := listBody(t, 20)
	a, b, lma, lmb, ea, eb := collect(body)
	if ea != nil || eb != nil {
		t.Fatalf("errors: %v, %v", ea, eb)
	}
	if len(a) != 20 || !cmp.Equal(a, b) || !cmp.Equal(lma, lmb) || lmb.ResourceVersion != "12345" || lmb.Continue != "next" {
		t.Fatalf("ListItemsFrom read %d items and %+v, want the %d items and %+v of ListItems", len(b), lmb, len(a), lma)
	}
	small := listBody(t, 3)
	whole, _, _, _, _, _ := collect(small)
	for n := range len(small) {
		_, got, _, _, _, err := collect(small[:n])
		switch {
		case err == nil && !cmp.Equal(got, whole):
			// Cut after the list, in the envelope's trailing fields, a
			// body still holds the whole list; cut before, never a part.
			t.Fatalf("a body cut at %d of %d bytes read %d items without error", n, len(small), len(got))
		case err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrMalformed):
			t.Fatalf("a body cut at %d: %v, want io.ErrUnexpectedEOF or ErrMalformed", n, err)
		}
	}
	if _, err := ListItemsFrom(bufio.NewReader(bytes.NewReader([]byte("{\"kind\":\"PodList\"}"))), nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("a JSON body: %v, want ErrMalformed", err)
	}
}

// FuzzListItemsFrom: never a panic, and whenever both readers accept the
// bytes, they read the same list.
func FuzzListItemsFrom(f *testing.F) {
	f.Add(listBody(f, 0))
	f.Add(listBody(f, 3))
	f.Fuzz(func(t *testing.T, body []byte) {
		a, b, lma, lmb, ea, eb := collect(body)
		if ea != nil || eb != nil {
			return
		}
		if !cmp.Equal(a, b) || !cmp.Equal(lma, lmb) {
			t.Fatalf("the readers differ: %d items %+v, %d items %+v", len(a), lma, len(b), lmb)
		}
	})
}
