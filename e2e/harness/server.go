package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Options configure Start. The zero value is ready to use.
type Options struct {
	// BinDir holds the kube-apiserver and etcd executables. Default: the e2e module's .bin
	// directory, where hack/build-servers.sh puts them; Start runs that script when they are
	// missing there (never when BinDir is set).
	BinDir string
	// LogDir receives kube-apiserver.log and etcd.log and is kept by Stop. Default: a directory
	// inside the temporary directory that Stop removes.
	LogDir string
	// StartTimeout bounds the start of each server, and of the API server again on a restart.
	// Default: 60 s. It does not cover building the binaries.
	StartTimeout time.Duration
	// APIServerArgs are appended to the harness's kube-apiserver flags; a flag given again
	// overrides the harness's value (for example "--feature-gates=...").
	APIServerArgs []string
	// Output receives progress messages: a build of the binaries, the servers' addresses and
	// start times. Default: os.Stderr. Use io.Discard to silence them.
	Output io.Writer
}

// Server is a running etcd and kube-apiserver, both child processes of the test, and a TCP proxy
// in front of the API server through which the returned client configs connect.
//
// All methods are safe for concurrent use. RestartAPIServer and Stop exclude each other.
type Server struct {
	out     io.Writer
	tempDir string // removed by Stop
	logDir  string
	timeout time.Duration

	etcd      *etcdServer
	proxy     *tcpProxy
	caData    []byte // the API server's apiserver.crt; the same after restarts
	apiURL    string // https://127.0.0.1:port, the API server itself
	admin     identity
	unpriv    identity
	throttled identity
	throttler *throttler

	mu      sync.Mutex // guards api, admitting and stopped; held for the whole of RestartAPIServer, AdmittingConfig's start and Stop
	api     *apiServer
	stopped bool

	// What AdmittingConfig starts its server with, besides api's binary and cert dir.
	fileFlags []string
	extraArgs []string // Options.APIServerArgs
	admitting *apiServer

	stopOnce sync.Once
	stopErr  error // set by the first Stop
}

// Start starts etcd and kube-apiserver as child processes on free ports of 127.0.0.1 and waits
// until the API server's /readyz answers 200. It builds the binaries first when they are missing
// (see Options.BinDir). On error, whatever was started has been stopped and removed.
//
// The servers' files live in a new directory under os.TempDir() that Stop removes; Start also
// removes such directories left by test processes that died before their Stop.
func Start(ctx context.Context, opts Options) (_ *Server, err error) {
	out := opts.Output
	if out == nil {
		out = os.Stderr
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	bins, err := ensureBinaries(ctx, opts.BinDir, out)
	if err != nil {
		return nil, err
	}

	s := &Server{out: out, timeout: timeout}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Stop())
		}
	}()
	if s.tempDir, err = makeTempDir(); err != nil {
		return nil, err
	}
	s.logDir = opts.LogDir
	if s.logDir == "" {
		s.logDir = filepath.Join(s.tempDir, "logs")
	}
	certDir := filepath.Join(s.tempDir, "certs")
	for _, dir := range []string{s.logDir, certDir, filepath.Join(s.tempDir, "etcd")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
	}
	if s.admin, err = newIdentity(AdminUser, "system:masters"); err != nil {
		return nil, err
	}
	if s.unpriv, err = newIdentity(UnprivilegedUser); err != nil {
		return nil, err
	}
	if s.throttled, err = newIdentity(ThrottledUser); err != nil {
		return nil, err
	}

	began := time.Now()
	s.etcd, err = startEtcd(ctx, bins.etcd, filepath.Join(s.tempDir, "etcd", "data"), filepath.Join(s.logDir, "etcd.log"), timeout)
	if err != nil {
		return nil, err
	}
	etcdReady := time.Since(began)

	fileFlags, err := apiServerFiles(s.tempDir, []identity{s.admin, s.unpriv, s.throttled})
	if err != nil {
		return nil, err
	}
	s.fileFlags, s.extraArgs = fileFlags, opts.APIServerArgs
	apiBegan := time.Now()
	api, err := startAPIServer(ctx, timeout, func(port int) *apiServer {
		return &apiServer{
			bin:     bins.apiServer,
			args:    append(apiServerArgs(port, certDir, s.etcd.clientURL, fileFlags), opts.APIServerArgs...),
			logPath: filepath.Join(s.logDir, "kube-apiserver.log"),
			url:     "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			certDir: certDir,
			admin:   s.admin,
		}
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.api = api
	s.mu.Unlock()
	s.apiURL = api.url
	s.caData = api.caData
	apiReady := time.Since(apiBegan)
	if s.proxy, err = newTCPProxy(strings.TrimPrefix(api.url, "https://")); err != nil {
		return nil, err
	}

	adminClient, err := kubernetes.NewForConfig(s.directConfig(s.admin))
	if err != nil {
		return nil, fmt.Errorf("harness: admin client: %w", err)
	}
	throttledClient, err := kubernetes.NewForConfig(s.directConfig(s.throttled))
	if err != nil {
		return nil, fmt.Errorf("harness: throttled client: %w", err)
	}
	if err := setupThrottleObjects(ctx, adminClient); err != nil {
		return nil, err
	}
	s.throttler = &throttler{admin: adminClient, throttled: throttledClient}

	fmt.Fprintf(out, "harness: etcd ready at %s in %v; kube-apiserver ready at %s (clients through %s) in %v; logs in %s\n",
		s.etcd.clientURL, etcdReady.Round(time.Millisecond), s.apiURL, s.URL(), apiReady.Round(time.Millisecond), s.logDir)
	return s, nil
}

// config is a client config for id; host is the proxy's or the API server's URL.
func (s *Server) config(id identity, host string) *rest.Config {
	return &rest.Config{
		Host:            host,
		BearerToken:     id.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: slices.Clone(s.caData)},
	}
}

// directConfig is the harness's own config for id: straight to the API server, so that
// DropConnections does not cut it, and without client-side rate limiting.
func (s *Server) directConfig(id identity) *rest.Config {
	cfg := s.config(id, s.apiURL)
	cfg.QPS = -1
	return cfg
}

// AdminConfig returns a new client config for AdminUser (system:masters), connecting through the
// harness's proxy (see DropConnections). Client-side rate limiting is client-go's default (QPS 5,
// burst 10); raise QPS and Burst for bulk setup.
func (s *Server) AdminConfig() *rest.Config { return s.config(s.admin, s.URL()) }

// AdmittingConfig returns a new client config for AdminUser on a second kube-apiserver, started by
// the first call, over the same etcd (so what is written through it is what the first server
// serves) but with the ServiceAccount admission plugin on, as in a cluster: a Pod created through
// it runs as a ServiceAccount that must exist in its namespace (nothing here creates one; without
// it the create is Forbidden), and unless that ServiceAccount or the Pod opt out, is given a
// projected token volume, named kube-api-access- and five random characters, mounted in each
// container. The plugin runs after the field manager: the volume is in no managedFields entry.
// The config connects straight to that server, not through the proxy; RestartAPIServer does not
// restart it, and Stop stops it.
func (s *Server) AdmittingConfig(ctx context.Context) (*rest.Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, errors.New("harness: AdmittingConfig: server stopped")
	}
	if s.admitting == nil {
		began := time.Now()
		api, err := startAPIServer(ctx, s.timeout, func(port int) *apiServer {
			args := slices.DeleteFunc(apiServerArgs(port, s.api.certDir, s.etcd.clientURL, s.fileFlags),
				func(a string) bool { return a == disableServiceAccountAdmission })
			return &apiServer{
				bin:     s.api.bin,
				args:    append(args, s.extraArgs...),
				logPath: filepath.Join(s.logDir, "kube-apiserver-admitting.log"),
				url:     "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
				certDir: s.api.certDir,
				admin:   s.admin,
			}
		})
		if err != nil {
			return nil, fmt.Errorf("harness: the admitting kube-apiserver: %w", err)
		}
		s.admitting = api
		fmt.Fprintf(s.out, "harness: admitting kube-apiserver ready at %s in %v\n", api.url, time.Since(began).Round(time.Millisecond))
	}
	return s.config(s.admin, s.admitting.url), nil
}

// UnprivilegedConfig returns a new client config for UnprivilegedUser, which has no RBAC rights
// (listing pods is Forbidden), connecting through the harness's proxy.
func (s *Server) UnprivilegedConfig() *rest.Config { return s.config(s.unpriv, s.URL()) }

// ThrottledConfig returns a new client config for ThrottledUser, connecting through the
// harness's proxy. The identity may do anything (cluster-admin) and is served normally until
// Throttle; then the server answers its requests with 429 Too Many Requests.
func (s *Server) ThrottledConfig() *rest.Config { return s.config(s.throttled, s.URL()) }

// URL is the address clients use: the harness's TCP proxy in front of the API server
// (https://127.0.0.1:port). It stays the same across RestartAPIServer.
func (s *Server) URL() string { return "https://" + s.proxy.addr() }

// APIServerURL is the API server's own address, bypassing the proxy (and so DropConnections).
// A config pointed here (cfg.Host = s.APIServerURL()) works with the same credentials and CA.
func (s *Server) APIServerURL() string { return s.apiURL }

// EtcdURL is etcd's client URL (http://127.0.0.1:port).
func (s *Server) EtcdURL() string { return s.etcd.clientURL }

// APIServerLogPath is the file that receives the API server's output (across restarts).
func (s *Server) APIServerLogPath() string { return filepath.Join(s.logDir, "kube-apiserver.log") }

// EtcdLogPath is the file that receives etcd's output.
func (s *Server) EtcdLogPath() string { return filepath.Join(s.logDir, "etcd.log") }

// RestartAPIServer stops the API server with SIGTERM (SIGKILL if it has not exited after 30 s),
// starts it again with the same flags, so on the same port, etcd and serving certificate, and
// waits until it is ready. Connections through the proxy end with the old server; clients
// reconnect to the new one at the same URL. Its watch cache starts afresh: a watch from a
// resource version older than etcd's revision at the restart then gets 410 Gone.
func (s *Server) RestartAPIServer(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("harness: RestartAPIServer: server stopped")
	}
	stopErr := s.api.stop(30 * time.Second)
	if err := s.api.start(ctx, s.timeout); err != nil {
		return errors.Join(err, stopErr)
	}
	return stopErr
}

// CompactEtcd compacts etcd's history up to its current revision, which it returns. Afterwards a
// read from etcd at an older revision fails: a watch from resourceVersion rv (which starts at
// rv+1) with rv+1 < revision, a list at such an exact resourceVersion, or a continue token from
// before, get 410 Gone / Expired. Watches of resources in the API server's watch cache are served
// from the cache's own window, which compaction does not shrink; PodTemplates bypass the cache in
// this harness for that reason (RestartAPIServer empties the cache window of every resource).
func (s *Server) CompactEtcd(ctx context.Context) (int64, error) {
	return s.etcd.compact(ctx)
}

// DropConnections closes every client connection open through the proxy, as a network failure
// would: each watch on them ends, and each request in flight fails. It returns how many
// connections it closed. New connections are accepted as before.
func (s *Server) DropConnections() int { return s.proxy.dropConnections() }

// Throttle makes the API server answer 429 Too Many Requests to ThrottledUser, watches and lists
// included, until Unthrottle; it returns once the server has rejected a request of that identity.
// Other identities are not affected. See throttle.go for how. It is an error to call Throttle
// while throttled.
//
// A watch already open when Throttle is called goes on (APF holds a watch's seat only while it
// starts); DropConnections makes its client watch again, into the 429s.
//
// Note that client-go retries a 429 that carries Retry-After (APF's does: 1 s at first, growing
// to 32 s while rejections go on) up to 10 times before returning it; use Request.MaxRetries(0)
// to see the 429 at once.
func (s *Server) Throttle(ctx context.Context) error { return s.throttler.throttle(ctx) }

// Unthrottle ends Throttle and returns once the server has reopened ThrottledUser's priority
// level. It does nothing when not throttled.
func (s *Server) Unthrottle(ctx context.Context) error { return s.throttler.unthrottle(ctx) }

// Stop tears everything down in order: the throttler's hold and webhook, the proxy (and every
// connection through it), the API server (SIGTERM, then SIGKILL after 30 s), etcd, the
// temporary directory. When it returns, no child process and no goroutine of the harness is left.
// It is safe to call more than once; later calls return the first call's result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}

func (s *Server) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	var errs []error
	if s.throttler != nil {
		s.throttler.close()
	}
	if s.proxy != nil {
		s.proxy.close()
	}
	// The API servers first: stopped after etcd they would retry etcd for over a minute.
	if s.admitting != nil {
		errs = append(errs, s.admitting.stop(30*time.Second))
	}
	if s.api != nil {
		errs = append(errs, s.api.stop(30*time.Second))
	}
	if s.etcd != nil {
		errs = append(errs, s.etcd.stop())
	}
	if s.tempDir != "" {
		if err := os.RemoveAll(s.tempDir); err != nil {
			errs = append(errs, fmt.Errorf("harness: remove %s: %w", s.tempDir, err))
		}
	}
	return errors.Join(errs...)
}
