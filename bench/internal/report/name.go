package report

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// Impl values that the project pairs, and the transport floor a workload
// may have beside them (impl=floor: what any implementation pays at least,
// such as reading a watch stream's frames without decoding them): its rows
// then also say typed/floor and upstream/floor. Any other impl= value is
// reported and ignored.
const (
	ImplUpstream = "upstream"
	ImplTyped    = "typed"
	ImplFloor    = "floor"
)

// benchName is a benchmark name split into what pairing needs.
type benchName struct {
	workload string // "Benchmark" + base + every element but impl=, without -procs
	impl     string // value of the impl= element; "" when there is none
	hasImpl  bool
	procs    int // GOMAXPROCS suffix; 0 when the name has none
}

// parseName splits a full benchmark name, with or without its "Benchmark"
// prefix, e.g. "BenchmarkX/keys=10/impl=typed-2".
func parseName(full string) benchName {
	full = strings.TrimPrefix(full, "Benchmark")
	base, parts := benchfmt.Name(full).Parts()
	var n benchName
	var b strings.Builder
	b.WriteString("Benchmark")
	b.Write(base)
	for _, p := range parts {
		s := string(p)
		switch {
		case strings.HasPrefix(s, "-"):
			if v, err := strconv.Atoi(s[1:]); err == nil {
				n.procs = v
				continue
			}
			b.WriteString(s)
		case strings.HasPrefix(s, "/impl=") && !n.hasImpl:
			n.impl, n.hasImpl = s[len("/impl="):], true
		default:
			b.WriteString(s)
		}
	}
	n.workload = b.String()
	return n
}

// A Matcher selects workloads the way go test's -bench selects benchmarks:
// the pattern is split at slashes (outside brackets and parentheses) and each
// element is an unanchored regexp matched against the name element at the same
// level. Workload names have no impl= element, so patterns do not need one.
type Matcher struct {
	pattern string
	elems   []*regexp.Regexp
}

// NewMatcher compiles pattern; "" selects everything.
func NewMatcher(pattern string) (*Matcher, error) {
	if pattern == "" {
		pattern = "."
	}
	m := &Matcher{pattern: pattern}
	for _, e := range splitPattern(pattern) {
		re, err := regexp.Compile(e)
		if err != nil {
			return nil, fmt.Errorf("benchreport: bad -bench pattern %q: %w", pattern, err)
		}
		m.elems = append(m.elems, re)
	}
	return m, nil
}

// String returns the pattern.
func (m *Matcher) String() string { return m.pattern }

// MatchTop reports whether the top-level benchmark name (e.g. "BenchmarkX")
// may hold selected workloads: it is matched against the first element only.
func (m *Matcher) MatchTop(name string) bool { return m.elems[0].MatchString(name) }

// Match reports whether the workload (e.g. "BenchmarkX/keys=10") is selected.
// A pattern with more elements than the name has levels does not match, as in
// go test.
func (m *Matcher) Match(workload string) bool {
	levels := strings.Split(workload, "/")
	if len(m.elems) > len(levels) {
		return false
	}
	for i, re := range m.elems {
		if !re.MatchString(levels[i]) {
			return false
		}
	}
	return true
}

// splitPattern splits a -bench pattern at the slashes that separate levels,
// like the testing package does: not inside [...] or (...), not escaped.
func splitPattern(s string) []string {
	var out []string
	depth, inClass, start := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == '/' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
