package report

import (
	"slices"
	"testing"
)

func TestParseName(t *testing.T) {
	tests := []struct {
		in   string
		want benchName
	}{
		{"BenchmarkDeltaFIFOAddPop/keys=1000/impl=upstream-2", benchName{workload: "BenchmarkDeltaFIFOAddPop/keys=1000", impl: "upstream", hasImpl: true, procs: 2}},
		{"DeltaFIFOAddPop/keys=1000/impl=typed-2", benchName{workload: "BenchmarkDeltaFIFOAddPop/keys=1000", impl: "typed", hasImpl: true, procs: 2}},
		{"BenchmarkX/impl=typed/objects=10-8", benchName{workload: "BenchmarkX/objects=10", impl: "typed", hasImpl: true, procs: 8}},
		{"BenchmarkX/impl=typed", benchName{workload: "BenchmarkX", impl: "typed", hasImpl: true}},
		{"BenchmarkNoImpl/objects=10-2", benchName{workload: "BenchmarkNoImpl/objects=10", procs: 2}},
		{"BenchmarkX", benchName{workload: "BenchmarkX"}},
		{"BenchmarkX/positional/impl=typed-2", benchName{workload: "BenchmarkX/positional", impl: "typed", hasImpl: true, procs: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := parseName(tt.in); got != tt.want {
				t.Errorf("parseName(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestMatcher(t *testing.T) {
	tests := []struct {
		pattern  string
		top      string
		workload string
		wantTop  bool
		want     bool
	}{
		{".", "BenchmarkX", "BenchmarkX/keys=10", true, true},
		{"", "BenchmarkX", "BenchmarkX/keys=10", true, true},
		{"DeltaFIFO", "BenchmarkDeltaFIFOAddPop", "BenchmarkDeltaFIFOAddPop/keys=10", true, true},
		{"DeltaFIFO", "BenchmarkIndexerAdd", "BenchmarkIndexerAdd/keys=10", false, false},
		{"^BenchmarkIndexerAdd$", "BenchmarkIndexerAdd", "BenchmarkIndexerAdd/objects=1000", true, true},
		{"^BenchmarkIndexerAdd$", "BenchmarkIndexerAddMany", "BenchmarkIndexerAddMany/objects=1000", false, false},
		{"Indexer/objects=100000", "BenchmarkIndexerAdd", "BenchmarkIndexerAdd/objects=100000", true, true},
		{"Indexer/objects=100000", "BenchmarkIndexerAdd", "BenchmarkIndexerAdd/objects=1000", true, false},
		{"Indexer/objects=100000", "BenchmarkIndexerAdd", "BenchmarkIndexerAdd", true, false}, // more elements than levels
		{"Watch/handlers=(1|4)", "BenchmarkWatch", "BenchmarkWatch/handlers=4", true, true},
		{"Watch/handlers=[14]/x", "BenchmarkWatch", "BenchmarkWatch/handlers=4/x", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" "+tt.workload, func(t *testing.T) {
			m, err := NewMatcher(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.MatchTop(tt.top); got != tt.wantTop {
				t.Errorf("MatchTop(%q) = %v, want %v", tt.top, got, tt.wantTop)
			}
			if got := m.Match(tt.workload); got != tt.want {
				t.Errorf("Match(%q) = %v, want %v", tt.workload, got, tt.want)
			}
		})
	}
	if _, err := NewMatcher("Indexer/("); err == nil {
		t.Error("NewMatcher accepted a bad regexp")
	}
}

func TestSplitPattern(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"a", []string{"a"}},
		{"a/b/c", []string{"a", "b", "c"}},
		{"a/(b/c)", []string{"a", "(b/c)"}},
		{"a/[/]x", []string{"a", "[/]x"}},
		{`a\/b/c`, []string{`a\/b`, "c"}},
		{"a/", []string{"a", ""}},
	}
	for _, tt := range tests {
		if got := splitPattern(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("splitPattern(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
