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
		fromBytes = append(fromBytes, copyItem(item))
		return nil
	})
	// A reader that returns one byte at a time finds every boundary.
	lmStream, errStream = ListItemsFrom(bufio.NewReaderSize(&oneByte{body}, 16), func(item []byte) error {
		fromStream = append(fromStream, copyItem(item))
		return nil
	})
	return
}

// copyItem copies an item's bytes, never nil: an empty item is empty bytes whichever reader
// handed it over, one as nil and the other not (bytes.Clone keeps that difference).
func copyItem(item []byte) []byte { return append([]byte{}, item...) }

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

// FuzzListItemsFrom: never a panic; every error wraps ErrTruncated or
// ErrMalformed (ListItemsFrom's reader ending mid-body aside, which is
// io.ErrUnexpectedEOF); whenever both readers accept the bytes, they read
// the same list, and so does client-go's decoder, unless an item's own
// bytes are bad (which the caller's decoding of the item reports).
func FuzzListItemsFrom(f *testing.F) {
	f.Add(listBody(f, 0))
	f.Add(listBody(f, 3))
	f.Add([]byte("k8s\x00"))
	f.Add(listOf(f, limitedPod(f), limitedPod(f)))
	f.Fuzz(func(t *testing.T, body []byte) {
		a, b, lma, lmb, ea, eb := collect(body)
		checkDecodeError(t, "ListItems", ea)
		if !errors.Is(eb, io.ErrUnexpectedEOF) {
			checkDecodeError(t, "ListItemsFrom", eb)
		}
		if ea != nil || eb != nil {
			return
		}
		if !cmp.Equal(a, b) || !cmp.Equal(lma, lmb) {
			t.Fatalf("the readers differ: %d items %+v, %d items %+v", len(a), lma, len(b), lmb)
		}
		var u runtime.Unknown
		if err := u.Unmarshal(body[len(protobufMagic):]); err != nil {
			t.Fatalf("the readers accept an envelope the generated decoder refuses: %v", err)
		}
		if (u.Kind != "" && u.Kind != "PodList") || (u.APIVersion != "" && u.APIVersion != "v1") {
			return // client-go decodes the kind the envelope names; the readers' caller knows what it asked for
		}
		want, _, err := clientGoList(body)
		if err != nil {
			for _, item := range a {
				if new(corev1.Pod).Unmarshal(item) != nil {
					return
				}
			}
			t.Fatalf("client-go's decoder refuses a list the readers accept: %v", err)
		}
		if !cmp.Equal(lma, want.ListMeta) || len(a) != len(want.Items) {
			t.Fatalf("the readers read %d items and %+v, client-go %d and %+v", len(a), lma, len(want.Items), want.ListMeta)
		}
		for i, item := range a {
			got := &corev1.Pod{}
			if err := got.Unmarshal(item); err != nil {
				t.Fatalf("item %d: %v, which client-go's decoder accepts", i, err)
			}
			if d := cmp.Diff(&want.Items[i], got); d != "" {
				t.Fatalf("item %d differs from client-go's (-client-go +ours):\n%s", i, d)
			}
		}
	})
}
