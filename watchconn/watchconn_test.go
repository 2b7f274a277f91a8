package watchconn

import (
	"bufio"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"k8s.io/client-go/rest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server answers with the protocol each request came over; a request with
// stream=1 gets a chunked body of three lines, flushed one by one.
func server(t *testing.T) (*httptest.Server, *rest.Config) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("stream") == "" {
			fmt.Fprint(w, r.Proto)
			return
		}
		for i := range 3 {
			fmt.Fprintf(w, "%s %d\n", r.Proto, i)
			w.(http.Flusher).Flush()
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return srv, &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

func TestTransportSendsWatchesOverHTTP1(t *testing.T) {
	srv, cfg := server(t)
	shared, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Transport(cfg, shared, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.CloseIdleConnections)
	client := &http.Client{Transport: s}
	for _, tc := range []struct {
		method, query, want string
	}{
		{http.MethodGet, "", "HTTP/2.0"},
		{http.MethodGet, "watch=true", "HTTP/1.1"},
		{http.MethodGet, "watch=1", "HTTP/1.1"},
		{http.MethodGet, "watch=True&sendInitialEvents=true", "HTTP/1.1"},
		{http.MethodGet, "watch=false", "HTTP/2.0"},
		{http.MethodGet, "watch=FALSE", "HTTP/2.0"},
		{http.MethodGet, "watch=0", "HTTP/2.0"},
		{http.MethodGet, "watch=0&watch=1", "HTTP/2.0"}, // the apiserver reads the first
		{http.MethodGet, "watching=true", "HTTP/2.0"},
		// The apiserver takes any other value for true, an empty one too.
		{http.MethodGet, "watch=", "HTTP/1.1"},
		{http.MethodGet, "watch=yes", "HTTP/1.1"},
		{http.MethodPost, "watch=true", "HTTP/2.0"},
		{http.MethodDelete, "watch=true", "HTTP/2.0"},
	} {
		req, err := http.NewRequest(tc.method, srv.URL+"/api/v1/pods?"+tc.query, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := IsWatch(req); got != (tc.want == "HTTP/1.1") {
			t.Errorf("IsWatch(%s ?%s) = %t", tc.method, tc.query, got)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if string(body) != tc.want {
			t.Errorf("%s ?%s went over %s, want %s", tc.method, tc.query, body, tc.want)
		}
	}
}

// A watch stream is read as it comes, and closing it early ends its
// connection: nothing of it outlives the test (goleak, TestMain).
func TestTransportStreamsAndStops(t *testing.T) {
	srv, cfg := server(t)
	s, err := Transport(cfg, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.CloseIdleWatchConnections)
	resp, err := (&http.Client{Transport: s}).Get(srv.URL + "/api/v1/pods?watch=true&stream=1")
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if line != "HTTP/1.1 0\n" {
		t.Errorf("first line %q, want %q", line, "HTTP/1.1 0\n")
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestTransportRefuses(t *testing.T) {
	_, cfg := server(t)
	for name, c := range map[string]*rest.Config{
		"nil": nil,
		"its own Transport": func() *rest.Config {
			c := rest.CopyConfig(cfg)
			c.Transport = http.DefaultTransport
			return c
		}(),
		"HTTP/2 only": func() *rest.Config {
			c := rest.CopyConfig(cfg)
			c.TLSClientConfig.NextProtos = []string{"h2"}
			return c
		}(),
	} {
		if _, err := Transport(c, nil, Options{}); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: err %v, want ErrUnsupported", name, err)
		} else if !strings.HasPrefix(err.Error(), "watchconn: ") {
			t.Errorf("%s: err %q does not say where it came from", name, err)
		}
	}
	c := rest.CopyConfig(cfg)
	c.TLSClientConfig.NextProtos = []string{"h2", "http/1.1"}
	s, err := Transport(c, nil, Options{})
	if err != nil {
		t.Fatalf("h2 and http/1.1 offered: %v", err)
	}
	s.CloseIdleConnections()
}
