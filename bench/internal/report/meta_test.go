package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseCPUInfo(t *testing.T) {
	tests := []struct {
		name, in, model string
		cores           int
	}{
		{"x86", "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Processor\n", "Intel(R) Xeon(R) Processor", 2},
		{"arm64", "processor\t: 0\nBogoMIPS\t: 50.00\n\nprocessor\t: 1\nBogoMIPS\t: 50.00\n\nHardware\t: BCM2835\nModel\t: Raspberry Pi 4 Model B Rev 1.4\n", "BCM2835", 2},
		{"empty", "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model, cores := parseCPUInfo(strings.NewReader(tt.in))
			if model != tt.model || cores != tt.cores {
				t.Errorf("parseCPUInfo = %q, %d; want %q, %d", model, cores, tt.model, tt.cores)
			}
		})
	}
	if model, cores := CPUInfo(); model == "" || cores < 1 {
		t.Errorf("CPUInfo() = %q, %d", model, cores)
	}
}

func TestClientGoFromGoMod(t *testing.T) {
	tests := []struct{ name, gomod, want string }{
		{"required", "module github.com/typedkube/informer\n\ngo 1.26.0\n\nrequire (\n\tk8s.io/api v0.37.2\n\tk8s.io/client-go v0.37.2\n)\n", "v0.37.2"},
		{"replaced", "module m\n\ngo 1.26.0\n\nrequire k8s.io/client-go v0.37.2\n\nreplace k8s.io/client-go => ../client-go\n", "v0.37.2 (replaced by ../client-go)"},
		{"replaced version", "module m\n\ngo 1.26.0\n\nrequire k8s.io/client-go v0.37.2\n\nreplace k8s.io/client-go v0.37.2 => k8s.io/client-go v0.37.1\n", "v0.37.2 (replaced by k8s.io/client-go v0.37.1)"},
		{"indirect", "module m\n\ngo 1.26.0\n\nrequire k8s.io/client-go v0.37.0 // indirect\n", "v0.37.0"},
		{"absent", "module github.com/typedkube/informer\n\ngo 1.26.0\n", "not required by informer/go.mod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clientGoFromGoMod("/work/informer/go.mod", []byte(tt.gomod)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}

	// ClientGoVersion finds the go.mod that governs a package directory.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte(tests[0].gomod), 0o644)
	sub := filepath.Join(dir, "internal", "x")
	os.MkdirAll(sub, 0o755)
	if got := ClientGoVersion(sub); got != "v0.37.2" {
		t.Errorf("ClientGoVersion(sub) = %q", got)
	}
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{filepath.Join(os.TempDir(), "go-build123", "b001", "exe", "benchreport"), "-quick"}, "go run ./cmd/benchreport -quick"},
		{[]string{"/root/go/bin/benchreport", "-bench", "Watch/handlers=(1|4)", "-in", "a.txt,b.txt"}, "benchreport -bench 'Watch/handlers=(1|4)' -in a.txt,b.txt"},
		{[]string{"benchreport", "-readme", ""}, "benchreport -readme ''"},
		{[]string{"benchreport", "-bench", "it's"}, `benchreport -bench 'it'\''s'`},
	}
	for _, tt := range tests {
		if got := CommandLine(tt.args); got != tt.want {
			t.Errorf("CommandLine(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	m := Meta{Date: "2026-11-22T09:30:00Z", Command: "cd bench && go run ./cmd/benchreport -bench 'Watch|List'",
		Go: "go1.26.8", ClientGo: "v0.37.2", CPU: "Intel(R) Xeon(R) Processor", Cores: "2",
		Count: "6", Benchtime: "500ms", Bench: "Watch|List"}
	var b bytes.Buffer
	if err := WriteHeader(&b, m); err != nil {
		t.Fatal(err)
	}
	b.WriteString("goos: linux\ngoarch: arm64\npkg: github.com/typedkube/informer\ncpu: ignored, benchreport-cpu wins\n")
	b.WriteString("BenchmarkWatch/impl=upstream-2\t10\t100 ns/op\t5 events/s\nBenchmarkWatch/impl=typed-2\t10\t50 ns/op\t9 events/s\n")
	d := newData()
	d.Read(b.Bytes(), "raw.txt")
	got := MetaFromData(d, Meta{Report: "r"})
	want := m
	want.GOOS, want.GOARCH, want.Report = "linux", "arm64", "r"
	if got.Date != want.Date || got.Command != want.Command || got.Go != want.Go || got.ClientGo != want.ClientGo ||
		got.CPU != want.CPU || got.Cores != want.Cores || got.Count != want.Count || got.Benchtime != want.Benchtime ||
		got.Bench != want.Bench || got.GOOS != want.GOOS || got.GOARCH != want.GOARCH || got.Report != want.Report {
		t.Errorf("MetaFromData =\n%+v\nwant\n%+v", got, want)
	}
	// The header's unit metadata tells benchstat (and us) the directions.
	if d.Units.GetBetter("events/s") != 1 || d.Units.GetBetter("p99-sec") != -1 {
		t.Errorf("unit metadata not read: events/s %d, p99-ns %d", d.Units.GetBetter("events/s"), d.Units.GetBetter("p99-sec"))
	}
	if len(d.Problems) != 0 {
		t.Errorf("header produced problems: %v", d.Problems)
	}
}
