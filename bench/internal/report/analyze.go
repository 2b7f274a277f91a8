package report

import (
	"errors"
	"fmt"
	"math"
	"path"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// Confidence is the level of the confidence intervals around medians, as in
// benchstat's default.
const Confidence = 0.95

// ErrNoMatch is returned by Build when -bench selects none of the workloads
// that are present.
var ErrNoMatch = errors.New("benchreport: -bench matches no workload")

// A Report is the paired comparison ready to be rendered.
type Report struct {
	Meta     Meta
	Rows     []Row
	Problems []Problem
	// MinN and MaxN are the smallest and largest sample sizes of the rows.
	MinN, MaxN int
	// Geomeans holds, per unit, the geometric mean of the typed/upstream
	// ratios of the rows that have both sides (benchstat's summary row).
	Geomeans []Geomean
}

// A Geomean summarizes the ratios of one unit over all workloads.
type Geomean struct {
	Unit   string // as displayed
	Better int
	Ratio  float64
	N      int // workloads it covers
}

// A Row compares one unit of one workload.
type Row struct {
	Workload string // display name: the workload, qualified when needed
	First    bool   // first row of its workload
	Unit     string // as written in the input ("ns/op")
	Tidy     string // benchunit-tidied unit ("sec/op"), the values' unit
	Better   int    // -1: lower is better, +1: higher is better

	Upstream, Typed *Stat // nil when that side is missing
	// Ratio is typed center / upstream center: 1 when both are 0, +Inf when
	// only upstream is 0, NaN when a side is missing.
	Ratio float64
	// Floor is the workload's impl=floor, nil when it has none; TypedFloor
	// and UpstreamFloor are each side's center over its center, NaN
	// without it (as Ratio).
	Floor                     *Stat
	TypedFloor, UpstreamFloor float64
	// Cmp is benchmath's comparison of the two samples (nil when a side is
	// missing).
	Cmp *benchmath.Comparison
}

// A Stat is one side of a row.
type Stat struct {
	Sample  *benchmath.Sample
	Summary benchmath.Summary
}

// Significant reports whether benchmath rejects "same distribution" for the
// row (p <= alpha, benchstat's rule).
func (r Row) Significant() bool { return r.Cmp != nil && r.Cmp.P <= r.Cmp.Alpha }

// Verdict is "better" or "worse" for typed when the difference is
// significant, "~" when it is not, and "" when a side is missing.
func (r Row) Verdict() string {
	switch {
	case r.Cmp == nil || math.IsNaN(r.Ratio):
		return ""
	case !r.Significant() || r.Ratio == 1:
		return "~"
	case (r.Ratio < 1) == (r.Better < 0):
		return "better"
	default:
		return "worse"
	}
}

// Build pairs the selected workloads of d and summarizes them. It returns
// ErrNoMatch (wrapped, with the workloads present) when m selects none.
func Build(d *Data, m *Matcher) (*Report, error) {
	var series []*Series
	for _, s := range d.Series {
		if m.Match(s.Workload) {
			series = append(series, s)
		}
	}
	if len(series) == 0 && len(d.Series) > 0 {
		var have []string
		for _, s := range d.Series {
			if !slices.Contains(have, s.Workload) {
				have = append(have, s.Workload)
			}
		}
		return nil, fmt.Errorf("%w %q; present: %s", ErrNoMatch, m, abbreviate(have, 20))
	}

	r := &Report{}
	r.Problems = append(r.Problems, d.Problems...)
	r.Problems = append(r.Problems, failureProblems(d.Failures, m)...)
	if len(d.Series) == 0 {
		r.Problems = append(r.Problems, Problem{Severity: Error, Kind: KindInput, Text: "no benchmark results"})
	}

	pkgs, procs := map[string]bool{}, map[int]bool{}
	for _, s := range series {
		pkgs[s.Pkg], procs[s.Procs] = true, true
	}
	failed := make(map[implKey]runState)
	for _, f := range d.Failures {
		n := parseName(f.Benchmark)
		st := failedRun
		if f.Skipped {
			st = skippedRun
		}
		failed[implKey{f.Pkg, n.workload, n.impl}] = max(failed[implKey{f.Pkg, n.workload, n.impl}], st)
	}
	stats := make(map[string]int) // benchmath warning -> rows
	for _, s := range series {
		name := s.Workload
		if len(pkgs) > 1 && s.Pkg != "" {
			name = path.Base(s.Pkg) + "." + name
		}
		if len(procs) > 1 {
			name = fmt.Sprintf("%s-%d", name, s.Procs)
		}
		top, _, _ := strings.Cut(s.Workload, "/")
		if d.Cut[CutRun{s.Pkg, top}] {
			for _, impl := range []string{ImplUpstream, ImplTyped} {
				k := implKey{s.Pkg, s.Workload, impl}
				failed[k] = max(failed[k], cutRun)
			}
		}
		rows, probs := compareSeries(d.Units, failed, name, s, stats)
		r.Rows = append(r.Rows, rows...)
		r.Problems = append(r.Problems, probs...)
	}
	for _, w := range sortedKeys(stats) {
		r.Problems = append(r.Problems, Problem{Severity: Warning, Kind: KindStats,
			Text: fmt.Sprintf("%s (×%d)", w, stats[w])})
	}
	r.Geomeans = geomeans(r.Rows)
	for _, row := range r.Rows {
		for _, st := range []*Stat{row.Upstream, row.Typed} {
			if st == nil {
				continue
			}
			n := len(st.Sample.Values)
			if r.MinN == 0 || n < r.MinN {
				r.MinN = n
			}
			r.MaxN = max(r.MaxN, n)
		}
	}
	return r, nil
}

type implKey struct{ pkg, workload, impl string }

type runState int

const (
	_          runState = iota
	cutRun              // the runner stopped the top-level benchmark part way
	skippedRun          // these two outrank cutRun: they say more
	failedRun
)

// compareSeries turns one workload into rows, one per unit.
func compareSeries(units benchfmt.UnitMetadataMap, failed map[implKey]runState, name string, s *Series, stats map[string]int) ([]Row, []Problem) {
	var probs []Problem
	for _, impl := range sortedKeys(s.Impls) {
		m := s.Impls[impl]
		switch impl {
		case ImplUpstream, ImplTyped, ImplFloor:
		case "":
			probs = append(probs, Problem{Severity: Error, Kind: KindMissingPair, Where: name,
				Text: fmt.Sprintf("%s has no impl= element (%d result(s)): it cannot be paired", name, len(m.Values[m.Units[0]]))})
		default:
			probs = append(probs, Problem{Severity: Warning, Kind: KindImpl, Where: name,
				Text: fmt.Sprintf("%s: impl=%s is neither upstream nor typed; ignored", name, impl)})
		}
	}
	up, ty, fl := s.Impls[ImplUpstream], s.Impls[ImplTyped], s.Impls[ImplFloor]
	if up == nil && ty == nil {
		return nil, probs
	}
	if up == nil || ty == nil {
		have, miss := ImplTyped, ImplUpstream
		if ty == nil {
			have, miss = ImplUpstream, ImplTyped
		}
		why, sev := "", Error
		switch failed[implKey{s.Pkg, s.Workload, miss}] {
		case failedRun:
			why = " (it failed)"
		case skippedRun:
			why = " (it was skipped)"
		case cutRun:
			// Not a defect of the benchmark: the run was stopped before it
			// came to this side, which the run's own warning explains.
			why, sev = " (its run was stopped before it: time budget or interruption)", Warning
		}
		probs = append(probs, Problem{Severity: sev, Kind: KindMissingPair, Where: name,
			Text: fmt.Sprintf("%s: impl=%s has results but impl=%s has none%s", name, have, miss, why)})
	}

	var rows []Row
	for _, unit := range unitOrder(up, ty) {
		row := Row{Workload: name, First: len(rows) == 0, Tidy: unit, Ratio: math.NaN(), TypedFloor: math.NaN(), UpstreamFloor: math.NaN()}
		row.Better = betterOf(units, unit)
		assumption := units.GetAssumption(unit)
		side := func(m *Measurements) *Stat {
			if m == nil || m.Values[unit] == nil {
				return nil
			}
			row.Unit = m.Orig[unit]
			smp := benchmath.NewSample(slices.Clone(m.Values[unit]), &benchmath.DefaultThresholds)
			st := &Stat{Sample: smp, Summary: assumption.Summary(smp, Confidence)}
			for _, w := range append(slices.Clone(smp.Warnings), st.Summary.Warnings...) {
				stats[w.Error()]++
			}
			return st
		}
		row.Upstream, row.Typed = side(up), side(ty)
		if row.Floor = side(fl); row.Floor != nil {
			if row.Typed != nil {
				row.TypedFloor = ratio(row.Floor.Summary.Center, row.Typed.Summary.Center)
			}
			if row.Upstream != nil {
				row.UpstreamFloor = ratio(row.Floor.Summary.Center, row.Upstream.Summary.Center)
			}
		}
		switch {
		case row.Upstream != nil && row.Typed != nil:
			cmp := assumption.Compare(row.Upstream.Sample, row.Typed.Sample)
			row.Cmp = &cmp
			row.Ratio = ratio(row.Upstream.Summary.Center, row.Typed.Summary.Center)
			for _, w := range cmp.Warnings {
				stats[w.Error()]++
			}
		case up != nil && ty != nil && !(row.Upstream == nil && typedOnlyUnits[row.Unit]):
			only, other := ImplTyped, ImplUpstream
			if row.Typed == nil {
				only, other = ImplUpstream, ImplTyped
			}
			probs = append(probs, Problem{Severity: Error, Kind: KindUnits, Where: name,
				Text: fmt.Sprintf("%s: unit %s is reported by impl=%s only, not by impl=%s", name, row.Unit, only, other)})
		}
		rows = append(rows, row)
	}
	return rows, probs
}

// typedOnlyUnits are the units only our informers can report, such as
// what Stats tells of their cache (store-B/object, beside the heap
// measured as B/object): shown with no ratio, never a problem.
var typedOnlyUnits = map[string]bool{"store-B/object": true}

// unitOrder returns the tidied units of both sides: time, bytes and
// allocations first, then custom metrics in order of appearance.
func unitOrder(ms ...*Measurements) []string {
	var out []string
	for _, std := range []string{"sec/op", "B/op", "allocs/op"} {
		for _, m := range ms {
			if m != nil && m.Values[std] != nil && !slices.Contains(out, std) {
				out = append(out, std)
			}
		}
	}
	for _, m := range ms {
		if m == nil {
			continue
		}
		for _, u := range m.Units {
			if !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	return out
}

func ratio(upstream, typed float64) float64 {
	if upstream == 0 {
		if typed == 0 {
			return 1
		}
		return math.Inf(1)
	}
	return typed / upstream
}

// betterOf returns -1 when lower values of the tidied unit are better and +1
// when higher are. Unit metadata in the input ("Unit x better=higher") wins;
// then benchfmt's defaults (sec/op, B/op, allocs/op, B/s); then rates (a unit
// ending in "/s", such as events/s) are higher-is-better and everything else
// (B/object, p50-ns, p99-ns, heap-B, ...) is lower-is-better.
func betterOf(units benchfmt.UnitMetadataMap, unit string) int {
	if b := units.GetBetter(unit); b != 0 {
		return b
	}
	if strings.HasSuffix(unit, "/s") || strings.HasSuffix(unit, "/sec") {
		return 1
	}
	return -1
}

// geomeans computes the geometric mean of the ratios per unit, over rows
// that have both sides and a finite positive ratio.
func geomeans(rows []Row) []Geomean {
	var out []Geomean
	idx := make(map[string]int)
	logs := make(map[string]float64)
	for _, r := range rows {
		if r.Cmp == nil || !(r.Ratio > 0) || math.IsInf(r.Ratio, 0) {
			continue
		}
		i, ok := idx[r.Tidy]
		if !ok {
			i = len(out)
			idx[r.Tidy] = i
			out = append(out, Geomean{Unit: r.Unit, Better: r.Better})
		}
		out[i].N++
		logs[r.Tidy] += math.Log(r.Ratio)
	}
	for t, i := range idx {
		out[i].Ratio = math.Exp(logs[t] / float64(out[i].N))
	}
	return out
}

// failureProblems turns failures of the selected benchmarks into problems:
// one per benchmark and message, with repeats counted, and without the
// detail-less "--- FAIL" of a parent whose sub-benchmark failed.
func failureProblems(fails []Failure, m *Matcher) []Problem {
	type key struct{ pkg, bench, msg string }
	counts := make(map[key]int)
	var kept []Failure
	for _, f := range fails {
		n := parseName(f.Benchmark)
		if f.Benchmark != "" && !m.MatchTop(strings.Split(n.workload, "/")[0]) {
			continue
		}
		if f.Benchmark != "" && !m.Match(n.workload) && strings.Contains(n.workload, "/") {
			continue
		}
		if len(f.Detail) == 0 && f.Message == "--- FAIL" && hasFailedChild(fails, f) {
			continue
		}
		k := key{f.Pkg, f.Benchmark, f.Message}
		if counts[k]++; counts[k] == 1 {
			kept = append(kept, f)
		}
	}
	var out []Problem
	for _, f := range kept {
		p := Problem{Severity: Error, Kind: KindFailure, Where: f.Where(), Detail: f.Detail}
		what := f.Benchmark
		if what == "" {
			what = "package " + f.Pkg
			if f.Pkg == "" {
				what = "go test"
			}
		}
		switch {
		case f.Skipped:
			p.Severity, p.Kind = Warning, KindSkipped
			p.Text = what + " was skipped"
			if len(f.Detail) > 0 {
				p.Text += ": " + f.Detail[len(f.Detail)-1]
				p.Detail = nil
			}
		default:
			p.Text = what + " failed: " + f.Message
		}
		if c := counts[key{f.Pkg, f.Benchmark, f.Message}]; c > 1 {
			p.Text += fmt.Sprintf(" (%d times)", c)
		}
		out = append(out, p)
	}
	return out
}

// hasFailedChild reports whether a sub-benchmark of parent failed too; the
// testing package prints "--- FAIL" for every ancestor of a failed benchmark.
func hasFailedChild(fails []Failure, parent Failure) bool {
	for _, f := range fails {
		if f.Pkg == parent.Pkg && !f.Skipped && strings.HasPrefix(f.Benchmark, parent.Benchmark+"/") {
			return true
		}
	}
	return false
}

func abbreviate(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, ... (%d more)", strings.Join(names[:max], ", "), len(names)-max)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
