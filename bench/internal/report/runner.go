package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"
)

// A Runner compiles, lists and runs the benchmarks of some packages.
//
// Each package's test binary is built once (go test -c). Its top-level
// benchmarks are listed (-test.list) and the ones whose name matches the
// first element of the -bench pattern run one per process, in Count
// interleaved rounds of -test.count 1: round 1 runs every benchmark once,
// then round 2, and so on. Interleaving spreads slow drift of the machine
// (other builds, thermal) over both impls and all workloads, and a time
// budget then costs every benchmark the same number of runs instead of
// dropping the last ones. Runs use -test.v so that a panic is blamed on the
// right sub-benchmark. All output is appended to Raw as it arrives, so an
// interrupted run leaves its partial results.
type Runner struct {
	Go        string   // go command; "go" if empty
	Dirs      []string // package directories
	Matcher   *Matcher
	Count     int           // rounds (samples per benchmark)
	Benchtime string        // -test.benchtime
	Budget    time.Duration // for messages; the deadline is the context's
	Raw       io.Writer     // receives all benchmark output
	Log       io.Writer     // progress
	Verbose   bool          // copy benchmark output to Log

	now    func() time.Time // for tests; time.Now if nil
	rawErr error            // first error writing Raw
}

// ErrNoBenchmarks is returned by Prepare when nothing is selected.
var ErrNoBenchmarks = errors.New("benchreport: no benchmark selected")

// A Plan is the built test binaries and the selected benchmarks.
type Plan struct {
	jobs  []*job
	tmp   string
	start time.Time
}

// Benchmarks returns the number of selected top-level benchmarks.
func (p *Plan) Benchmarks() int { return len(p.jobs) }

// Close removes the test binaries.
func (p *Plan) Close() error { return os.RemoveAll(p.tmp) }

type job struct {
	pkg, dir, bin, name    string
	runs                   int
	failed, empty, skipped bool
}

// Prepare builds the test binaries and lists the selected benchmarks. It
// returns an error wrapping ErrNoBenchmarks when nothing is selected, with
// the problems that explain why. The caller must Close the plan.
func (r *Runner) Prepare(ctx context.Context) (*Plan, []Problem, error) {
	if r.now == nil {
		r.now = time.Now
	}
	if r.Go == "" {
		r.Go = "go"
	}
	tmp, err := os.MkdirTemp("", "benchreport-")
	if err != nil {
		return nil, nil, err
	}
	plan := &Plan{tmp: tmp, start: r.now()}
	var probs []Problem
	var available []string
	for i, dir := range r.Dirs {
		jobs, all, p := r.prepare(ctx, dir, filepath.Join(tmp, fmt.Sprintf("pkg%d.test", i)))
		probs = append(probs, p...)
		plan.jobs = append(plan.jobs, jobs...)
		available = append(available, all...)
	}
	if len(plan.jobs) > 0 {
		return plan, probs, nil
	}
	plan.Close()
	switch {
	case HasErrors(probs):
		err = fmt.Errorf("%w: the packages could not be built or listed", ErrNoBenchmarks)
	case len(available) == 0:
		err = fmt.Errorf("%w: no benchmarks in %s", ErrNoBenchmarks, strings.Join(r.Dirs, ", "))
	default:
		err = fmt.Errorf("%w: -bench %q matches none of %s", ErrNoBenchmarks, r.Matcher, abbreviate(available, 30))
	}
	return nil, probs, err
}

// Run runs the planned benchmarks and returns the problems of the run itself
// (time budget, interruption, benchmarks without results). Benchmark
// failures are in Raw, as "--- FAIL" lines and panics, and are found when Raw
// is read back. ctx carries the time budget as its deadline.
func (r *Runner) Run(ctx context.Context, plan *Plan) []Problem {
	var probs []Problem
	jobs, start := plan.jobs, plan.start
	r.logf("%d benchmark(s), %d round(s) of -test.count 1 -test.benchtime %s, budget %s", len(jobs), r.Count, r.Benchtime, fmtBudget(r.Budget))

	stopped := ""
rounds:
	for round := 1; round <= r.Count; round++ {
		roundStart := r.now()
		for i, j := range jobs {
			if j.failed || j.empty {
				continue
			}
			if ctx.Err() != nil {
				stopped = stopReason(ctx, r.Budget)
				break rounds
			}
			r.logf("[round %d/%d] [%d/%d] %s (elapsed %s)", round, r.Count, i+1, len(jobs), j.name, r.since(start))
			r.runOne(ctx, j)
			if ctx.Err() != nil {
				stopped = stopReason(ctx, r.Budget)
				break rounds
			}
		}
		if round == 1 && r.Count > 1 {
			roundTime := r.now().Sub(roundStart)
			need := r.now().Sub(start) + time.Duration(r.Count-1)*roundTime
			r.logf("round 1 took %s; %d rounds need about %s in all", roundTime.Round(time.Second), r.Count, need.Round(time.Second))
			if r.Budget > 0 && need > r.Budget {
				r.logf("warning: at this pace the %s budget ends the run early; every benchmark keeps the same number of runs", fmtBudget(r.Budget))
			}
		}
	}
	if stopped != "" {
		short := 0
		var none []string
		for _, j := range jobs {
			if !j.failed && !j.empty && j.runs < r.Count {
				short++
			}
			if !j.failed && !j.empty && j.runs == 0 {
				none = append(none, j.name)
			}
		}
		text := fmt.Sprintf("%s after %s: %d of %d benchmark(s) have fewer than %d runs", stopped, r.since(start), short, len(jobs), r.Count)
		if len(none) > 0 {
			text += "; not measured at all: " + strings.Join(none, ", ")
		}
		probs = append(probs, Problem{Severity: Warning, Kind: KindRun, Text: text})
		r.logf("%s: stopping", stopped)
	}
	if r.rawErr != nil {
		probs = append(probs, Problem{Severity: Error, Kind: KindRun, Text: "writing the raw output: " + r.rawErr.Error()})
	}
	for _, j := range jobs {
		if j.empty && !j.skipped {
			probs = append(probs, Problem{Severity: Warning, Kind: KindRun, Where: j.pkg,
				Text: j.name + " produced no results (skipped, or no sub-benchmarks)"})
		}
	}
	r.logf("done in %s", r.since(start))
	return probs
}

// cutPrefix starts the line the runner writes to Raw after a run that the
// time budget or an interruption ended: "# benchreport: BenchmarkX stopped
// after 3s: ...". Read takes it back, so that the sub-benchmarks that run
// never came to are reported as cut short, not as failed.
const cutPrefix = "# benchreport: "

func stopReason(ctx context.Context, budget time.Duration) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "time budget of " + fmtBudget(budget) + " used up"
	}
	return "interrupted"
}

func fmtBudget(d time.Duration) string {
	if d <= 0 {
		return "none"
	}
	return d.String()
}

// prepare builds the test binary of dir and lists its selected benchmarks.
func (r *Runner) prepare(ctx context.Context, dir, bin string) (jobs []*job, all []string, probs []Problem) {
	fail := func(format string, args ...any) ([]*job, []string, []Problem) {
		return nil, nil, []Problem{{Severity: Error, Kind: KindRun, Where: dir, Text: fmt.Sprintf(format, args...)}}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fail("%v", err)
	}
	out, err := r.command(ctx, abs, r.Go, "list", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			return fail("go list stopped: %s", stopReason(ctx, r.Budget))
		}
		return fail("not a Go package: %s", firstLines(out, 5))
	}
	pkg := strings.TrimSpace(string(out))
	t := r.now()
	r.logf("building test binary of %s", pkg)
	if out, err := r.command(ctx, abs, r.Go, "test", "-c", "-o", bin, ".").CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			return fail("building the test binary of %s stopped: %s (the build counts against -budget)", pkg, stopReason(ctx, r.Budget))
		}
		p := Problem{Severity: Error, Kind: KindRun, Where: pkg, Text: "go test -c failed: " + err.Error(),
			Detail: strings.Split(firstLines(out, maxDetail), "\n")}
		return nil, nil, []Problem{p}
	}
	if _, err := os.Stat(bin); err != nil {
		return fail("%s has no test files", pkg)
	}
	r.logf("built in %s", r.since(t))
	out, err = r.command(ctx, abs, bin, "-test.list", "^Benchmark").CombinedOutput()
	if err != nil && ctx.Err() != nil {
		return fail("listing the benchmarks of %s stopped: %s", pkg, stopReason(ctx, r.Budget))
	}
	if err != nil {
		return fail("listing benchmarks of %s failed: %v: %s", pkg, err, firstLines(out, 5))
	}
	for _, name := range strings.Fields(string(out)) {
		if !strings.HasPrefix(name, "Benchmark") {
			continue
		}
		all = append(all, name)
		if r.Matcher.MatchTop(name) {
			jobs = append(jobs, &job{pkg: pkg, dir: abs, bin: bin, name: name})
		}
	}
	return jobs, all, nil
}

// runOne runs one top-level benchmark once, appending its output to Raw.
// A failure is marked so the benchmark is not run again; a non-zero exit
// without a recognisable failure is written to Raw as a "--- FAIL" line.
func (r *Runner) runOne(ctx context.Context, j *job) {
	var buf bytes.Buffer
	out := io.Writer(&buf)
	if r.Verbose {
		out = io.MultiWriter(&buf, r.Log)
	}
	// pkg: is what go test prints too; writing it first attributes a
	// failure that happens before the testing package prints its header.
	raw := &errWriter{w: r.Raw, err: &r.rawErr}
	fmt.Fprintf(raw, "pkg: %s\n", j.pkg)
	w := &tee{a: raw, b: out}
	cmd := r.command(ctx, j.dir, j.bin, "-test.run", "^$", "-test.bench", "^"+regexp.QuoteMeta(j.name)+"$",
		"-test.count", "1", "-test.benchtime", r.Benchtime, "-test.benchmem", "-test.v")
	cmd.Stdout, cmd.Stderr = w, w
	t := r.now()
	err := cmd.Run()
	took := r.since(t)

	fails, _, _ := scanFailures(buf.Bytes(), "")
	results := 0
	br := benchfmt.NewReader(bytes.NewReader(buf.Bytes()), "")
	for br.Scan() {
		if _, ok := br.Result().(*benchfmt.Result); ok {
			results++
		}
	}
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(raw, "%s%s stopped after %s: %s\n", cutPrefix, j.name, took, stopReason(ctx, r.Budget))
		r.logf("    stopped after %s", took)
		return
	case err != nil:
		j.failed = true
		specific := false
		for _, f := range fails {
			if f.Benchmark != "" && !f.Skipped {
				specific = true
			}
		}
		if !specific {
			fmt.Fprintf(raw, "--- FAIL: %s (benchreport: test binary: %v)\n", j.name, err)
		}
		msg := err.Error()
		for _, f := range fails {
			if !f.Skipped {
				msg = f.Benchmark + ": " + f.Message
				break
			}
		}
		r.logf("    FAIL after %s: %s (not run again)", took, msg)
		return
	}
	j.runs++
	if results == 0 {
		j.empty = true
		for _, f := range fails {
			j.skipped = j.skipped || (f.Skipped && f.Benchmark == j.name)
		}
		r.logf("    no results after %s (not run again)", took)
		return
	}
	r.logf("    ok %s, %d results", took, results)
}

func (r *Runner) command(ctx context.Context, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

func (r *Runner) since(t time.Time) time.Duration {
	return r.now().Sub(t).Round(100 * time.Millisecond)
}

func (r *Runner) logf(format string, args ...any) {
	if r.Log != nil {
		fmt.Fprintf(r.Log, "benchreport: "+format+"\n", args...)
	}
}

// errWriter keeps the first write error in *err and drops later writes, so
// one full disk is reported once, not as a failure of every benchmark.
type errWriter struct {
	w   io.Writer
	err *error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if *e.err != nil {
		return len(p), nil
	}
	if _, err := e.w.Write(p); err != nil {
		*e.err = err
	}
	return len(p), nil
}

// tee writes to a and b. exec gives Stdout and Stderr one goroutine when they
// are the same comparable writer, so Write is never called concurrently.
type tee struct{ a, b io.Writer }

func (t *tee) Write(p []byte) (int, error) {
	if _, err := t.a.Write(p); err != nil {
		return 0, err
	}
	return t.b.Write(p)
}

func firstLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "... ("+strconv.Itoa(len(lines)-n)+" more lines)")
	}
	return strings.Join(lines, "\n")
}

// benchFunc matches the declaration of a benchmark in a test file.
var benchFunc = regexp.MustCompile(`(?m)^func Benchmark[^(]*\(`)

// BenchPackages returns the directories of the packages of the module at
// root whose test files declare Benchmark functions (the e2e module keeps its
// benchmarks in whichever packages need the harness).
func BenchPackages(ctx context.Context, goCmd, root string) ([]string, error) {
	cmd := exec.CommandContext(ctx, goCmd, "list", "-f",
		"{{.Dir}}{{range .TestGoFiles}}\t{{.}}{{end}}{{range .XTestGoFiles}}\t{{.}}{{end}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		msg := err.Error()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			msg = firstLines(ee.Stderr, 5)
		}
		return nil, fmt.Errorf("benchreport: listing the packages of %s: %s", root, msg)
	}
	var dirs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Split(line, "\t")
		for _, f := range fields[1:] {
			src, err := os.ReadFile(filepath.Join(fields[0], f))
			if err != nil {
				return nil, err
			}
			if benchFunc.Match(src) {
				dirs = append(dirs, fields[0])
				break
			}
		}
	}
	return dirs, nil
}
