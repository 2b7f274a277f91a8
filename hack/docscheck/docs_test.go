package docscheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the repository's root: this package is hack/docscheck.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "hack", "docscheck", "docs_test.go")); err != nil {
		t.Fatalf("repository root not found from the test's directory: %v", err)
	}
	return root
}

// markdown returns the repository's Markdown files, slash-separated and relative to root,
// leaving out test data (golden files of reports, not documentation).
func markdown(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", ".bin", "logs", "results":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

// snippetDocs are the files whose Go blocks must compile: the README, docs/, examples/.
func snippetDocs(files []string) []string {
	var out []string
	for _, f := range files {
		if f == "README.md" || strings.HasPrefix(f, "docs/") || strings.HasPrefix(f, "examples/") {
			out = append(out, f)
		}
	}
	return out
}

func parseDoc(t *testing.T, root, rel string) *Doc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return Parse(rel, string(b))
}

// TestLinks checks that every relative link of every Markdown file leads to a file or
// directory of the repository and, when it has a #fragment into a Markdown file, to one of
// that file's headings or anchors.
func TestLinks(t *testing.T) {
	root := repoRoot(t)
	files := markdown(t, root)
	docs := map[string]*Doc{}
	for _, f := range files {
		docs[f] = parseDoc(t, root, f)
	}
	checked := 0
	for _, f := range files {
		d := docs[f]
		for _, l := range d.Links {
			if strings.Contains(l.Target, ":") && !strings.HasPrefix(l.Target, "#") {
				u, err := url.Parse(l.Target)
				if err == nil && u.Scheme != "" {
					continue // https:, mailto:
				}
			}
			checked++
			target, frag, _ := strings.Cut(l.Target, "#")
			target, err := url.PathUnescape(target)
			if err != nil {
				t.Errorf("%s:%d: link %q: %v", f, l.Line, l.Target, err)
				continue
			}
			rel := f
			if target != "" {
				if strings.HasPrefix(target, "/") {
					rel = path.Clean(strings.TrimPrefix(target, "/"))
				} else {
					rel = path.Join(path.Dir(f), target)
				}
				if rel == ".." || strings.HasPrefix(rel, "../") {
					t.Errorf("%s:%d: link %q leads out of the repository", f, l.Line, l.Target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
					t.Errorf("%s:%d: link %q: no such file or directory %s", f, l.Line, l.Target, rel)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(rel, ".md") {
				continue
			}
			td, ok := docs[rel]
			if !ok {
				td = parseDoc(t, root, rel)
				docs[rel] = td
			}
			if !td.Anchors[frag] {
				t.Errorf("%s:%d: link %q: %s has no heading or anchor #%s", f, l.Line, l.Target, rel, frag)
			}
		}
	}
	t.Logf("%d relative links in %d Markdown files", checked, len(files))
}

// TestDocsIndex checks that docs/README.md links every page of docs/.
func TestDocsIndex(t *testing.T) {
	root := repoRoot(t)
	index := parseDoc(t, root, "docs/README.md")
	linked := map[string]bool{}
	for _, l := range index.Links {
		target, _, _ := strings.Cut(l.Target, "#")
		linked[path.Join("docs", target)] = true
	}
	for _, f := range markdown(t, root) {
		if strings.HasPrefix(f, "docs/") && f != "docs/README.md" && !linked[f] {
			t.Errorf("docs/README.md does not link %s", f)
		}
	}
}

// TestSnippets type-checks every Go block of the README, docs/ and examples/ (see snippet.go),
// against the packages of the checkout, as examples/go.work builds them.
func TestSnippets(t *testing.T) {
	root := repoRoot(t)
	fset := token.NewFileSet()
	type parsed struct {
		*Snippet
		file *ast.File
	}
	var snippets []parsed
	paths := map[string]bool{}
	for _, rel := range snippetDocs(markdown(t, root)) {
		d := parseDoc(t, root, rel)
		for _, b := range d.Blocks {
			if b.Info != "go" || b.Skip {
				continue
			}
			s, err := Wrap(rel, b, fmt.Sprintf("snippet%d", len(snippets)))
			if err != nil {
				t.Error(err)
				continue
			}
			f, err := parser.ParseFile(fset, "", s.Src, parser.SkipObjectResolution)
			if err != nil {
				t.Errorf("%v\n%s", err, s.Src)
				continue
			}
			for _, imp := range f.Imports {
				paths[strings.Trim(imp.Path.Value, `"`)] = true
			}
			snippets = append(snippets, parsed{s, f})
		}
	}
	if len(snippets) == 0 {
		t.Fatal("no Go snippet found")
	}
	exports := exportData(t, filepath.Join(root, "examples"), slices.Sorted(func(yield func(string) bool) {
		for p := range paths {
			if !yield(p) {
				return
			}
		}
	}))
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	for i, s := range snippets {
		var errs []error
		conf := types.Config{Importer: imp, Error: func(err error) { errs = append(errs, err) }}
		conf.Check(fmt.Sprintf("snippet%d", i), fset, []*ast.File{s.file}, nil)
		reported := 0
		for _, err := range errs {
			var te types.Error
			if errors.As(err, &te) && !s.Full && strings.HasPrefix(te.Msg, "declared and not used") {
				continue
			}
			t.Errorf("%v", err)
			reported++
		}
		if reported > 0 && testing.Verbose() {
			t.Logf("%s:%d as compiled:\n%s", s.Doc, s.Block.Line, s.Src)
		}
	}
	t.Logf("%d Go snippets type-checked", len(snippets))
}

// exportData builds the packages paths (and their dependencies) in directory dir and returns
// the files of their export data, by import path.
func exportData(t *testing.T, dir string, paths []string) map[string]string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-e", "-export", "-deps", "-json=ImportPath,Export,Error"}, paths...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export in %s: %v\n%s", dir, err, stderr.Bytes())
	}
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath, Export string
			Error              *struct{ Err string }
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Error != nil {
			t.Errorf("go list %s: %s", p.ImportPath, p.Error.Err)
			continue
		}
		exports[p.ImportPath] = p.Export
	}
	return exports
}
