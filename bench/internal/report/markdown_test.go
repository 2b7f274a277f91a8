package report

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// checkGolden compares got with testdata/golden/name, rewriting it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(testdata, "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it; review the diff):\n%s", path, lineDiff(string(want), string(got)))
	}
}

// lineDiff shows the first differing lines.
func lineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + strconv.Itoa(i+1) + ":\n- " + w + "\n+ " + g
		}
	}
	return "(same lines)"
}

// fixedMeta is a fallback Meta for inputs that recorded none.
var fixedMeta = Meta{
	Date: "2026-11-22T09:30:00Z", Command: "cd bench && go run ./cmd/benchreport", Go: "go1.26.8",
	ClientGo: "v0.37.2", CPU: "Intel(R) Xeon(R) Processor", Cores: "2", GOOS: "linux", GOARCH: "amd64",
	Count: "6", Benchtime: "500ms", Bench: ".", Inputs: []string{"results/latest.txt"},
}

func TestWriteMarkdown(t *testing.T) {
	tests := []struct {
		golden string
		files  []string
		meta   Meta
	}{
		{"paired.md", []string{"paired.txt"}, fixedMeta},
		// problems.txt records its own meta (benchreport-* keys); the
		// report command differs from the measuring one.
		{"problems.md", []string{"problems.txt", "plain-panic.txt", "does-not-exist.txt"},
			Meta{Report: "cd bench && go run ./cmd/benchreport -in results/a.txt,results/b.txt", Inputs: []string{"results/a.txt", "results/b.txt"}}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			d := readTestdata(t, tt.files...)
			r := buildAll(t, d, ".")
			r.Meta = MetaFromData(d, tt.meta)
			var b bytes.Buffer
			if err := WriteMarkdown(&b, r, MarkdownOptions{Chart: "docs/benchmarks.svg"}); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tt.golden, b.Bytes())
		})
	}
}

func TestMarkdownContent(t *testing.T) {
	d := readTestdata(t, "problems.txt")
	r := buildAll(t, d, ".")
	r.Meta = MetaFromData(d, Meta{})
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| Machine | Intel(R) Xeon(R) Processor, 2 cores, linux/amd64 |", // from the recorded benchreport-* and goos/goarch lines
		"| Go | go1.26.8 |",
		"| client-go | v0.37.2 |",
		"| Date | 2026-11-21T18:04:11Z |",
		"| Command | `cd bench && go run ./cmd/benchreport -count 2` |",
		"| `BenchmarkIndexerAdd` | ns/op | lower |",
		"## Problems",
		"- **error** (missing pair) BenchmarkOnlyTyped/keys=100: impl=typed has results but impl=upstream has none",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	if strings.Contains(md, "![") {
		t.Error("Markdown embeds a chart although none was given")
	}
}

func TestUpdateReadme(t *testing.T) {
	d := readTestdata(t, "paired.txt")
	r := buildAll(t, d, ".")
	r.Meta = fixedMeta
	o := ReadmeOptions{Chart: "docs/benchmarks.svg", Markdown: "BENCHMARKS.md"}

	dir := t.TempDir()
	in, err := os.ReadFile(filepath.Join(testdata, "readme-input.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, in, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := UpdateReadme(readme, r, o); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(readme)
	checkGolden(t, "readme.md", got)

	// Regenerating is idempotent: the markers stay and nothing doubles.
	if err := UpdateReadme(readme, r, o); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(readme)
	if !bytes.Equal(got, again) {
		t.Error("a second update changed the README")
	}

	// Without markers the README is left alone.
	plain := filepath.Join(dir, "PLAIN.md")
	os.WriteFile(plain, []byte("# informer\n\nNo markers here.\n"), 0o644)
	if err := UpdateReadme(plain, r, o); !errors.Is(err, ErrNoMarkers) {
		t.Errorf("UpdateReadme without markers: err = %v, want ErrNoMarkers", err)
	}
	if b, _ := os.ReadFile(plain); string(b) != "# informer\n\nNo markers here.\n" {
		t.Errorf("README without markers was changed: %q", b)
	}
	// Markers in the wrong order count as missing.
	if _, err := replaceBetweenMarkers([]byte(ReadmeEnd+"\n"+ReadmeStart), nil); !errors.Is(err, ErrNoMarkers) {
		t.Errorf("reversed markers: err = %v", err)
	}
	if err := UpdateReadme(filepath.Join(dir, "missing.md"), r, o); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing README: err = %v", err)
	}
}
