package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/typedkube/informer/e2e/harness"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

var (
	srv     *harness.Server // for the tests that run the demo against an existing cluster
	demoBin string          // the demo, built by TestMain
)

func TestMain(m *testing.M) {
	opts := harness.Options{LogDir: kubetest.LogDir("demo")}
	goleak.VerifyTestMain(harness.Main(buildFirst{m}, opts, func(s *harness.Server) { srv = s }))
}

// buildFirst builds the demo binary before running the tests, and removes it after.
type buildFirst struct{ m *testing.M }

func (b buildFirst) Run() int {
	dir, err := os.MkdirTemp("", "demo-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	demoBin = filepath.Join(dir, "demo")
	if out, err := exec.Command("go", "build", "-o", demoBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build the demo: %v\n%s", err, out)
		return 1
	}
	return b.m.Run()
}

// runDemo runs the demo binary with args until it exits or timeout passes, and returns its exit
// code and output.
func runDemo(t *testing.T, timeout time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, demoBin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && ctx.Err() == nil:
		code = exit.ExitCode()
	default:
		t.Fatalf("demo %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out.String(), errOut.String())
	}
	return code, out.String(), errOut.String()
}

func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"--pods=0"}, "--pods=0: want 1 to 100"},
		{[]string{"--namespaces", "many"}, `invalid value "many" for flag -namespaces`},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runDemo(t, 30*time.Second, tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit code %d, stderr:\n%s\nwant exit code 2 and %q", code, stderr, tc.want)
			}
		})
	}
}

// writeKubeconfig writes a kubeconfig for cfg (a host, a CA and a bearer token) and returns its
// path.
func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "admin"}
	kc.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUnreachableServer(t *testing.T) {
	// A port that was free a moment ago: nothing listens there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := srv.AdminConfig()
	cfg.Host = "https://" + addr
	kubeconfig := writeKubeconfig(t, cfg)

	start := time.Now()
	code, _, stderr := runDemo(t, time.Minute, "--kubeconfig", kubeconfig)
	want := "cannot reach the API server at https://" + addr
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit code %d, stderr:\n%s\nwant exit code 1 and %q", code, stderr, want)
	}
	t.Logf("failed after %v: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(stderr))

	code, _, stderr = runDemo(t, time.Minute, "--kubeconfig", filepath.Join(t.TempDir(), "missing"))
	if code != 1 || !strings.Contains(stderr, "load kubeconfig") {
		t.Errorf("missing kubeconfig: exit code %d, stderr:\n%s\nwant exit code 1 and a load error", code, stderr)
	}
}

// TestKubeconfigMode runs the demo against the test's API server until it is interrupted: it
// keeps the summary of a namespace that is labelled while it runs, and exits 0 on SIGINT.
func TestKubeconfigMode(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, demoBin, "--kubeconfig", writeKubeconfig(t, srv.AdminConfig()))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
	}()
	var output []string
	waitLine := func(want string) {
		t.Helper()
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("the demo ended before printing %q:\n%s\nstderr:\n%s", want, strings.Join(output, "\n"), stderr.String())
				}
				output = append(output, line)
				if strings.Contains(line, want) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no %q from the demo:\n%s", want, strings.Join(output, "\n"))
			}
		}
	}
	waitLine("press Ctrl-C to stop")

	cfg := srv.AdminConfig()
	client := kubernetes.NewForConfigOrDie(cfg)
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "demo-cluster-", Labels: map[string]string{optInLabel: "true"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if err := createPod(ctx, client, ns.Name, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := waitVerified(ctx, client, []string{ns.Name}, nil, newPrinter(io.Discard)); err != nil {
		t.Fatal(err)
	}
	waitLine("pod-summary " + ns.Name)

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitLine("stopped after")
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("demo after SIGINT: %v, want exit code 0; stderr:\n%s", err, stderr.String())
	}
}

// TestScenario runs the default mode's scenario in this process, against the test's API server:
// the controller converges after every step and leaves no goroutine behind.
func TestScenario(t *testing.T) {
	current := goleak.IgnoreCurrent()
	var out bytes.Buffer
	cfg := srv.AdminConfig()
	cfg.QPS, cfg.Burst = 50, 100
	o := options{namespaces: 2, pods: 3, workers: 2, syncTimeout: 30 * time.Second}
	if err := runScenario(t.Context(), cfg, o, newPrinter(&out)); err != nil {
		t.Fatalf("%v\noutput:\n%s", err, out.String())
	}
	for _, want := range []string{"informers synced", "step 3", "done: the controller wrote"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	goleak.VerifyNone(t, current,
		// Connections kept for reuse by client-go's shared transports, and the harness proxy's
		// copies of them; TestMain checks again once the servers have stopped.
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("github.com/typedkube/informer/e2e/harness.(*tcpProxy).forward"),
		goleak.IgnoreAnyFunction("github.com/typedkube/informer/e2e/harness.(*tcpProxy).forward.func1"),
		goleak.IgnoreAnyFunction("github.com/typedkube/informer/e2e/harness.(*tcpProxy).forward.func2"),
	)
}

// TestDefaultMode runs the README's command as it is: the demo starts its own servers, drives
// the scenario, verifies it and exits 0.
func TestDefaultMode(t *testing.T) {
	code, stdout, stderr := runDemo(t, 3*time.Minute)
	if code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"starting etcd and kube-apiserver", "verified:", "NAMESPACE", "done:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	t.Logf("output:\n%s", stdout)
}
