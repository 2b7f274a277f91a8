package informer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/typedkube/informer/wire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// TestUndecodableListFailsSync: a server that answers a LIST with a body
// the informer cannot decode makes WaitForCacheSync return ErrSyncFailed,
// with package wire and with client-go's codecs alike (whose errors, plain
// text, used to go unrecognised: the wait lasted until its context ended).
func TestUndecodableListFailsSync(t *testing.T) {
	for _, tc := range []struct {
		name        string
		mode        DecodingMode
		contentType string
		body        string
	}{
		{"wire/json", DecodeWire, "application/json", "{not json"},
		{"clientgo/json", DecodeClientGo, "application/json", "{not json"},
		{"clientgo/protobuf", DecodeClientGo, "application/vnd.kubernetes.protobuf", "k8s\x00garbage-garbage"},
		{"clientgo/html", DecodeClientGo, "text/html", "<html>sign in</html>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := syncAgainst(t, tc.contentType, []byte(tc.body), FactoryOptions{Decoding: tc.mode})
			if !errors.Is(err, ErrSyncFailed) {
				t.Errorf("WaitForCacheSync = %v, want ErrSyncFailed for an undecodable LIST", err)
			}
		})
	}
}

// syncAgainst starts a factory with opts and an informer of Pods against a
// server that answers every request with body, of contentType, and returns
// the informer and what the factory's WaitForCacheSync returned within 10
// seconds.
func syncAgainst(t *testing.T, contentType string, body []byte, opts FactoryOptions) (*SharedIndexInformer[*corev1.Pod], error) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	opts.RESTMapper = m
	f, err := NewFactory(&rest.Config{Host: srv.URL}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Shutdown)
	pods, err := For[*corev1.Pod](f)
	if err != nil {
		t.Fatal(err)
	}
	f.Start(t.Context())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = f.WaitForCacheSync(ctx)
	return pods, err
}

// TestUndecodableItemFailsSync: a protobuf LIST whose item holds bytes
// that a field type's own Unmarshal refuses (a metav1.Time cut inside or
// of an illegal wire type, a Quantity that is not one) fails the
// informer's sync at once: WaitForCacheSync returns ErrSyncFailed,
// SyncFailure says why, and Stats count a decode error. Package wire
// passed such errors through unwrapped: "unexpected EOF" was taken for a
// cut connection, the others for no decoding error, and the informer
// retried until the wait's context ended.
func TestUndecodableItemFailsSync(t *testing.T) {
	// A Pod named p created at the given metav1.Time bytes.
	created := func(ts ...byte) []byte {
		meta := append([]byte{1<<3 | 2, 1, 'p', 8<<3 | 2, byte(len(ts))}, ts...)
		return append([]byte{1<<3 | 2, byte(len(meta))}, meta...)
	}
	limited, err := (&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for name, item := range map[string][]byte{
		"timestamp cut inside":        created(1<<3, 0x80), // seconds (1), a varint without its end
		"timestamp illegal wire type": created(3<<3 | 7),
		"quantity not a quantity":     bytes.Replace(limited, []byte("100m"), []byte("1x0m"), 1),
	} {
		t.Run(name, func(t *testing.T) {
			raw := append(binary.AppendUvarint([]byte{1<<3 | 2, 0, 2<<3 | 2}, uint64(len(item))), item...) // PodList{metadata, items}
			u, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Raw: raw}).Marshal()
			if err != nil {
				t.Fatal(err)
			}
			body := append([]byte("k8s\x00"), u...)
			pods, err := syncAgainst(t, "application/vnd.kubernetes.protobuf", body,
				FactoryOptions{Informer: InformerOptions{Reflector: ReflectorOptions{WatchList: WatchListOff}}})
			if !errors.Is(err, ErrSyncFailed) || !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("WaitForCacheSync = %v, want ErrSyncFailed wrapping wire.ErrMalformed", err)
			}
			if err := pods.SyncFailure(); !errors.Is(err, wire.ErrMalformed) {
				t.Errorf("SyncFailure = %v, want wire.ErrMalformed", err)
			}
			if st := pods.Stats(); st.DecodeErrors == 0 {
				t.Errorf("Stats.DecodeErrors = 0 after %d list errors", st.ListErrors)
			}
		})
	}
}
