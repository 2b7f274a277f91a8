package wire

import (
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// gzipWatchServer serves a JSON watch of one ConfigMap event, compressed
// as the apiserver compresses: a watch-list request (sendInitialEvents)
// from a client that accepts gzip, and nothing else.
func gzipWatchServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev := `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"5"}}}` + "\n"
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("sendInitialEvents") == "true" && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			fmt.Fprint(gz, ev)
			gz.Close()
			return
		}
		fmt.Fprint(w, ev)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRecordEncoding: a watch whose request went through RecordEncoding
// says it is better replaced after its initial events exactly when the
// server compressed it, and decodes the same events either way; without
// RecordEncoding it never says so. A client that does not accept gzip gets
// nothing compressed.
func TestRecordEncoding(t *testing.T) {
	srv := gzipWatchServer(t)
	dec, err := NewDecoder[*corev1.ConfigMap, *corev1.ConfigMap](Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		record      bool
		noGzip      bool
		watchList   bool
		wantReplace bool
	}{
		{name: "watch-list, recorded", record: true, watchList: true, wantReplace: true},
		{name: "plain watch, recorded", record: true},
		{name: "watch-list, not recorded", watchList: true},
		{name: "watch-list, compression disabled", record: true, noGzip: true, watchList: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.DisableCompression = tc.noGzip
			t.Cleanup(tr.CloseIdleConnections)
			var rt http.RoundTripper = tr
			if tc.record {
				rt = RecordEncoding(rt)
			}
			cfg := &rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{
				GroupVersion:         &schema.GroupVersion{Version: "v1"},
				NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
			}, APIPath: "/api"}
			client, err := rest.RESTClientForConfigAndClient(cfg, &http.Client{Transport: rt})
			if err != nil {
				t.Fatal(err)
			}
			src := NewSource(client, "configmaps", "ns", dec, SourceOptions[*corev1.ConfigMap]{})
			opts := metav1.ListOptions{}
			if tc.watchList {
				opts.SendInitialEvents = new(bool)
				*opts.SendInitialEvents = true
			}
			w, err := src.Watch(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			got := w.(interface{ ReplaceAfterInitialEvents() bool }).ReplaceAfterInitialEvents()
			if got != tc.wantReplace {
				t.Errorf("ReplaceAfterInitialEvents() = %v, want %v", got, tc.wantReplace)
			}
			ev, ok := w.(interface{ NextEvent() (watch.Event, bool) }).NextEvent()
			if !ok || ev.Type != watch.Added {
				t.Fatalf("first event %v, %v; want ADDED", ev.Type, ok)
			}
			if cm := ev.Object.(*corev1.ConfigMap); cm.Name != "a" || cm.ResourceVersion != "5" {
				t.Errorf("decoded %s/%s at %s, want ns/a at 5", cm.Namespace, cm.Name, cm.ResourceVersion)
			}
		})
	}
}
