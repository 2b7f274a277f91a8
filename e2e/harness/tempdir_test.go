package harness

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

func TestMakeTempDirRemovesOrphans(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)

	// A process that has exited: its pid is free (until reused, which only keeps a directory).
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]int{
		"orphan": dead.Process.Pid, // owner gone: removed
		"alive":  os.Getppid(),     // owner running: kept
		"us":     os.Getpid(),      // this process: kept
	}
	for name, pid := range dirs {
		dir := filepath.Join(tmp, tempDirPrefix+name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(pid)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	unowned := filepath.Join(tmp, tempDirPrefix+"unowned") // no owner file: kept
	if err := os.Mkdir(unowned, 0o700); err != nil {
		t.Fatal(err)
	}

	dir, err := makeTempDir()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != tmp {
		t.Errorf("makeTempDir made %s, want it in %s", dir, tmp)
	}
	for name, wantKept := range map[string]bool{"orphan": false, "alive": true, "us": true, "unowned": true} {
		_, err := os.Stat(filepath.Join(tmp, tempDirPrefix+name))
		if kept := !errors.Is(err, os.ErrNotExist); kept != wantKept {
			t.Errorf("directory %q kept = %v, want %v", name, kept, wantKept)
		}
	}
}
