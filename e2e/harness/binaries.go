package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// binaries are the paths of the server executables.
type binaries struct {
	apiServer string
	etcd      string
}

func binariesIn(dir string) binaries {
	return binaries{apiServer: filepath.Join(dir, "kube-apiserver"), etcd: filepath.Join(dir, "etcd")}
}

// missing lists the executables that are not there.
func (b binaries) missing() []string {
	var missing []string
	for _, p := range []string{b.apiServer, b.etcd} {
		if info, err := os.Stat(p); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			missing = append(missing, p)
		}
	}
	return missing
}

// e2eRoot returns the directory of the e2e module (the one holding hack/build-servers.sh). It
// starts from this source file, which is right unless the test binary was built with -trimpath,
// and falls back to the module of the working directory (go test runs a test in its package dir).
func e2eRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		root := filepath.Dir(filepath.Dir(file))
		if isE2ERoot(root) {
			return root, nil
		}
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("harness: find the e2e module: go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	if !isE2ERoot(root) {
		return "", fmt.Errorf("harness: find the e2e module: %s has no hack/build-servers.sh; set Options.BinDir", root)
	}
	return root, nil
}

func isE2ERoot(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "hack", "build-servers.sh"))
	return err == nil
}

// buildBinaries runs hack/build-servers.sh of the e2e module at root, with its progress on out.
// The script and its go build run in a process group of their own, killed if ctx ends.
func buildBinaries(ctx context.Context, root string, out io.Writer) error {
	script := filepath.Join(root, "hack", "build-servers.sh")
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second // output pipes (when out is not a file) close after this
	start := time.Now()
	if err := cmd.Run(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = errors.Join(err, ctxErr)
		}
		return fmt.Errorf("harness: %s failed after %v: %w", script, time.Since(start).Round(time.Second), err)
	}
	return nil
}

// ensureBinaries returns the server executables in dir, building them with the e2e module's build
// script when dir is the default one (dirFromOptions is empty) and something is missing.
func ensureBinaries(ctx context.Context, dirFromOptions string, out io.Writer) (binaries, error) {
	if dirFromOptions != "" {
		bins := binariesIn(dirFromOptions)
		if missing := bins.missing(); len(missing) > 0 {
			return bins, fmt.Errorf("harness: Options.BinDir lacks %s", strings.Join(missing, ", "))
		}
		return bins, nil
	}
	root, err := e2eRoot()
	if err != nil {
		return binaries{}, err
	}
	bins := binariesIn(filepath.Join(root, ".bin"))
	missing := bins.missing()
	if len(missing) == 0 {
		return bins, nil
	}
	fmt.Fprintf(out, "harness: %s missing; building the servers with hack/build-servers.sh "+
		"(a cold build takes 5-9 minutes; run it before go test to keep it out of the test timeout)\n",
		strings.Join(missing, ", "))
	if err := buildBinaries(ctx, root, out); err != nil {
		return bins, err
	}
	if missing := bins.missing(); len(missing) > 0 {
		return bins, fmt.Errorf("harness: build-servers.sh succeeded but %s still missing", strings.Join(missing, ", "))
	}
	return bins, nil
}
