// Command modproxy writes a file-based Go module proxy (GOPROXY=file://DIR) serving modules of
// this repository at one git revision, as the public proxy would serve them once the revision is
// tagged: the zip made from the commit's tree by golang.org/x/mod/zip (nested modules left out,
// as the go command leaves them out), the go.mod of that commit, and an info file with the
// commit's time.
//
//	modproxy -repo . -rev v0.3.0 -version v0.3.0 -out /tmp/proxy . controllerruntime
//	modproxy -repo . -rev 1a2b3c4 -pseudo controllerruntime
//
// With -pseudo it writes nothing and prints the pseudo-version the go command gives the
// revision of the module in the one directory named: v0.0.0-TIME-HASH, or built on the latest
// release tag of that module (DIR/vX.Y.Z) the revision descends from.
//
// Each argument is a module's directory relative to the repository's root ("." for the root
// module); its module path is read from its go.mod at the revision. A proxy directory may be
// written by several runs: versions are added to each module's list.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
)

func main() {
	repo := flag.String("repo", ".", "`directory` of the git repository")
	rev := flag.String("rev", "HEAD", "git `revision` whose tree is served")
	version := flag.String("version", "", "module `version` to serve the revision as (required): a tag's name or a pseudo-version")
	out := flag.String("out", "", "proxy `directory` to write (required)")
	pseudo := flag.Bool("pseudo", false, "print the revision's pseudo-version for the module in the one directory given, and write nothing")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: modproxy -version vX.Y.Z -out DIR [-repo DIR] [-rev REV] MODULE_DIR...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *pseudo {
		if flag.NArg() != 1 {
			flag.Usage()
			os.Exit(2)
		}
		v, err := pseudoVersion(*repo, *rev, path.Clean(flag.Arg(0)))
		if err != nil {
			fmt.Fprintln(os.Stderr, "modproxy:", err)
			os.Exit(1)
		}
		fmt.Println(v)
		return
	}
	if *version == "" || *out == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*repo, *rev, *version, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

func run(repo, rev, version, out string, dirs []string) error {
	root, err := git(repo, "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	root = strings.TrimSpace(root)
	commit, err := git(root, "rev-parse", "--verify", rev+"^{commit}")
	if err != nil {
		return err
	}
	commit = strings.TrimSpace(commit)
	unix, err := git(root, "show", "-s", "--format=%ct", commit)
	if err != nil {
		return err
	}
	var secs int64
	if _, err := fmt.Sscan(unix, &secs); err != nil {
		return fmt.Errorf("commit time of %s: %w", commit, err)
	}
	when := time.Unix(secs, 0).UTC()
	if module.IsPseudoVersion(version) {
		// The go command checks a pseudo-version against the commit it names when it
		// fetches from the repository: refuse one it would refuse.
		t, err := module.PseudoVersionTime(version)
		if err != nil {
			return err
		}
		short, err := module.PseudoVersionRev(version)
		if err != nil {
			return err
		}
		if !t.Equal(when) || !strings.HasPrefix(commit, short) {
			return fmt.Errorf("pseudo-version %s does not name commit %s of %s (want v0.0.0-%s-%s)",
				version, commit, when.Format(time.RFC3339), when.Format("20060102150405"), commit[:12])
		}
	}
	for _, dir := range dirs {
		if err := serve(root, commit, when, version, out, path.Clean(dir)); err != nil {
			return err
		}
	}
	return nil
}

// serve writes one module's files for version into the proxy directory out.
func serve(root, commit string, when time.Time, version, out, dir string) error {
	subdir := ""
	gomodPath := "go.mod"
	if dir != "." {
		subdir = dir
		gomodPath = dir + "/go.mod"
	}
	gomod, err := git(root, "show", commit+":"+gomodPath)
	if err != nil {
		return err
	}
	modPath := modfile.ModulePath([]byte(gomod))
	if modPath == "" {
		return fmt.Errorf("%s at %s names no module", gomodPath, commit)
	}
	m := module.Version{Path: modPath, Version: version}
	if err := module.Check(m.Path, m.Version); err != nil {
		return err
	}
	escPath, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	escVersion, err := module.EscapeVersion(m.Version)
	if err != nil {
		return err
	}
	vdir := filepath.Join(out, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	var zip bytes.Buffer
	if err := modzip.CreateFromVCS(&zip, m, root, commit, subdir); err != nil {
		return fmt.Errorf("zip of %s: %w", m, err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, when})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		escVersion + ".zip":  zip.Bytes(),
		escVersion + ".mod":  []byte(gomod),
		escVersion + ".info": info,
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			return err
		}
	}
	return addToList(filepath.Join(vdir, "list"), m.Version)
}

// pseudoVersion is the go command's pseudo-version of revision rev of the module in dir.
func pseudoVersion(repo, rev, dir string) (string, error) {
	commit, err := git(repo, "rev-parse", "--verify", rev+"^{commit}")
	if err != nil {
		return "", err
	}
	commit = strings.TrimSpace(commit)
	unix, err := git(repo, "show", "-s", "--format=%ct", commit)
	if err != nil {
		return "", err
	}
	var secs int64
	if _, err := fmt.Sscan(unix, &secs); err != nil {
		return "", fmt.Errorf("commit time of %s: %w", commit, err)
	}
	prefix := ""
	if dir != "." {
		prefix = dir + "/"
	}
	tags, err := git(repo, "tag", "--merged", commit, "--list", prefix+"v*")
	if err != nil {
		return "", err
	}
	older := ""
	for _, tag := range strings.Fields(tags) {
		v := strings.TrimPrefix(tag, prefix)
		if semver.IsValid(v) && semver.Canonical(v) == v && (semver.Major(v) == "v0" || semver.Major(v) == "v1") {
			if older == "" || semver.Compare(v, older) > 0 {
				older = v
			}
		}
	}
	return module.PseudoVersion("", older, time.Unix(secs, 0).UTC(), commit[:12]), nil
}

// addToList adds version to the proxy's list file of a module, once.
func addToList(file, version string) error {
	b, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(b))
	if slices.Contains(versions, version) {
		return nil
	}
	versions = append(versions, version)
	return os.WriteFile(file, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(b), nil
}
