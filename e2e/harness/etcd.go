package harness

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// etcdServer is an etcd child process with a single member on loopback ports. Its client URL
// also serves etcd's HTTP/JSON gateway for the v3 API, which CompactEtcd uses, so the harness
// needs no etcd client library.
type etcdServer struct {
	proc      *process
	clientURL string       // http://127.0.0.1:port
	http      *http.Client // plain HTTP to clientURL; idle connections closed on stop
}

// startEtcd starts etcd with its data in dataDir and waits until /health reports true, on other
// ports again if its ports were taken before it listened (errPortTaken).
func startEtcd(ctx context.Context, bin, dataDir, logPath string, timeout time.Duration) (*etcdServer, error) {
	return startOnFreePorts(func() (*etcdServer, error) {
		return startEtcdOnce(ctx, bin, dataDir, logPath, timeout)
	}, func() error {
		// What etcd wrote names the ports it was given.
		if err := os.RemoveAll(dataDir); err != nil {
			return fmt.Errorf("harness: etcd data of a start that lost its port: %w", err)
		}
		return nil
	})
}

// startEtcdOnce is one attempt of startEtcd, on ports chosen free.
func startEtcdOnce(ctx context.Context, bin, dataDir, logPath string, timeout time.Duration) (*etcdServer, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	args := []string{
		"--name=harness",
		"--data-dir=" + filepath.Clean(dataDir),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=harness=" + peerURL,
		"--initial-cluster-state=new",
		// Test data need not survive a crash of the machine; fsync would dominate write latency.
		"--unsafe-no-fsync",
		"--log-level=warn",
	}
	proc, err := startProcess("etcd", bin, args, logPath)
	if err != nil {
		return nil, err
	}
	e := &etcdServer{proc: proc, clientURL: clientURL, http: &http.Client{Transport: &http.Transport{}}}
	if err := e.waitHealthy(ctx, timeout); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

// waitHealthy polls /health until etcd reports itself healthy, the process exits or timeout passes.
func (e *etcdServer) waitHealthy(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		last = e.health(ctx)
		if last == nil {
			return nil
		}
		if e.proc.exited() {
			return e.proc.exitedError("healthy")
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("harness: etcd not healthy after %v (last check: %v); last lines of %s:\n%s", timeout, last, e.proc.logPath, e.proc.logTail(30))
		}
	}
}

func (e *etcdServer) health(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.clientURL+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := e.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Health string `json:"health"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("decode /health (status %s): %w", resp.Status, err)
	}
	if body.Health != "true" {
		return fmt.Errorf("/health says %q (status %s)", body.Health, resp.Status)
	}
	return nil
}

// compact reads etcd's current revision and compacts the key-value history up to it, physically
// (the call returns once the old revisions are gone). It returns that revision.
func (e *etcdServer) compact(ctx context.Context) (int64, error) {
	// A range over any key returns the store's current revision in its header.
	var rangeResp struct {
		Header struct {
			Revision string `json:"revision"` // int64 fields are JSON strings in the gateway
		} `json:"header"`
	}
	probeKey := base64.StdEncoding.EncodeToString([]byte("/harness/revision-probe"))
	if err := e.gateway(ctx, "/v3/kv/range", map[string]any{"key": probeKey, "count_only": true}, &rangeResp); err != nil {
		return 0, err
	}
	rev, err := strconv.ParseInt(rangeResp.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("harness: etcd range returned revision %q: %w", rangeResp.Header.Revision, err)
	}
	req := map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}
	if err := e.gateway(ctx, "/v3/kv/compaction", req, nil); err != nil {
		return 0, err
	}
	return rev, nil
}

// gateway POSTs a JSON request to etcd's gRPC gateway and decodes the response into out (if not nil).
func (e *etcdServer) gateway(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("harness: etcd %s: %w", path, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.clientURL+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("harness: etcd %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.http.Do(req)
	if err != nil {
		return fmt.Errorf("harness: etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("harness: etcd %s: read response: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("harness: etcd %s: %s: %s", path, resp.Status, bytes.TrimSpace(data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("harness: etcd %s: decode %q: %w", path, data, err)
		}
	}
	return nil
}

// stop ends etcd (SIGTERM, SIGKILL after a grace period) and closes idle client connections.
func (e *etcdServer) stop() error {
	err := e.proc.stop(20 * time.Second)
	e.http.CloseIdleConnections()
	return err
}
