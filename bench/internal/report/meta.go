package report

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/mod/modfile"
)

// Meta says where, when and how the numbers were measured.
type Meta struct {
	Date      string // of the measurement, RFC 3339 (or the input's mtime)
	Command   string // that measured, as recorded in the raw output
	Report    string // that rendered this report, when it is not Command
	Go        string // go version of the benchmarks
	ClientGo  string // k8s.io/client-go version of the library
	CPU       string // model name
	Cores     string
	GOOS      string
	GOARCH    string
	Count     string // runs per benchmark
	Benchtime string
	Bench     string // -bench pattern
	Inputs    []string
}

// Configuration keys that the runner writes at the top of the raw output, in
// the benchmark format's "key: value" form, so that a report rendered later
// with -in says how the numbers were measured.
const (
	cfgDate      = "benchreport-date"
	cfgCommand   = "benchreport-command"
	cfgGo        = "benchreport-go"
	cfgClientGo  = "benchreport-client-go"
	cfgCPU       = "benchreport-cpu"
	cfgCores     = "benchreport-cores"
	cfgCount     = "benchreport-count"
	cfgBenchtime = "benchreport-benchtime"
	cfgBench     = "benchreport-bench"
)

// knownUnits gives benchstat the direction of the project's custom metrics
// (b.ReportMetric does not write unit metadata).
var knownUnits = []struct{ unit, better string }{
	{"events/s", "higher"},
	{"B/object", "lower"},
	{"heap-B", "lower"},
	{"p50-ns", "lower"},
	{"p99-ns", "lower"},
}

// WriteHeader writes m as benchmark-format configuration lines, followed by
// unit metadata for the project's custom metrics.
func WriteHeader(w io.Writer, m Meta) error {
	var b bytes.Buffer
	b.WriteString("# Raw go test -bench output collected by benchreport: one test binary run per\n")
	b.WriteString("# top-level benchmark and round (-test.count 1, -test.v). Re-render with\n")
	b.WriteString("# go run ./cmd/benchreport -in <this file>; benchstat reads it as it is.\n")
	for _, kv := range [][2]string{
		{cfgDate, m.Date}, {cfgCommand, m.Command}, {cfgGo, m.Go}, {cfgClientGo, m.ClientGo},
		{cfgCPU, m.CPU}, {cfgCores, m.Cores}, {cfgCount, m.Count}, {cfgBenchtime, m.Benchtime}, {cfgBench, m.Bench},
	} {
		if kv[1] != "" {
			fmt.Fprintf(&b, "%s: %s\n", kv[0], oneLine(kv[1]))
		}
	}
	for _, u := range knownUnits {
		fmt.Fprintf(&b, "Unit %s better=%s\n", u.unit, u.better)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// MetaFromData takes what the input recorded and fills the rest from fallback.
func MetaFromData(d *Data, fallback Meta) Meta {
	pick := func(key, def string) string {
		if v := d.Config(key); v != "" {
			return v
		}
		return def
	}
	m := fallback
	m.Date = pick(cfgDate, fallback.Date)
	m.Command = pick(cfgCommand, fallback.Command)
	m.Go = pick(cfgGo, fallback.Go)
	m.ClientGo = pick(cfgClientGo, fallback.ClientGo)
	m.CPU = pick(cfgCPU, pick("cpu", fallback.CPU))
	m.Cores = pick(cfgCores, fallback.Cores)
	m.GOOS = pick("goos", fallback.GOOS)
	m.GOARCH = pick("goarch", fallback.GOARCH)
	m.Count = pick(cfgCount, fallback.Count)
	m.Benchtime = pick(cfgBenchtime, fallback.Benchtime)
	m.Bench = pick(cfgBench, fallback.Bench)
	return m
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// CPUInfo returns the CPU model and the number of logical CPUs from
// /proc/cpuinfo, falling back to runtime.NumCPU.
func CPUInfo() (model string, cores int) {
	f, err := os.Open("/proc/cpuinfo")
	if err == nil {
		defer f.Close()
		model, cores = parseCPUInfo(f)
	}
	if cores == 0 {
		cores = runtime.NumCPU()
	}
	if model == "" {
		model = "unknown CPU"
	}
	return model, cores
}

// parseCPUInfo reads /proc/cpuinfo: the first "model name" (x86), or
// "Hardware"/"cpu model"/"Model" elsewhere, and the number of "processor"
// entries.
func parseCPUInfo(r io.Reader) (model string, cores int) {
	var fallback string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			cores++
		case "model name":
			if model == "" {
				model = v
			}
		case "Hardware", "cpu model", "Model", "uarch":
			if fallback == "" {
				fallback = v
			}
		}
	}
	if model == "" {
		model = fallback
	}
	return model, cores
}

// GoVersion runs "go env GOVERSION" in dir, so that a toolchain directive of
// the benchmarks' module is honoured.
func GoVersion(ctx context.Context, goCmd, dir string) string {
	cmd := exec.CommandContext(ctx, goCmd, "env", "GOVERSION")
	cmd.Dir = dir
	out, err := cmd.Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return v
	}
	return runtime.Version()
}

// ClientGoVersion reads the k8s.io/client-go requirement (and replacement)
// from the go.mod that governs dir.
func ClientGoVersion(dir string) string {
	gomod, err := findGoMod(dir)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	data, err := os.ReadFile(gomod)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return clientGoFromGoMod(gomod, data)
}

func clientGoFromGoMod(name string, data []byte) string {
	const mod = "k8s.io/client-go"
	f, err := modfile.Parse(name, data, nil)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	v := ""
	for _, r := range f.Require {
		if r.Mod.Path == mod {
			v = r.Mod.Version
		}
	}
	if v == "" {
		return "not required by " + filepath.Base(filepath.Dir(name)) + "/go.mod"
	}
	for _, r := range f.Replace {
		if r.Old.Path == mod && (r.Old.Version == "" || r.Old.Version == v) {
			to := r.New.Path
			if r.New.Version != "" {
				to += " " + r.New.Version
			}
			v += " (replaced by " + to + ")"
		}
	}
	return v
}

func findGoMod(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "go.mod")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		dir = parent
	}
}

// CommandLine renders the command that is running, as a user would type it:
// "go run ./cmd/benchreport -quick" when started by go run.
func CommandLine(args []string) string {
	var b strings.Builder
	prog := "benchreport"
	if len(args) > 0 {
		exe := args[0]
		if strings.Contains(exe, "go-build") || strings.Contains(filepath.Dir(exe), os.TempDir()) {
			prog = "go run ./cmd/benchreport"
		} else {
			prog = filepath.Base(exe)
		}
		args = args[1:]
	}
	b.WriteString(prog)
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(shellQuote(a))
	}
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./,:@+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
