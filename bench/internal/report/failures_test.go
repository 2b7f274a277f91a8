package report

import (
	"os"
	"path/filepath"
	"testing"
)

func TestScanFailures(t *testing.T) {
	type want struct {
		bench   string
		msg     string
		line    int
		skipped bool
		detail  int    // number of detail lines
		first   string // first detail line
	}
	tests := []struct {
		file string
		want []want
	}{
		{"paired.txt", nil},
		{"problems.txt", []want{
			// -v output names the sub-benchmark before it runs, so the
			// panic is blamed on impl=typed, not on impl=upstream above it.
			{"BenchmarkReplace/known=100000/impl=typed", "panic: runtime error: index out of range [100000] with length 100000", 61, false, 10, "goroutine 38 [running]:"},
			// -v prints the log lines before "--- FAIL".
			{"BenchmarkInformerSync/impl=typed", "--- FAIL", 85, false, 2, "informer_bench_test.go:141: starting informer with 10000 objects"},
			// The parent's detail-less "--- FAIL" is kept here and dropped by Build.
			{"BenchmarkInformerSync", "--- FAIL", 86, false, 0, ""},
			{"BenchmarkE2EColdStart", "--- SKIP", 113, true, 1, "e2e_bench_test.go:31: kube-apiserver binary not found in e2e/.bin; run .ci/run first"},
		}},
		{"plain-panic.txt", []want{
			// Plain go test output: the log lines follow "--- FAIL".
			{"BenchmarkFIFOPop/impl=typed-2", "--- FAIL", 9, false, 1, `fifo_bench_test.go:61: Pop returned key "ns/obj-17", want "ns/obj-16"`},
			{"BenchmarkFIFOPop", "--- FAIL", 11, false, 0, ""},
			// "exit status 2" is not kept as detail; the package-level
			// FAIL lines are dropped since specific failures exist.
			{"BenchmarkFIFOClose/impl=typed-2", "panic: close of closed channel", 15, false, 10, "goroutine 412 [running]:"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(testdata, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, lines, _ := scanFailures(data, tt.file)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d failures, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Benchmark != w.bench || g.Message != w.msg || g.Line != w.line || g.Skipped != w.skipped ||
					g.Pkg != "github.com/typedkube/informer" || g.File != tt.file {
					t.Errorf("failure %d = %+v, want %+v", i, g, w)
				}
				if len(g.Detail) != w.detail {
					t.Errorf("failure %d has %d detail lines, want %d: %q", i, len(g.Detail), w.detail, g.Detail)
				} else if w.detail > 0 && g.Detail[0] != w.first {
					t.Errorf("failure %d detail[0] = %q, want %q", i, g.Detail[0], w.first)
				}
				if !lines[w.line] {
					t.Errorf("line %d not marked as a failure line", w.line)
				}
			}
		})
	}
}

func TestScanFailuresPackageOnly(t *testing.T) {
	// A package that fails without naming a benchmark (e.g. TestMain exits
	// non-zero) is reported as such.
	data := []byte("goos: linux\npkg: example.com/p\nsetup: cannot start etcd\nFAIL\texample.com/p\t0.012s\n")
	got, _, _ := scanFailures(data, "x.txt")
	if len(got) != 1 || got[0].Benchmark != "" || got[0].Message != "FAIL example.com/p 0.012s" || got[0].Pkg != "example.com/p" {
		t.Fatalf("got %+v", got)
	}
}

func TestSplitFailLine(t *testing.T) {
	tests := []struct{ in, name, note string }{
		{"BenchmarkX-2", "BenchmarkX-2", ""},
		{"BenchmarkX (0.01s)", "BenchmarkX", ""},
		{"BenchmarkX (benchreport: test binary: exit status 2)", "BenchmarkX", "benchreport: test binary: exit status 2"},
	}
	for _, tt := range tests {
		if name, note := splitFailLine(tt.in); name != tt.name || note != tt.note {
			t.Errorf("splitFailLine(%q) = %q, %q; want %q, %q", tt.in, name, note, tt.name, tt.note)
		}
	}
}
