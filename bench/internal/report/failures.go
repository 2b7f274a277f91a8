package report

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// A Failure is a benchmark (or a whole package run) that did not finish
// cleanly: a "--- FAIL" line, a panic or fatal runtime error, a "FAIL" package
// line, or a test binary that exited with an error. A "--- SKIP" line (printed
// in -v output) is kept as a Failure with Skipped set.
//
// A panic is blamed on the last benchmark whose name was printed. go test -v
// (which benchreport's runner uses) prints every name before running it; plain
// go test prints it only after the first run, so a panic in that first run is
// blamed on the benchmark printed before it.
type Failure struct {
	Skipped   bool
	Pkg       string   // import path, from the last "pkg:" line; "" if unknown
	Benchmark string   // full name as printed; "" for a package-level failure
	Message   string   // first line: "panic: boom", "--- FAIL: ...", ...
	Detail    []string // following lines (log output, first stack frames), trimmed
	File      string
	Line      int
}

// Where returns "file:line".
func (f Failure) Where() string { return fmt.Sprintf("%s:%d", f.File, f.Line) }

// maxDetail bounds how many lines of a failure's output are kept.
const maxDetail = 10

// scanFailures finds failures in the raw text of go test output. It also
// returns the numbers of the lines it recognised, so that benchfmt syntax
// errors on those lines (a benchmark name followed by "--- FAIL" or "panic:"
// instead of numbers) are not reported a second time, and the runs that
// benchreport's runner says it stopped (see cutPrefix), each with the
// package of the "pkg:" line the runner wrote before starting it.
func scanFailures(data []byte, file string) (fails []Failure, failLines map[int]bool, cut []CutRun) {
	failLines = make(map[int]bool)
	var (
		pkg     string
		current string   // last benchmark whose name was printed
		pending []string // log lines printed since then (-v prints them before "--- FAIL")
		open    *Failure // failure still collecting the lines that follow it
		lineNo  int
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	add := func(bench, msg string, skipped bool, detail []string) {
		fails = append(fails, Failure{Skipped: skipped, Pkg: pkg, Benchmark: bench, Message: msg,
			Detail: detail, File: file, Line: lineNo})
		open = &fails[len(fails)-1]
		failLines[lineNo] = true
		pending = nil
	}
	for sc.Scan() {
		lineNo++
		line := strings.TrimRight(sc.Text(), "\r")
		rest := line
		if strings.HasPrefix(line, "Benchmark") {
			// "BenchmarkX-2  \t<numbers>", "BenchmarkX" alone (-v), or on
			// failure "BenchmarkX-2  \t--- FAIL: ..." / "\tpanic: ...".
			fields := strings.Fields(line)
			current, pending, open = fields[0], nil, nil
			rest = strings.TrimSpace(strings.TrimPrefix(line, fields[0]))
		}
		switch {
		case strings.HasPrefix(line, "pkg: "):
			pkg = strings.TrimSpace(line[len("pkg: "):])
			open, pending = nil, nil
		case strings.HasPrefix(line, cutPrefix):
			name, _, ok := strings.Cut(line[len(cutPrefix):], " stopped after ")
			if ok && strings.HasPrefix(name, "Benchmark") {
				cut = append(cut, CutRun{Pkg: pkg, Benchmark: name})
			}
			open, pending = nil, nil
		case strings.HasPrefix(rest, "--- FAIL: "), strings.HasPrefix(rest, "--- SKIP: "):
			skipped := strings.HasPrefix(rest, "--- SKIP: ")
			name, note := splitFailLine(rest[len("--- FAIL: "):])
			msg := rest[:len("--- FAIL")]
			if note != "" {
				msg += ": " + note
			}
			add(name, msg, skipped, pending)
		case strings.HasPrefix(rest, "panic: "), strings.HasPrefix(rest, "fatal error: "):
			add(current, rest, false, nil)
		case line == "FAIL" || strings.HasPrefix(line, "FAIL\t") || strings.HasPrefix(line, "FAIL "):
			add("", strings.Join(strings.Fields(line), " "), false, nil)
			open = nil
		case strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "=== ") ||
			line == "PASS" || strings.HasPrefix(line, "ok "):
			open, pending = nil, nil
		case strings.TrimSpace(line) == "" || rest != line:
			// Blank, or a benchmark line.
		case open != nil:
			if len(open.Detail) < maxDetail && !strings.HasPrefix(line, "exit status ") {
				open.Detail = append(open.Detail, strings.TrimSpace(line))
			}
		case strings.HasPrefix(line, "    ") && len(pending) < maxDetail:
			pending = append(pending, strings.TrimSpace(line))
		}
	}
	// A package-level FAIL only adds information when nothing more specific
	// was found for that package in this file.
	specific := make(map[string]bool)
	for _, f := range fails {
		if f.Benchmark != "" && !f.Skipped {
			specific[f.Pkg] = true
		}
	}
	out := fails[:0]
	for _, f := range fails {
		if f.Benchmark == "" && specific[f.Pkg] {
			continue
		}
		out = append(out, f)
	}
	return out, failLines, cut
}

// splitFailLine splits what follows "--- FAIL: " into the benchmark name and
// a note: "BenchmarkX-2", "BenchmarkX (0.01s)" or
// "BenchmarkX (benchreport: test binary exited: exit status 2)".
func splitFailLine(s string) (name, note string) {
	name, note, _ = strings.Cut(strings.TrimSpace(s), " ")
	note = strings.TrimSpace(note)
	note = strings.TrimSuffix(strings.TrimPrefix(note, "("), ")")
	if strings.HasSuffix(note, "s") && strings.Trim(note, "0123456789.s") == "" {
		note = "" // a duration, "(0.01s)"
	}
	return name, note
}
