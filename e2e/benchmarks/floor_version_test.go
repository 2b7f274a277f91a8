package benchmarks

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// eventVersion reads the resource version of a watch event's object from a frame as the server
// writes it (a metav1.WatchEvent whose object is the protobuf envelope of a Pod), beside the
// event type; an ERROR event's Status has no object metadata and is an error.
func TestEventVersion(t *testing.T) {
	frame := func(typ string, obj runtime.Object) []byte {
		t.Helper()
		var body bytes.Buffer
		enc := scheme.Codecs.EncoderForVersion(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), corev1.SchemeGroupVersion)
		if err := enc.Encode(obj, &body); err != nil {
			t.Fatal(err)
		}
		b, err := (&metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: body.Bytes()}}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u", ResourceVersion: "12345"}}
	f := frame("MODIFIED", pod)
	if got, err := eventVersion(f); err != nil || string(got) != "12345" {
		t.Errorf("eventVersion = %q, %v; want 12345", got, err)
	}
	if got := eventType(f); string(got) != "MODIFIED" {
		t.Errorf("eventType = %q; want MODIFIED", got)
	}
	gone := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}
	if got, err := eventVersion(frame("ERROR", gone)); err == nil {
		t.Errorf("eventVersion of an ERROR event = %q; want an error", got)
	}
}
