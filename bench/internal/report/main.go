package report

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Defaults of the full and the quick run.
const (
	defaultCount                   = 6
	defaultBenchtime               = "500ms"
	defaultBudget                  = 18 * time.Minute
	quickCount                     = 1
	quickBenchtime                 = "50ms"
	quickBudget      time.Duration = 0 // a budget could stop a run between its two sides
	quickDir                       = "results/quick"
)

// Exit codes of Main.
const (
	ExitOK       = 0 // report written, no errors
	ExitProblems = 1 // errors (failures, missing pairs, unit mismatches, unreadable input, nothing matched)
	ExitUsage    = 2 // bad command line
)

type options struct {
	dir, bench, in, out, md, svg, png, readme, benchtime, goCmd string
	count                                                       int
	budget                                                      time.Duration
	quick, e2e, verbose                                         bool
	args                                                        []string // os.Args, for the recorded command
}

const usageText = `usage: benchreport [flags]

Runs the paired benchmarks (impl=upstream vs impl=typed) of the informer
library, or reads go test -bench output with -in, and reports the
typed/upstream ratios with benchstat's statistics: a table on stdout, a
Markdown page, an SVG chart (PNG with -png) and the README summary.
Run it from bench/. Exit status: 0 ok, 1 problems (details in the report),
2 bad usage.

`

// Main runs benchreport with args (os.Args) and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		fmt.Fprintln(stderr, err)
		return ExitUsage
	}
	m, err := NewMatcher(o.bench)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitUsage
	}
	cmdline := CommandLine(o.args)
	if base := filepath.Base(workingDir()); base == "bench" {
		cmdline = "cd bench && " + cmdline
	}

	var data *Data
	var meta Meta
	if o.in != "" {
		var paths []string
		for _, p := range strings.Split(o.in, ",") {
			if p = strings.TrimSpace(p); p != "" {
				paths = append(paths, p)
			}
		}
		data = ReadFiles(paths)
		meta = Meta{
			Command:  "unknown (not recorded in the input)",
			Report:   cmdline,
			Go:       "unknown (not recorded in the input)",
			ClientGo: ClientGoVersion(o.dir),
			CPU:      "unknown",
			GOOS:     runtime.GOOS,
			GOARCH:   runtime.GOARCH,
			Bench:    o.bench,
			Inputs:   paths,
		}
		if !data.ModTime.IsZero() {
			meta.Date = data.ModTime.UTC().Format(time.RFC3339) + " (input file time)"
		}
		meta = MetaFromData(data, meta)
	} else {
		var code int
		data, meta, code = measure(ctx, o, m, cmdline, stderr)
		if data == nil {
			return code
		}
	}

	r, err := Build(data, m)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitProblems
	}
	r.Meta = meta
	if err := WriteText(stdout, r); err != nil {
		fmt.Fprintln(stderr, err)
		return ExitProblems
	}
	code := ExitOK
	if HasErrors(r.Problems) {
		code = ExitProblems
	}
	if err := writeOutputs(o, r, stderr); err != nil {
		fmt.Fprintln(stderr, err)
		code = ExitProblems
	}
	if code != ExitOK {
		fmt.Fprintf(stderr, "benchreport: the report has errors (see Problems)\n")
	}
	return code
}

// measure runs the benchmarks into the raw output file and reads it back.
// It returns a nil Data (and an exit code) when nothing could be run.
func measure(ctx context.Context, o options, m *Matcher, cmdline string, stderr io.Writer) (*Data, Meta, int) {
	if o.budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.budget)
		defer cancel()
	}
	dirs := []string{o.dir}
	if o.e2e {
		e2e, err := BenchPackages(ctx, o.goCmd, filepath.Join(o.dir, "e2e"))
		if err != nil {
			fmt.Fprintln(stderr, err)
			return nil, Meta{}, ExitProblems
		}
		if len(e2e) == 0 {
			fmt.Fprintf(stderr, "benchreport: -e2e: no package of %s declares a benchmark\n", filepath.Join(o.dir, "e2e"))
			return nil, Meta{}, ExitProblems
		}
		dirs = append(dirs, e2e...)
	}
	cpu, cores := CPUInfo()
	meta := Meta{
		Date:      time.Now().UTC().Format(time.RFC3339),
		Command:   cmdline,
		Go:        GoVersion(ctx, o.goCmd, o.dir),
		ClientGo:  ClientGoVersion(o.dir),
		CPU:       cpu,
		Cores:     strconv.Itoa(cores),
		GOOS:      runtime.GOOS,
		GOARCH:    runtime.GOARCH,
		Count:     strconv.Itoa(o.count),
		Benchtime: o.benchtime,
		Bench:     o.bench,
		Inputs:    []string{o.out},
	}
	runner := &Runner{Go: o.goCmd, Dirs: dirs, Matcher: m, Count: o.count, Benchtime: o.benchtime,
		Budget: o.budget, Log: stderr, Verbose: o.verbose}
	plan, probs, err := runner.Prepare(ctx)
	if err != nil {
		for _, p := range probs {
			fmt.Fprintln(stderr, p)
			for _, d := range p.Detail {
				fmt.Fprintf(stderr, "\t%s\n", d)
			}
		}
		fmt.Fprintln(stderr, err)
		return nil, meta, ExitProblems
	}
	defer plan.Close()

	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		fmt.Fprintln(stderr, err)
		return nil, meta, ExitProblems
	}
	raw, err := os.Create(o.out)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, meta, ExitProblems
	}
	err = WriteHeader(raw, meta)
	if err == nil {
		runner.Raw = raw
		probs = append(probs, runner.Run(ctx, plan)...)
	}
	if cerr := raw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintf(stderr, "benchreport: writing %s: %v\n", o.out, err)
		return nil, meta, ExitProblems
	}
	fmt.Fprintf(stderr, "benchreport: raw output in %s\n", o.out)

	data := ReadFiles([]string{o.out})
	data.Problems = append(data.Problems, probs...)
	return data, MetaFromData(data, meta), ExitOK
}

// writeOutputs writes the Markdown page, the chart(s) and the README section.
func writeOutputs(o options, r *Report, stderr io.Writer) error {
	var errs []error
	write := func(path string, render func(io.Writer) error) {
		if path == "" {
			return
		}
		var b bytes.Buffer
		err := render(&b)
		if err == nil {
			err = os.MkdirAll(filepath.Dir(path), 0o755)
		}
		if err == nil {
			err = os.WriteFile(path, b.Bytes(), 0o644)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("benchreport: writing %s: %w", path, err))
			return
		}
		fmt.Fprintf(stderr, "benchreport: wrote %s\n", path)
	}
	write(o.md, func(w io.Writer) error {
		// Name the raw files as seen from the page: "bench/results/latest.txt".
		rr := *r
		rr.Meta.Inputs = nil
		for _, in := range r.Meta.Inputs {
			rr.Meta.Inputs = append(rr.Meta.Inputs, relPath(o.md, in))
		}
		return WriteMarkdown(w, &rr, MarkdownOptions{Chart: relPath(o.md, o.svg)})
	})
	write(o.svg, func(w io.Writer) error { return WriteSVG(w, r) })
	write(o.png, func(w io.Writer) error { return WritePNG(w, r) })
	if o.readme != "" {
		err := UpdateReadme(o.readme, r, ReadmeOptions{Chart: relPath(o.readme, o.svg), Markdown: relPath(o.readme, o.md)})
		switch {
		case errors.Is(err, ErrNoMarkers), errors.Is(err, os.ErrNotExist):
			fmt.Fprintf(stderr, "benchreport: not updating %s: %v\n", o.readme, err)
		case err != nil:
			errs = append(errs, fmt.Errorf("benchreport: updating %s: %w", o.readme, err))
		default:
			fmt.Fprintf(stderr, "benchreport: updated the benchmark section of %s\n", o.readme)
		}
	}
	return errors.Join(errs...)
}

// relPath is target relative to the directory of from, with forward
// slashes, as a Markdown link needs it; "" when target is "".
func relPath(from, target string) string {
	if target == "" {
		return ""
	}
	af, err1 := filepath.Abs(from)
	at, err2 := filepath.Abs(target)
	if err1 != nil || err2 != nil {
		return filepath.ToSlash(target)
	}
	rel, err := filepath.Rel(filepath.Dir(af), at)
	if err != nil {
		return filepath.ToSlash(at)
	}
	return filepath.ToSlash(rel)
}

func workingDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	return wd
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	o := options{args: args}
	fs := flag.NewFlagSet("benchreport", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.dir, "dir", "..", "`directory` of the package whose benchmarks run (the library module root)")
	fs.BoolVar(&o.e2e, "e2e", false, "also run the benchmarks of the e2e module (every package of -dir/e2e that declares one; they need the real API server binaries)")
	fs.StringVar(&o.bench, "bench", ".", "`regexp` selecting workloads, per /-separated level as in go test -bench (impl= is not part of workload names); top-level benchmarks run whole")
	fs.IntVar(&o.count, "count", defaultCount, "`runs` of every benchmark (interleaved rounds of -test.count 1)")
	fs.StringVar(&o.benchtime, "benchtime", defaultBenchtime, "go test -benchtime per run (`duration` or Nx)")
	fs.DurationVar(&o.budget, "budget", defaultBudget, "time limit of the whole run, builds included; later rounds are dropped when it is used up (0: none)")
	fs.BoolVar(&o.quick, "quick", false, fmt.Sprintf("quick check: -count %d -benchtime %s -budget %s, writes raw.txt, BENCHMARKS.md, benchmarks.svg and benchmarks.png under %s/ and leaves the README alone (explicit flags win)", quickCount, quickBenchtime, quickBudget, quickDir))
	fs.StringVar(&o.in, "in", "", "comma-separated go test -bench output `files` to report on instead of running")
	fs.StringVar(&o.out, "out", "results/latest.txt", "raw output `file` of the run")
	fs.StringVar(&o.md, "md", "../BENCHMARKS.md", "Markdown report `file` (\"\": none)")
	fs.StringVar(&o.svg, "svg", "../docs/benchmarks.svg", "SVG chart `file` (\"\": none)")
	fs.StringVar(&o.png, "png", "", "PNG chart `file` (\"\": none)")
	fs.StringVar(&o.readme, "readme", "../docs/benchmarks.md", "Markdown `file` whose "+ReadmeStart+" ... "+ReadmeEnd+" section is regenerated (\"\": none; skipped with a note when the markers are missing)")
	fs.StringVar(&o.goCmd, "go", "go", "go `command`")
	fs.BoolVar(&o.verbose, "v", false, "copy the benchmark output to stderr")
	if err := fs.Parse(args[1:]); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("benchreport: unexpected arguments %q (see -h)", fs.Args())
	}
	if o.quick {
		set := make(map[string]bool)
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		def := func(name string, apply func()) {
			if !set[name] {
				apply()
			}
		}
		def("count", func() { o.count = quickCount })
		def("benchtime", func() { o.benchtime = quickBenchtime })
		def("budget", func() { o.budget = quickBudget })
		def("out", func() { o.out = quickDir + "/raw.txt" })
		def("md", func() { o.md = quickDir + "/BENCHMARKS.md" })
		def("svg", func() { o.svg = quickDir + "/benchmarks.svg" })
		def("png", func() { o.png = quickDir + "/benchmarks.png" })
		def("readme", func() { o.readme = "" })
	}
	if o.count < 1 {
		return o, errors.New("benchreport: -count must be at least 1")
	}
	if o.benchtime == "" {
		return o, errors.New("benchreport: -benchtime must not be empty")
	}
	if o.budget < 0 {
		return o, errors.New("benchreport: -budget must not be negative")
	}
	return o, nil
}
