package harness

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The identities the API server knows, from its static token file.
const (
	// AdminUser is in system:masters: every request is allowed, and API Priority and Fairness
	// exempts it from throttling.
	AdminUser = "harness-admin"
	// UnprivilegedUser has no RBAC binding: beyond discovery and the other rights every
	// authenticated user has, its requests are Forbidden.
	UnprivilegedUser = "harness-unprivileged"
	// ThrottledUser is bound to cluster-admin through RBAC and is not exempt from API Priority and
	// Fairness: its requests go to a priority level of its own, which Server.Throttle closes.
	ThrottledUser = "harness-throttled"
)

// identity is a user of the static token file.
type identity struct {
	user   string
	token  string
	groups []string
}

// newIdentity makes an identity with a random bearer token.
func newIdentity(user string, groups ...string) (identity, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return identity{}, fmt.Errorf("harness: token for %s: %w", user, err)
	}
	return identity{user: user, token: hex.EncodeToString(b), groups: groups}, nil
}

// tokenFileLine renders the identity as a line of kube-apiserver's --token-auth-file (CSV:
// token,user,uid,"group1,group2").
func (id identity) tokenFileLine() string {
	line := id.token + "," + id.user + "," + id.user
	if len(id.groups) > 0 {
		line += `,"` + strings.Join(id.groups, ",") + `"`
	}
	return line + "\n"
}

// apiServer is a kube-apiserver child process. Its command line stays fixed across restarts, so a
// restarted server listens on the same port and reuses the serving certificate in its cert dir.
type apiServer struct {
	bin     string
	args    []string
	logPath string
	url     string // https://127.0.0.1:port
	certDir string
	admin   identity // used to poll /readyz

	proc   *process     // the current process; replaced by restart
	caData []byte       // PEM of apiserver.crt, read once the first process has written it
	probe  *http.Client // verifies the server with caData; set together with caData
}

// apiServerFiles writes what kube-apiserver reads at start into dir and returns the flags that name
// them: the static token file and the service-account signing key pair.
func apiServerFiles(dir string, ids []identity) ([]string, error) {
	var tokens strings.Builder
	for _, id := range ids {
		tokens.WriteString(id.tokenFileLine())
	}
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(tokens.String()), 0o600); err != nil {
		return nil, fmt.Errorf("harness: write token file: %w", err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("harness: service-account key: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("harness: service-account key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("harness: service-account public key: %w", err)
	}
	keyFile := filepath.Join(dir, "sa.key")
	pubFile := filepath.Join(dir, "sa.pub")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, fmt.Errorf("harness: write service-account key: %w", err)
	}
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		return nil, fmt.Errorf("harness: write service-account public key: %w", err)
	}
	return []string{
		"--token-auth-file=" + tokenFile,
		"--service-account-key-file=" + pubFile,
		"--service-account-signing-key-file=" + keyFile,
	}, nil
}

// disableServiceAccountAdmission is the flag that turns the ServiceAccount admission plugin off. A
// list flag given again adds to the list, so the admitting server's command line leaves it out.
const disableServiceAccountAdmission = "--disable-admission-plugins=ServiceAccount"

// apiServerArgs is the kube-apiserver command line, before Options.APIServerArgs.
func apiServerArgs(port int, certDir, etcdURL string, fileFlags []string) []string {
	args := []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		// No --tls-cert-file: the server writes a self-signed apiserver.crt/.key here on its first
		// start and reuses them on restarts; the harness hands apiserver.crt to clients as their CA.
		"--cert-dir=" + certDir,
		"--etcd-servers=" + etcdURL,
		// The harness compacts etcd itself (CompactEtcd), when a test asks for it.
		"--etcd-compaction-interval=0",
		// PodTemplates bypass the watch cache, so their watches and lists read etcd and see
		// CompactEtcd at once (watches of cached resources are served from the cache's own window).
		"--watch-cache-sizes=podtemplates#0",
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.96.0.0/16",
		// No controller manager creates the "default" ServiceAccount, which pods would otherwise
		// need (Server.AdmittingConfig's server runs the plugin).
		disableServiceAccountAdmission,
		// The kubernetes Service's endpoints cannot hold a loopback address.
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
		"--profiling=false",
		// On SIGTERM the server shuts its HTTP server down with a timeout of --request-timeout
		// (60 s), which an open watch uses up, so that stop would kill it after 30 s. With this
		// flag the timeout is 2 s, once the requests in flight (not watches) have drained:
		// RestartAPIServer with watches open takes seconds. Requests that come meanwhile get
		// 429 with Retry-After, as from a server going away behind a load balancer.
		"--shutdown-send-retry-after=true",
	}
	return append(args, fileFlags...)
}

// startAPIServer starts the kube-apiserver mk makes for a port chosen free, and waits until it is
// ready; on other ports again if its port was taken before it listened (errPortTaken).
func startAPIServer(ctx context.Context, timeout time.Duration, mk func(port int) *apiServer) (*apiServer, error) {
	return startOnFreePorts(func() (*apiServer, error) {
		ports, err := freePorts(1)
		if err != nil {
			return nil, err
		}
		api := mk(ports[0])
		if err := api.start(ctx, timeout); err != nil {
			return nil, err
		}
		return api, nil
	}, nil)
}

// start starts the process and waits until /readyz answers 200 to the admin identity.
func (a *apiServer) start(ctx context.Context, timeout time.Duration) error {
	proc, err := startProcess("kube-apiserver", a.bin, a.args, a.logPath)
	if err != nil {
		return err
	}
	a.proc = proc
	if err := a.waitReady(ctx, timeout); err != nil {
		a.proc.stop(5 * time.Second)
		return err
	}
	return nil
}

// waitReady polls /readyz until it answers 200, the process exits or timeout passes. Until the
// server has written its serving certificate there is nothing to verify TLS with, so the first
// polls only look for that file.
func (a *apiServer) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		last = a.readyz(ctx)
		if last == nil {
			return nil
		}
		if a.proc.exited() {
			return a.proc.exitedError("ready")
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("harness: kube-apiserver not ready after %v (last check: %v); last lines of %s:\n%s", timeout, last, a.logPath, a.proc.logTail(40))
		}
	}
}

// readyz checks /readyz once.
func (a *apiServer) readyz(ctx context.Context) error {
	if a.probe == nil {
		if err := a.loadCA(); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.url+"/readyz?verbose", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.admin.token)
	resp, err := a.probe.Do(req)
	if err != nil {
		if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
			// The certificate was read while the server was still writing it: read it again.
			a.probe.CloseIdleConnections()
			a.probe, a.caData = nil, nil
		}
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s: failing checks: %s", resp.Status, failingChecks(string(body)))
	}
	return nil
}

// failingChecks picks the "[-]name failed" lines out of a verbose /readyz body.
func failingChecks(body string) string {
	var failed []string
	for line := range strings.SplitSeq(body, "\n") {
		if strings.HasPrefix(line, "[-]") {
			failed = append(failed, strings.TrimPrefix(line, "[-]"))
		}
	}
	if len(failed) == 0 {
		return strings.TrimSpace(body)
	}
	return strings.Join(failed, "; ")
}

// loadCA reads apiserver.crt from the cert dir and builds the probe client that trusts it. The file
// may be absent or half-written while the server starts; both are reported as errors to retry.
func (a *apiServer) loadCA() error {
	data, err := os.ReadFile(filepath.Join(a.certDir, "apiserver.crt"))
	if errors.Is(err, fs.ErrNotExist) {
		return errors.New("serving certificate not written yet")
	}
	if err != nil {
		return fmt.Errorf("harness: read serving certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return errors.New("serving certificate not complete yet")
	}
	a.caData = data
	// A probe that gets no answer is given up after a few seconds, so that waitReady sees a
	// server that exited: its port may be another process's, which accepts and never answers.
	a.probe = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return nil
}

// stop ends the current process: SIGTERM, then SIGKILL after grace.
func (a *apiServer) stop(grace time.Duration) error {
	if a.proc == nil {
		return nil
	}
	err := a.proc.stop(grace)
	if a.probe != nil {
		a.probe.CloseIdleConnections()
	}
	return err
}
