package report

import (
	"bytes"
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
)

func readTestdata(t *testing.T, files ...string) *Data {
	t.Helper()
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join(testdata, f))
	}
	return ReadFiles(paths)
}

func buildAll(t *testing.T, d *Data, pattern string) *Report {
	t.Helper()
	m, err := NewMatcher(pattern)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(d, m)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func findRow(t *testing.T, r *Report, workload, unit string) Row {
	t.Helper()
	for _, row := range r.Rows {
		if row.Workload == workload && row.Unit == unit {
			return row
		}
	}
	t.Fatalf("no row %s %s", workload, unit)
	return Row{}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

// minP6 is the smallest U-test p-value for two samples of 6: every typed
// value below (or above) every upstream value.
const minP6 = 0.0021645021645021645

func TestBuildPaired(t *testing.T) {
	r := buildAll(t, readTestdata(t, "paired.txt"), ".")
	if len(r.Problems) != 0 {
		t.Errorf("unexpected problems: %v", r.Problems)
	}
	if got := len(r.Rows); got != 35 {
		t.Errorf("got %d rows, want 35 (9 workloads × 3 standard units + 8 custom)", got)
	}
	// Medians and ratios below were computed by hand from paired.txt.
	tests := []struct {
		workload, unit       string
		better               int
		upstream, typed      float64 // medians, in the tidied unit
		upLo, upHi           float64 // 95% CI of the upstream median (n=6: min and max)
		ratio                float64
		p                    float64 // 0: only check it is above alpha
		verdict, cmp, ratioS string
	}{
		{"BenchmarkIndexerAdd/objects=1000", "ns/op", -1, 408976.5e-9, 247362e-9, 392815e-9, 434579e-9,
			247362 / 408976.5, minP6, "better", "p=0.002 n=6", "0.605×"},
		// events/s: higher is better, so a ratio above 1 is "better".
		{"BenchmarkWatchThroughput/handlers=1", "events/s", +1, 353298, 611901.5, 334989, 367020,
			611901.5 / 353298, minP6, "better", "p=0.002 n=6", "1.73×"},
		// typed allocates nothing: ratio 0, still a significant improvement.
		{"BenchmarkListIterate/objects=100000", "B/op", -1, 802623, 0, 801246, 807226,
			0, minP6, "better", "p=0.002 n=6", "0×"},
		{"BenchmarkListIterate/objects=100000", "allocs/op", -1, 1, 0, 1, 1,
			0, minP6, "better", "p=0.002 n=6", "0×"},
		// Overlapping samples: no significant difference.
		{"BenchmarkListerSelector/objects=10000", "ns/op", -1, 2394247.5e-9, 2487792e-9, 2320531e-9, 2510534e-9,
			2487792 / 2394247.5, 0, "~", "p=0.132 n=6", "1.04×"},
	}
	for _, tt := range tests {
		t.Run(tt.workload+"/"+tt.unit, func(t *testing.T) {
			row := findRow(t, r, tt.workload, tt.unit)
			if row.Better != tt.better {
				t.Errorf("Better = %d, want %d", row.Better, tt.better)
			}
			if row.Upstream == nil || row.Typed == nil || row.Cmp == nil {
				t.Fatalf("row has a missing side: %+v", row)
			}
			if got := row.Upstream.Summary.Center; !near(got, tt.upstream) {
				t.Errorf("upstream median = %v, want %v", got, tt.upstream)
			}
			if got := row.Typed.Summary.Center; !near(got, tt.typed) {
				t.Errorf("typed median = %v, want %v", got, tt.typed)
			}
			if s := row.Upstream.Summary; !near(s.Lo, tt.upLo) || !near(s.Hi, tt.upHi) || s.Confidence < Confidence {
				t.Errorf("upstream CI = [%v, %v] at %v, want [%v, %v] at >= %v", s.Lo, s.Hi, s.Confidence, tt.upLo, tt.upHi, Confidence)
			}
			if !near(row.Ratio, tt.ratio) {
				t.Errorf("ratio = %v, want %v", row.Ratio, tt.ratio)
			}
			if tt.p != 0 && !near(row.Cmp.P, tt.p) {
				t.Errorf("p = %v, want %v", row.Cmp.P, tt.p)
			}
			if tt.p == 0 && row.Cmp.P <= row.Cmp.Alpha {
				t.Errorf("p = %v, want > %v", row.Cmp.P, row.Cmp.Alpha)
			}
			if got := row.Verdict(); got != tt.verdict {
				t.Errorf("verdict = %q, want %q", got, tt.verdict)
			}
			if got := formatCmp(row); got != tt.cmp {
				t.Errorf("comparison = %q, want %q", got, tt.cmp)
			}
			if got := formatRatio(row.Ratio); got != tt.ratioS {
				t.Errorf("ratio string = %q, want %q", got, tt.ratioS)
			}
		})
	}

	// The first row of each workload is marked, units in standard order.
	var firsts []string
	for _, row := range r.Rows {
		if row.First {
			firsts = append(firsts, row.Workload+" "+row.Unit)
		}
	}
	if len(firsts) != 9 || firsts[0] != "BenchmarkIndexerAdd/objects=1000 ns/op" {
		t.Errorf("first rows = %q", firsts)
	}
	var cold []string
	for _, row := range r.Rows {
		if row.Workload == "BenchmarkColdStart/objects=10000" {
			cold = append(cold, row.Unit)
		}
	}
	if got := strings.Join(cold, " "); got != "ns/op B/op allocs/op B/object heap-B" {
		t.Errorf("ColdStart units = %s", got)
	}

	// Geomeans skip the zero ratios of ListIterate.
	if g := r.Geomeans[0]; g.Unit != "ns/op" || g.N != 9 {
		t.Errorf("geomean[0] = %+v", g)
	}
	if g := r.Geomeans[1]; g.Unit != "B/op" || g.N != 8 {
		t.Errorf("geomean[1] = %+v", g)
	}
}

func TestBuildSelect(t *testing.T) {
	d := readTestdata(t, "paired.txt")
	r := buildAll(t, d, "Watch/handlers=4")
	if len(r.Rows) != 6 {
		t.Fatalf("got %d rows, want the 6 of WatchThroughput/handlers=4", len(r.Rows))
	}
	for _, row := range r.Rows {
		if row.Workload != "BenchmarkWatchThroughput/handlers=4" {
			t.Errorf("unexpected row %s", row.Workload)
		}
	}

	m, _ := NewMatcher("NoSuchBenchmark")
	_, err := Build(d, m)
	if !errors.Is(err, ErrNoMatch) {
		t.Fatalf("Build with a pattern matching nothing: err = %v, want ErrNoMatch", err)
	}
	if !strings.Contains(err.Error(), "BenchmarkIndexerAdd/objects=1000") {
		t.Errorf("error does not list the workloads present: %v", err)
	}
}

func TestBuildProblems(t *testing.T) {
	d := readTestdata(t, "problems.txt", "plain-panic.txt", "does-not-exist.txt", "golden")
	r := buildAll(t, d, ".")
	want := []struct {
		sev  Severity
		kind string
		text string // prefix
	}{
		{Error, KindInput, "cannot read ../../testdata/does-not-exist.txt: stat ../../testdata/does-not-exist.txt: no such file or directory"},
		{Error, KindInput, "cannot read ../../testdata/golden: is a directory"},
		{Error, KindFailure, "BenchmarkReplace/known=100000/impl=typed failed: panic: runtime error: index out of range"},
		{Error, KindFailure, "BenchmarkInformerSync/impl=typed failed: --- FAIL"},
		{Warning, KindSkipped, "BenchmarkE2EColdStart was skipped: e2e_bench_test.go:31: kube-apiserver binary not found"},
		{Error, KindFailure, "BenchmarkFIFOPop/impl=typed-2 failed: --- FAIL"},
		{Error, KindFailure, "BenchmarkFIFOClose/impl=typed-2 failed: panic: close of closed channel"},
		{Error, KindMissingPair, "BenchmarkOnlyTyped/keys=100: impl=typed has results but impl=upstream has none"},
		{Error, KindUnits, "BenchmarkColdStart/objects=10000: unit B/object is reported by impl=typed only, not by impl=upstream"},
		{Error, KindMissingPair, "BenchmarkReplace/known=100000: impl=upstream has results but impl=typed has none (it failed)"},
		{Error, KindMissingPair, "BenchmarkInformerSync: impl=upstream has results but impl=typed has none (it failed)"},
		{Error, KindMissingPair, "BenchmarkNoImpl/objects=10 has no impl= element (1 result(s)): it cannot be paired"},
		{Warning, KindImpl, "BenchmarkFanout: impl=xsync is neither upstream nor typed; ignored"},
		{Error, KindMissingPair, "BenchmarkFIFOClose: impl=upstream has results but impl=typed has none (it failed)"},
		{Warning, KindStats, "need >= 4 samples to detect a difference at alpha level 0.05"},
		{Warning, KindStats, "need >= 6 samples for confidence interval at level 0.95"},
	}
	if len(r.Problems) != len(want) {
		for _, p := range r.Problems {
			t.Log(p)
		}
		t.Fatalf("got %d problems, want %d", len(r.Problems), len(want))
	}
	for i, w := range want {
		p := r.Problems[i]
		if p.Severity != w.sev || p.Kind != w.kind || !strings.HasPrefix(p.Text, w.text) {
			t.Errorf("problem %d = %v\nwant %v: %s: %s", i, p, w.sev, w.kind, w.text)
		}
	}
	if !HasErrors(r.Problems) {
		t.Error("HasErrors = false")
	}

	// Partial results are still reported: the pairs that exist, and the
	// lone sides of the broken ones.
	if row := findRow(t, r, "BenchmarkIndexerAdd", "ns/op"); row.Cmp == nil || row.Cmp.N1 != 2 || row.Cmp.N2 != 2 {
		t.Errorf("IndexerAdd row = %+v, want a 2+2 comparison across the two rounds", row)
	}
	if row := findRow(t, r, "BenchmarkOnlyTyped/keys=100", "ns/op"); row.Upstream != nil || row.Typed == nil || !math.IsNaN(row.Ratio) || rowNote(row) != "no upstream" {
		t.Errorf("OnlyTyped row = %+v", row)
	}
	if row := findRow(t, r, "BenchmarkColdStart/objects=10000", "B/object"); row.Upstream != nil || row.Typed == nil {
		t.Errorf("ColdStart B/object row = %+v", row)
	}
	if row := findRow(t, r, "BenchmarkFanout", "ns/op"); row.Cmp == nil {
		t.Errorf("Fanout row = %+v, want upstream vs typed despite impl=xsync", row)
	}
}

func TestBuildQualifiesNames(t *testing.T) {
	d := newData()
	d.Read([]byte(`pkg: github.com/typedkube/informer
BenchmarkA/impl=upstream-1	10	100 ns/op
BenchmarkA/impl=typed-1	10	50 ns/op
BenchmarkA/impl=upstream-2	10	60 ns/op
BenchmarkA/impl=typed-2	10	30 ns/op
pkg: github.com/typedkube/informer/e2e
BenchmarkA/impl=upstream-2	10	100 ns/op
BenchmarkA/impl=typed-2	10	50 ns/op
`), "inline")
	r := buildAll(t, d, ".")
	var got []string
	for _, row := range r.Rows {
		got = append(got, row.Workload)
	}
	want := "informer.BenchmarkA-1 informer.BenchmarkA-2 e2e.BenchmarkA-2"
	if strings.Join(got, " ") != want {
		t.Errorf("workloads = %q, want %q", got, want)
	}
	var b bytes.Buffer
	if err := WriteSVG(&b, r); err != nil {
		t.Fatal(err)
	}
	if texts := strings.Join(svgText(t, b.Bytes()), "|"); !strings.Contains(texts, "|e2e.A-2|") {
		t.Errorf("chart labels = %s, want e2e.A-2", texts)
	}
}

func TestBetterOf(t *testing.T) {
	meta := newData()
	meta.Read([]byte("Unit custom-score better=higher\nBenchmarkX/impl=typed-2\t1\t5 custom-score\n"), "units")
	tests := []struct {
		units benchfmt.UnitMetadataMap
		unit  string
		want  int
	}{
		{nil, "sec/op", -1},
		{nil, "B/op", -1},
		{nil, "allocs/op", -1},
		{nil, "events/s", +1},
		{nil, "B/s", +1},
		{nil, "B/object", -1},
		{nil, "p99-sec", -1},
		{nil, "heap-B", -1},
		{nil, "custom-score", -1},
		{meta.Units, "custom-score", +1},
	}
	for _, tt := range tests {
		if got := betterOf(tt.units, tt.unit); got != tt.want {
			t.Errorf("betterOf(%s) = %d, want %d", tt.unit, got, tt.want)
		}
	}
}

// A pair that is missing a side because the runner stopped the run before
// that side is a warning that says so; one whose run ended is still an error.
func TestBuildCutRun(t *testing.T) {
	d := readTestdata(t, "cut.txt")
	want := map[CutRun]bool{
		{"github.com/typedkube/informer/bench", "BenchmarkListerSelector"}: true,
		{"github.com/typedkube/informer/other", "BenchmarkOnlyUpstream"}:   true,
	}
	if !maps.Equal(want, d.Cut) {
		t.Errorf("Cut = %v, want %v", d.Cut, want)
	}
	r := buildAll(t, d, ".")
	var got []string
	for _, p := range r.Problems {
		if p.Kind == KindMissingPair {
			got = append(got, p.Severity.String()+": "+p.Text)
		}
	}
	wantProbs := []string{
		"error: BenchmarkOnlyUpstream: impl=upstream has results but impl=typed has none",
		"warning: BenchmarkListerSelector/scope=all/api=slice: impl=upstream has results but impl=typed has none (its run was stopped before it: time budget or interruption)",
	}
	if !slices.Equal(wantProbs, got) {
		t.Errorf("missing-pair problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantProbs, "\n"))
	}
}

// A workload with impl=floor beside the pair gives each row the floor's
// median and both sides' ratios to it; the Markdown table gets three
// columns more.
func TestBuildFloor(t *testing.T) {
	in := strings.Join([]string{
		"pkg: example.com/e2e",
		"BenchmarkWatchCost/impl=upstream-2 1 4000000000 ns/op 80000 cpu-ns/event",
		"BenchmarkWatchCost/impl=typed-2 1 4000000000 ns/op 64000 cpu-ns/event",
		"BenchmarkWatchCost/impl=floor-2 1 4000000000 ns/op 48000 cpu-ns/event",
		"BenchmarkWatchCost/impl=upstream-2 1 4000000000 ns/op 82000 cpu-ns/event",
		"BenchmarkWatchCost/impl=typed-2 1 4000000000 ns/op 66000 cpu-ns/event",
		"BenchmarkWatchCost/impl=floor-2 1 4000000000 ns/op 50000 cpu-ns/event",
		"BenchmarkColdStart/impl=upstream-2 1 1 ns/op 30 cpu-ns/object",
		"BenchmarkColdStart/impl=typed-2 1 1 ns/op 20 cpu-ns/object",
	}, "\n") + "\n"
	path := filepath.Join(t.TempDir(), "floor.txt")
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	r := buildAll(t, ReadFiles([]string{path}), ".")
	for _, p := range r.Problems {
		if p.Kind == KindImpl {
			t.Errorf("impl=floor reported: %v", p)
		}
	}
	row := findRow(t, r, "BenchmarkWatchCost", "cpu-ns/event")
	if row.Floor == nil || !near(row.TypedFloor, 65000.0/49000) || !near(row.UpstreamFloor, 81000.0/49000) {
		t.Errorf("floor %v, typed/floor %v, upstream/floor %v; want 49000, %v, %v", row.Floor, row.TypedFloor, row.UpstreamFloor, 65000.0/49000, 81000.0/49000)
	}
	if row := findRow(t, r, "BenchmarkColdStart", "cpu-ns/object"); row.Floor != nil || !math.IsNaN(row.TypedFloor) {
		t.Errorf("a workload without a floor has floor %v, typed/floor %v", row.Floor, row.TypedFloor)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| floor | typed/floor | upstream/floor |", "| 1.33× | 1.65× |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the Markdown has no %q:\n%s", want, md.String())
		}
	}
}
