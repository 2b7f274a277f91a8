package informer

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
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
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			m := meta.NewDefaultRESTMapper(nil)
			m.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
			f, err := NewFactory(&rest.Config{Host: srv.URL}, FactoryOptions{RESTMapper: m, Decoding: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Shutdown()
			if _, err := For[*corev1.Pod](f); err != nil {
				t.Fatal(err)
			}
			f.Start(t.Context())
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if _, err := f.WaitForCacheSync(ctx); !errors.Is(err, ErrSyncFailed) {
				t.Errorf("WaitForCacheSync = %v, want ErrSyncFailed for an undecodable LIST", err)
			}
		})
	}
}
