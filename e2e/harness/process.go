package harness

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// process is one server running as a child of the test process. Its stdout and stderr go to a
// log file (an *os.File, so exec starts no copying goroutine); one goroutine waits for it to exit.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed once the process has exited and been reaped
	waitErr error         // the exit status; read only after done is closed
}

// startProcess starts path with args, appending its output to logPath. The child gets its own
// process group and SIGKILL when the test process dies, so a crashing test leaves nothing behind.
func startProcess(name, path string, args []string, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("harness: open %s log: %w", name, err)
	}
	fmt.Fprintf(logFile, "### harness %s: %s %s\n", time.Now().Format(time.RFC3339Nano), path, strings.Join(args, " "))
	cmd := exec.Command(path, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The kernel sends Pdeathsig when the thread that forked the child exits, not the
		// process: this goroutine keeps that thread until the child has been reaped (a goroutine
		// that ends locked takes its thread with it, which is then harmless).
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			logFile.Close()
			started <- err
			return
		}
		started <- nil
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("harness: start %s: %w", name, err)
	}
	return p, nil
}

// pid returns the child's process id, which is also its process group id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes how the process ended; call it only after done is closed.
func (p *process) exitError() error {
	if p.waitErr == nil {
		return fmt.Errorf("harness: %s exited with status 0", p.name)
	}
	return fmt.Errorf("harness: %s exited: %w", p.name, p.waitErr)
}

// stop sends SIGTERM to the process group, waits up to grace for the process to exit, then sends
// SIGKILL and waits for it to be reaped. It returns nil when the process ended on SIGTERM (or had
// already exited) and an error when it had to be killed. stop may be called more than once.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	// The negative pid addresses the whole group: the server and anything it started.
	if err := syscall.Kill(-p.pid(), syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("harness: SIGTERM %s: %w", p.name, err)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
	}
	if err := syscall.Kill(-p.pid(), syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("harness: SIGKILL %s: %w", p.name, err)
	}
	<-p.done
	return fmt.Errorf("harness: %s did not exit within %v of SIGTERM and was killed", p.name, grace)
}

// errPortTaken marks the start of a server that exited because a port it was given, free when
// freePorts chose it, was taken before the server could listen on it (by another listener, or as
// the local port of an outgoing connection: both come from the same range). Its starter then
// tries again on other ports.
var errPortTaken = errors.New("harness: a port chosen free was taken before the server listened on it")

// startAttempts is how many times a server is started on newly chosen ports when its ports were
// taken (errPortTaken).
const startAttempts = 3

// startOnFreePorts calls start, which starts a server on ports it chooses free, until it
// succeeds, fails otherwise than by a port taken (errPortTaken), or has tried startAttempts
// times; before each new try, again (if not nil) clears what the failed start left.
func startOnFreePorts[S any](start func() (S, error), again func() error) (S, error) {
	for attempt := 1; ; attempt++ {
		srv, err := start()
		if err == nil || !errors.Is(err, errPortTaken) || attempt == startAttempts {
			return srv, err
		}
		if again != nil {
			if err := again(); err != nil {
				var zero S
				return zero, err
			}
		}
	}
}

// exitedError returns the error of the process, which has exited before it was ready, with the
// last lines of its log: wrapping errPortTaken when this run's log (the lines after its header)
// says that an address was in use.
func (p *process) exitedError(what string) error {
	tail := p.logTail(40)
	run := tail
	if i := strings.LastIndex(tail, "### harness "); i >= 0 {
		run = tail[i:]
	}
	err := fmt.Errorf("%w before it was %s; last lines of %s:\n%s", p.exitError(), what, p.logPath, tail)
	if strings.Contains(run, "address already in use") {
		return fmt.Errorf("%w: %w", errPortTaken, err)
	}
	return err
}

// logTail returns the last n lines of the process's log, for error messages.
func (p *process) logTail(n int) string {
	return fileTail(p.logPath, n)
}

// fileTail returns the last n lines of the file at path, reading at most its last 64 KiB.
func fileTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	const maxRead = 64 << 10
	if info, err := f.Stat(); err == nil && info.Size() > maxRead {
		if _, err := f.Seek(-maxRead, io.SeekEnd); err != nil {
			return fmt.Sprintf("(cannot read %s: %v)", path, err)
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
