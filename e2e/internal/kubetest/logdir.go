package kubetest

import (
	"os"
	"path/filepath"
)

// LogDir returns the directory where the harness of test package pkg should keep the servers'
// logs: $E2E_LOG_DIR/pkg when E2E_LOG_DIR is set (CI keeps them for a failed run), and "" (the
// harness's temporary directory, removed with the servers) otherwise.
func LogDir(pkg string) string {
	dir := os.Getenv("E2E_LOG_DIR")
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, pkg)
}
