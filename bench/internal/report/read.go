package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"golang.org/x/perf/benchfmt"
)

// Data is everything read from go test -bench output.
type Data struct {
	// Series holds the measurements, in the order their workload first
	// appeared in the input.
	Series []*Series
	// Failures are failed or skipped benchmarks, in input order.
	Failures []Failure
	// Problems are inputs that could not be read and lines that could not
	// be parsed.
	Problems []Problem
	// Configs holds each file configuration key ("goos", "cpu",
	// "benchreport-go", ...) with its distinct values in input order.
	Configs map[string][]string
	// Units is the unit metadata ("Unit events/s better=higher") of all inputs.
	Units benchfmt.UnitMetadataMap
	// ModTime is the latest modification time of the inputs.
	ModTime time.Time
	// Cut holds the top-level benchmarks (by package) whose run benchreport's
	// runner stopped part way, for the time budget or an interruption: those
	// of their sub-benchmarks that had not run yet have no results.
	Cut map[CutRun]bool

	byKey map[seriesKey]*Series
}

// A CutRun is a top-level benchmark of a package whose run was stopped.
type CutRun struct{ Pkg, Benchmark string }

type seriesKey struct {
	pkg, workload string
	procs         int
}

// A Series is one workload of one package at one GOMAXPROCS.
type Series struct {
	Pkg      string
	Workload string // "BenchmarkX/keys=10", without impl= and -procs
	Procs    int
	// Impls maps an impl= value ("upstream", "typed"; "" when the name has
	// no impl= element) to its measurements.
	Impls map[string]*Measurements
}

// Measurements are the values of one impl, per unit.
type Measurements struct {
	Units  []string             // tidied units, in order of first appearance
	Values map[string][]float64 // tidied unit -> values in tidied unit
	Orig   map[string]string    // tidied unit -> unit as written ("ns/op")
}

func (m *Measurements) add(v benchfmt.Value) {
	if _, ok := m.Values[v.Unit]; !ok {
		m.Units = append(m.Units, v.Unit)
		m.Orig[v.Unit] = v.Unit
		if v.OrigUnit != "" {
			m.Orig[v.Unit] = v.OrigUnit
		}
	}
	m.Values[v.Unit] = append(m.Values[v.Unit], v.Value)
}

// ReadFiles reads go test -bench output files. A file that cannot be read
// becomes an error Problem and the others are still read.
func ReadFiles(paths []string) *Data {
	d := newData()
	for _, p := range paths {
		if err := d.readFile(p); err != nil {
			d.Problems = append(d.Problems, Problem{Severity: Error, Kind: KindInput, Where: p,
				Text: fmt.Sprintf("cannot read %s: %v", p, err)})
		}
	}
	return d
}

func newData() *Data {
	return &Data{
		Configs: make(map[string][]string),
		Units:   make(benchfmt.UnitMetadataMap),
		byKey:   make(map[seriesKey]*Series),
	}
}

func (d *Data) readFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if fi.ModTime().After(d.ModTime) {
		d.ModTime = fi.ModTime()
	}
	d.Read(data, path)
	return nil
}

// Read adds the go test -bench output in data; name is used in messages.
func (d *Data) Read(data []byte, name string) {
	fails, failLines, cut := scanFailures(data, name)
	d.Failures = append(d.Failures, fails...)
	for _, c := range cut {
		if d.Cut == nil {
			d.Cut = make(map[CutRun]bool)
		}
		d.Cut[c] = true
	}

	r := benchfmt.NewReader(bytes.NewReader(data), name)
	results := 0
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.Result:
			results++
			d.addResult(rec)
		case *benchfmt.SyntaxError:
			if !failLines[rec.Line] {
				d.Problems = append(d.Problems, Problem{Severity: Warning, Kind: KindInput,
					Where: fmt.Sprintf("%s:%d", rec.FileName, rec.Line), Text: rec.Msg})
			}
		}
	}
	if err := r.Err(); err != nil {
		d.Problems = append(d.Problems, Problem{Severity: Error, Kind: KindInput, Where: name,
			Text: fmt.Sprintf("cannot read %s: %v", name, err)})
	}
	for k, v := range r.Units() {
		if _, ok := d.Units[k]; !ok {
			d.Units[k] = v
		}
	}
	if results == 0 && len(fails) == 0 {
		d.Problems = append(d.Problems, Problem{Severity: Warning, Kind: KindInput, Where: name,
			Text: "no benchmark results in " + name})
	}
}

func (d *Data) addResult(res *benchfmt.Result) {
	for _, c := range res.Config {
		if !c.File {
			continue
		}
		v := string(c.Value)
		if !slices.Contains(d.Configs[c.Key], v) {
			d.Configs[c.Key] = append(d.Configs[c.Key], v)
		}
	}
	n := parseName(string(res.Name))
	key := seriesKey{pkg: res.GetConfig("pkg"), workload: n.workload, procs: n.procs}
	s := d.byKey[key]
	if s == nil {
		s = &Series{Pkg: key.pkg, Workload: key.workload, Procs: key.procs, Impls: make(map[string]*Measurements)}
		d.byKey[key] = s
		d.Series = append(d.Series, s)
	}
	m := s.Impls[n.impl]
	if m == nil {
		m = &Measurements{Values: make(map[string][]float64), Orig: make(map[string]string)}
		s.Impls[n.impl] = m
	}
	for _, v := range res.Values {
		m.add(v)
	}
}

// Config returns the distinct values of a file configuration key joined by
// ", ", or "" when no result carried it.
func (d *Data) Config(key string) string {
	var b bytes.Buffer
	for i, v := range d.Configs[key] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(v)
	}
	return b.String()
}
