package report

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeBenchmarks stands in for the library's benchmarks: a clean pair with a
// custom metric, a pair whose typed side panics, and one that -bench leaves out.
const fakeBenchmarks = `package fake

import "testing"

var sink []byte

func BenchmarkPair(b *testing.B) {
	for _, impl := range []string{"upstream", "typed"} {
		b.Run("keys=10/impl="+impl, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = make([]byte, 64)
			}
			b.ReportMetric(1000, "events/s")
		})
	}
}

func BenchmarkPanic(b *testing.B) {
	b.Run("impl=upstream", func(b *testing.B) {
		for b.Loop() {
		}
	})
	b.Run("impl=typed", func(b *testing.B) {
		var m map[string]int
		for b.Loop() {
			m["x"]++
		}
	})
}

func BenchmarkSkipped(b *testing.B) {
	b.Skip("no API server binaries")
}

func BenchmarkOther(b *testing.B) {
	for b.Loop() {
	}
}
`

// fakeModule writes a module with fakeBenchmarks and returns its directory.
func fakeModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":        "module example.com/fake\n\ngo 1.26.0\n\nrequire k8s.io/client-go v0.37.2\n",
		"fake.go":       "// Package fake is a stand-in for the informer library.\npackage fake\n",
		"fake_test.go":  fakeBenchmarks,
		"README.md":     "# fake\n\n" + ReadmeStart + "\nold numbers\n" + ReadmeEnd + "\n",
		"docs/.keep":    "",
		"results/.keep": "",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), append([]string{"benchreport"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestMainRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a test binary")
	}
	dir := fakeModule(t)
	raw := filepath.Join(dir, "results", "latest.txt")
	md := filepath.Join(dir, "BENCHMARKS.md")
	svg := filepath.Join(dir, "docs", "benchmarks.svg")
	code, stdout, stderr := runMain(t, "-dir", dir, "-bench", "Pair|Panic|Skipped", "-count", "2", "-benchtime", "1x",
		"-budget", "3m", "-out", raw, "-md", md, "-svg", svg, "-readme", filepath.Join(dir, "README.md"))
	if code != ExitProblems {
		t.Errorf("exit code = %d, want %d (a benchmark panicked)\nstderr:\n%s", code, ExitProblems, stderr)
	}

	// Progress on stderr: which benchmark, which round, elapsed.
	for _, want := range []string{
		"building test binary of example.com/fake",
		"3 benchmark(s), 2 round(s)",
		"[round 1/2] [1/3] BenchmarkPair (elapsed",
		"[round 2/2] [1/3] BenchmarkPair",
		"[round 1/2] [2/3] BenchmarkPanic",
		"[round 1/2] [3/3] BenchmarkSkipped",
		"FAIL after",
		"not run again",
		"wrote " + md,
		"updated the benchmark section of",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "[round 2/2] [2/3] BenchmarkPanic") || strings.Contains(stderr, "[round 2/2] [3/3] BenchmarkSkipped") {
		t.Error("a failed or skipped benchmark was run again")
	}

	// The raw output: recorded meta, results of both rounds, the panic once.
	rawText, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"benchreport-go: go1.", "benchreport-client-go: v0.37.2", "benchreport-count: 2",
		"Unit events/s better=higher", "BenchmarkPair/keys=10/impl=typed-", "panic: assignment to entry in nil map"} {
		if !strings.Contains(string(rawText), want) {
			t.Errorf("raw output lacks %q", want)
		}
	}
	if n := strings.Count(string(rawText), "panic: assignment"); n != 1 {
		t.Errorf("raw output has %d panics, want 1", n)
	}
	if strings.Contains(string(rawText), "BenchmarkOther") {
		t.Error("BenchmarkOther ran although -bench excludes it")
	}

	// The table, the Markdown, the chart and the README.
	for _, want := range []string{"BenchmarkPair/keys=10", "events/s", "higher", "n=2",
		"BenchmarkPanic/impl=typed failed: panic: assignment to entry in nil map",
		"BenchmarkPanic: impl=upstream has results but impl=typed has none (it failed)",
		"warning: skipped", "BenchmarkSkipped was skipped: fake_test.go:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "produced no results") {
		t.Errorf("a skipped benchmark is reported twice:\n%s", stdout)
	}
	mdText, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| `BenchmarkPair/keys=10` | ns/op |", "![typed/upstream ratio per workload](docs/benchmarks.svg)",
		"| client-go | v0.37.2 |", "| Runs | 1 to 2 per benchmark (-count 2), -benchtime 1x |", "## Problems",
		"| Raw output | `results/latest.txt` |"} {
		if !strings.Contains(string(mdText), want) {
			t.Errorf("BENCHMARKS.md lacks %q", want)
		}
	}
	svgBytes, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if texts := strings.Join(svgText(t, svgBytes), " "); !strings.Contains(texts, "Pair/keys=10") {
		t.Errorf("chart lacks the workload: %s", texts)
	}
	readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
	if strings.Contains(string(readme), "old numbers") || !strings.Contains(string(readme), "[BENCHMARKS.md](BENCHMARKS.md)") ||
		!strings.Contains(string(readme), "| `BenchmarkPair/keys=10` |") {
		t.Errorf("README not regenerated:\n%s", readme)
	}
}

func TestMainNothingSelected(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a test binary")
	}
	dir := fakeModule(t)
	raw := filepath.Join(dir, "results", "latest.txt")
	code, _, stderr := runMain(t, "-dir", dir, "-bench", "NoSuchBenchmark", "-out", raw, "-md", "", "-svg", "", "-readme", "")
	if code != ExitProblems {
		t.Errorf("exit code = %d, want %d", code, ExitProblems)
	}
	if !strings.Contains(stderr, `-bench "NoSuchBenchmark" matches none of BenchmarkPair, BenchmarkPanic, BenchmarkSkipped, BenchmarkOther`) {
		t.Errorf("stderr does not explain:\n%s", stderr)
	}
	if _, err := os.Stat(raw); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("raw output was written although nothing ran: %v", err)
	}

	// A directory that is not a package is an error too.
	code, _, stderr = runMain(t, "-dir", filepath.Join(dir, "docs"), "-out", raw, "-md", "", "-svg", "", "-readme", "")
	if code != ExitProblems || !strings.Contains(stderr, "not a Go package") {
		t.Errorf("exit code = %d, stderr:\n%s", code, stderr)
	}
}

func TestMainIn(t *testing.T) {
	out := t.TempDir()
	md, svg, png := filepath.Join(out, "B.md"), filepath.Join(out, "c.svg"), filepath.Join(out, "c.png")
	paired := filepath.Join(testdata, "paired.txt")

	code, stdout, stderr := runMain(t, "-in", paired, "-md", md, "-svg", svg, "-png", png, "-readme", filepath.Join(out, "none.md"))
	if code != ExitOK {
		t.Errorf("exit code = %d, want 0\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "BenchmarkIndexerAdd/objects=1000") || !strings.Contains(stdout, "geomean ns/op: 0.583×") {
		t.Errorf("stdout:\n%s", stdout)
	}
	if !strings.Contains(stderr, "not updating "+filepath.Join(out, "none.md")) {
		t.Errorf("a missing README is not mentioned:\n%s", stderr)
	}
	for _, p := range []string{md, svg, png} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("%s not written: %v", p, err)
		}
	}
	mdText, _ := os.ReadFile(md)
	if !strings.Contains(string(mdText), "](c.svg)") || !strings.Contains(string(mdText), "(input file time)") {
		t.Errorf("Markdown chart link or date wrong:\n%s", mdText)
	}

	// Problems: partial results are written, and the exit code says so.
	code, _, _ = runMain(t, "-in", filepath.Join(testdata, "problems.txt")+","+filepath.Join(testdata, "nope.txt"),
		"-md", md, "-svg", "", "-readme", "")
	if code != ExitProblems {
		t.Errorf("exit code = %d, want %d", code, ExitProblems)
	}
	if b, _ := os.ReadFile(md); !strings.Contains(string(b), "BenchmarkIndexerAdd") || !strings.Contains(string(b), "nope.txt") {
		t.Error("partial report not written")
	}

	// A pattern that selects nothing writes nothing.
	os.Remove(md)
	code, _, stderr = runMain(t, "-in", paired, "-bench", "NoSuch", "-md", md, "-svg", "", "-readme", "")
	if code != ExitProblems || !strings.Contains(stderr, "-bench matches no workload") {
		t.Errorf("exit code = %d, stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(md); err == nil {
		t.Error("report written although -bench matched nothing")
	}
}

func TestMainUsage(t *testing.T) {
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-bench", "Indexer/("}, ExitUsage, "bad -bench pattern"},
		{[]string{"-count", "0"}, ExitUsage, "-count must be at least 1"},
		{[]string{"-benchtime", ""}, ExitUsage, "-benchtime must not be empty"},
		{[]string{"-nosuchflag"}, ExitUsage, "flag provided but not defined"},
		{[]string{"extra"}, ExitUsage, "unexpected arguments"},
		{[]string{"-h"}, ExitOK, "-quick"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := runMain(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.msg) {
				t.Errorf("exit code %d, stderr:\n%s\nwant %d and %q", code, stderr, tt.code, tt.msg)
			}
		})
	}
}

func TestParseFlagsQuick(t *testing.T) {
	o, err := parseFlags([]string{"benchreport", "-quick", "-count", "5"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.count != 5 || o.benchtime != quickBenchtime || o.budget != quickBudget || o.readme != "" ||
		o.md != quickDir+"/BENCHMARKS.md" || o.out != quickDir+"/raw.txt" || o.png != quickDir+"/benchmarks.png" {
		t.Errorf("quick options = %+v", o)
	}
	o, _ = parseFlags([]string{"benchreport"}, &bytes.Buffer{})
	if o.count != defaultCount || o.benchtime != defaultBenchtime || o.budget != defaultBudget || o.readme != "../docs/benchmarks.md" ||
		o.md != "../BENCHMARKS.md" || o.svg != "../docs/benchmarks.svg" || o.dir != ".." || o.e2e {
		t.Errorf("default options = %+v", o)
	}
}

func TestRunnerStops(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a test binary")
	}
	dir := fakeModule(t)
	m, _ := NewMatcher("Pair")
	for _, tt := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want string
	}{
		{"interrupted", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, "interrupted after"},
		{"budget", func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
		}, "time budget of 1h0m0s used up after"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var raw, log bytes.Buffer
			r := &Runner{Dirs: []string{dir}, Matcher: m, Count: 3, Benchtime: "1x", Budget: time.Hour, Raw: &raw, Log: &log}
			ctx, cancel := tt.ctx()
			defer cancel()
			plan, _, err := r.Prepare(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer plan.Close()
			if plan.Benchmarks() != 1 {
				t.Fatalf("%d benchmarks selected, want 1", plan.Benchmarks())
			}
			// Stop before the first run: nothing runs, the report says why.
			if tt.name == "budget" {
				var c2 context.CancelFunc
				ctx, c2 = context.WithDeadline(ctx, time.Now().Add(-time.Second))
				defer c2()
			} else {
				cancel()
			}
			probs := r.Run(ctx, plan)
			if len(probs) != 1 || probs[0].Severity != Warning || !strings.Contains(probs[0].Text, tt.want) ||
				!strings.Contains(probs[0].Text, "1 of 1 benchmark(s) have fewer than 3 runs; not measured at all: BenchmarkPair") {
				t.Errorf("problems = %v, want one warning %q", probs, tt.want)
			}
			if strings.Contains(raw.String(), "Benchmark") {
				t.Errorf("something ran:\n%s", raw.String())
			}
		})
	}
}

func TestBenchPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	root := t.TempDir()
	files := map[string]string{
		"go.mod":                "module example.com/e2e\n\ngo 1.26.0\n",
		"harness/h.go":          "package harness\n",
		"harness/h_test.go":     "package harness\n\nimport \"testing\"\n\nfunc TestH(t *testing.T) {}\n",
		"coldstart/c.go":        "package coldstart\n",
		"coldstart/c_test.go":   "package coldstart_test\n\nimport \"testing\"\n\nfunc BenchmarkColdStart(b *testing.B) {}\n",
		"tools/go.mod":          "module example.com/e2e/tools\n\ngo 1.26.0\n",
		"tools/t_test.go":       "package tools\n\nimport \"testing\"\n\nfunc BenchmarkNotHere(b *testing.B) {}\n",
		"nobench/doc.go":        "package nobench\n",
		"nobench/x_test.go":     "package nobench\n\n// func BenchmarkInAComment(b *testing.B) {}\n",
		"nobench/README.md":     "func BenchmarkInMarkdown(b *testing.B) {}\n",
		"coldstart/testdata/x":  "",
		"coldstart/helper.go":   "package coldstart\n",
		"coldstart/x_bench.txt": "",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dirs, err := BenchPackages(context.Background(), "go", root)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 1 || filepath.Base(dirs[0]) != "coldstart" {
		t.Errorf("BenchPackages = %q, want only coldstart (tools is another module)", dirs)
	}
	if _, err := BenchPackages(context.Background(), "go", filepath.Join(root, "nobench", "README.md")); err == nil {
		t.Error("BenchPackages of a file did not fail")
	}
}
