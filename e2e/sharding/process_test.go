package sharding

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/e2e/harness"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"github.com/typedkube/informer/shard"
)

// replicaEnv, set to a JSON replicaSpec, makes the test binary run one replica instead of the
// tests (see TestMain): a process of its own, which a test can stop (SIGSTOP) and resume.
const replicaEnv = "SHARDING_E2E_REPLICA"

// replicaSpec tells a replica process where the server is and who it is.
type replicaSpec struct {
	Host, Token     string
	CA              []byte
	Namespace, Name string
}

// replicaLine is one line a replica process writes on its standard output: a handler call, or
// its status (every 50ms).
type replicaLine struct {
	Call   *wireCall   `json:",omitempty"`
	Status *wireStatus `json:",omitempty"`
}

type wireCall struct {
	Kind, Key     string
	Initial, Echo bool
	Start, End    int64 // Unix nanoseconds
}

type wireStatus struct {
	Owned   string // the buckets it owns, as shard.Buckets.String
	Synced  bool
	Fenced  bool
	Objects int
	Pending int // notifications queued for its handler
}

// runReplicaProcess is the replica process: a Member and a sharded informer of the namespace's
// ConfigMaps, as startReplica makes, whose handler writes each call to standard output. It reads
// commands from its standard input, one a line: "hold" makes its handler's calls wait, as a busy
// controller's would, until "go on". It runs until its standard input ends, then leaves its
// group. It returns the exit code.
func runReplicaProcess(specJSON string) int {
	var spec replicaSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 2
	}
	c, err := kubetest.NewClients(&rest.Config{Host: spec.Host, BearerToken: spec.Token, TLSClientConfig: rest.TLSClientConfig{CAData: spec.CA}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 2
	}
	defer c.Close()
	m, err := shard.NewMember(shard.Options{
		Leases: c.Kube.CoordinationV1(), Namespace: spec.Namespace, Group: "configmaps", Identity: spec.Name,
		LeaseDuration: leaseDuration, RenewInterval: renewInterval, Buckets: buckets,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 2
	}
	f, err := informer.NewFactory(c.Config, informer.FactoryOptions{Namespace: spec.Namespace})
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 2
	}
	inf, err := shard.For[*corev1.ConfigMap](f, m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 2
	}
	out := &lineWriter{enc: json.NewEncoder(os.Stdout)}
	held := &gate{}
	if _, err := inf.AddEventHandler(processHandler(out, held)); err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			held.set(in.Text() == "hold")
		}
		held.set(false)
		cancel()
	}()
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := m.Run(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "replica: Member.Run:", err)
			cancel()
		}
	})
	f.Start(ctx)
	tick := time.NewTicker(50 * time.Millisecond)
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
			st := inf.Status()
			pending := 0
			for _, h := range inf.Informer().Stats().Handlers {
				pending += h.Pending
			}
			out.write(replicaLine{Status: &wireStatus{Owned: st.Owned.String(), Synced: inf.HasSynced(), Fenced: st.Fenced, Objects: st.Objects, Pending: pending}})
		}
	}
	tick.Stop()
	wg.Wait()
	f.Shutdown()
	return 0
}

type lineWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (w *lineWriter) write(l replicaLine) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = w.enc.Encode(l)
}

// gate holds handler calls while it is closed.
type gate struct {
	mu     sync.Mutex
	closed bool
	open   chan struct{} // closed when the gate opens; nil while it is open
}

func (g *gate) set(closed bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case closed && !g.closed:
		g.open = make(chan struct{})
	case !closed && g.closed:
		close(g.open)
		g.open = nil
	}
	g.closed = closed
}

// wait returns once the gate is open.
func (g *gate) wait() {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	if open != nil {
		<-open
	}
}

// processHandler is a replica process's handler: each call waits for the gate, takes about 20us
// as a ledger's, and is written out with its time span (from before the wait).
func processHandler(out *lineWriter, g *gate) callFunc {
	return func(kind, key string, initial, echo bool) {
		start := time.Now()
		g.wait()
		time.Sleep(20 * time.Microsecond)
		out.write(replicaLine{Call: &wireCall{Kind: kind, Key: key, Initial: initial, Echo: echo, Start: start.UnixNano(), End: time.Now().UnixNano()}})
	}
}

// replicaProcess is a replica running as a process of its own (the test binary, see replicaEnv):
// its calls go to the ledger, its status to status.
type replicaProcess struct {
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	status  atomic.Pointer[wireStatus]
	read    chan struct{} // closed once its output has been read to the end
	stopped atomic.Bool
}

// startReplicaProcess starts a replica process against srv in namespace ns; its calls go to l.
// It is stopped (resumed first, if stopped) when the test ends.
func startReplicaProcess(t *testing.T, srv *harness.Server, ns, name string, l *ledger) *replicaProcess {
	t.Helper()
	cfg := srv.AdminConfig()
	spec, err := json.Marshal(replicaSpec{Host: cfg.Host, Token: cfg.BearerToken, CA: cfg.CAData, Namespace: ns, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), replicaEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &replicaProcess{name: name, cmd: cmd, read: make(chan struct{})}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.read)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var line replicaLine
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Errorf("%s wrote %q: %v", name, sc.Text(), err)
				continue
			}
			switch {
			case line.Call != nil:
				c := line.Call
				l.record(entry{replica: name, kind: c.Kind, key: c.Key, initial: c.Initial, echo: c.Echo, start: time.Unix(0, c.Start), end: time.Unix(0, c.End)})
			case line.Status != nil:
				p.status.Store(line.Status)
			}
		}
	}()
	t.Cleanup(p.stop)
	return p
}

// hold makes the process's handler calls wait (hold true) or go on.
func (p *replicaProcess) hold(t *testing.T, hold bool) {
	t.Helper()
	cmd := "go on\n"
	if hold {
		cmd = "hold\n"
	}
	if _, err := io.WriteString(p.stdin, cmd); err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
}

// signal sends sig (SIGSTOP, SIGCONT) to the process.
func (p *replicaProcess) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s: %v: %v", p.name, sig, err)
	}
}

// stop resumes the process if it was stopped and ends it: it leaves its group when its input
// ends, and is killed if it has not exited 30s later.
func (p *replicaProcess) stop() {
	if p.stopped.Swap(true) {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.stdin.Close()
	select {
	case <-p.read:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.read
	}
	_ = p.cmd.Wait()
}
