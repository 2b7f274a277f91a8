package harness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

const (
	tempDirPrefix = "informer-e2e-"
	ownerFile     = "owner.pid" // the pid of the test process that owns a temp dir
)

// makeTempDir creates a Server's temporary directory (etcd data, certificates, default logs) and
// records the test process's pid in it. It first removes the directories of earlier test
// processes that are gone: one killed before Stop cannot remove its own (each holds 100+ MB of
// etcd data). A directory whose owner is unknown or alive is left alone.
func makeTempDir() (string, error) {
	removeOrphanedTempDirs()
	dir, err := os.MkdirTemp("", tempDirPrefix)
	if err != nil {
		return "", fmt.Errorf("harness: temp dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("harness: temp dir: %w", err)
	}
	return dir, nil
}

func removeOrphanedTempDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempDirPrefix+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not ours, or its owner is still writing the file
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(dir)
		}
	}
}
