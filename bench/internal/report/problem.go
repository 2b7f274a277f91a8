package report

import (
	"fmt"
	"strings"
)

// Severity says whether a Problem makes benchreport exit non-zero.
type Severity int

const (
	Warning Severity = iota // shown, exit code unaffected
	Error                   // shown, exit code 1
)

func (s Severity) String() string {
	if s == Error {
		return "error"
	}
	return "warning"
}

// Kinds of Problem.
const (
	KindInput       = "input"        // unreadable file, unparsable line, no results
	KindFailure     = "failed"       // --- FAIL, panic, non-zero exit
	KindSkipped     = "skipped"      // --- SKIP
	KindMissingPair = "missing pair" // only one impl, or no impl= element
	KindUnits       = "units"        // a unit reported by one impl only
	KindImpl        = "impl"         // an impl= value other than upstream/typed
	KindStats       = "statistics"   // benchmath warnings (too few samples, ...)
	KindRun         = "run"          // build, list, time budget, interruption
)

// A Problem is something the report must say besides the numbers.
type Problem struct {
	Severity Severity
	Kind     string
	Where    string   // file:line, workload or package; may be ""
	Text     string   // one line
	Detail   []string // extra lines (log output, stack frames)
}

func (p Problem) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", p.Severity, p.Kind)
	if p.Where != "" {
		fmt.Fprintf(&b, " (%s)", p.Where)
	}
	fmt.Fprintf(&b, ": %s", p.Text)
	return b.String()
}

// HasErrors reports whether any problem is an Error.
func HasErrors(ps []Problem) bool {
	for _, p := range ps {
		if p.Severity == Error {
			return true
		}
	}
	return false
}
