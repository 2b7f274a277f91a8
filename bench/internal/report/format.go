package report

import (
	"math"
	"strconv"
	"strings"

	"golang.org/x/perf/benchunit"
)

// formatValue formats v, in the tidied unit, with three significant digits
// and the SI or binary prefix that benchunit picks: "1.23µs" for sec/op,
// "1.5KiB" for B/op, "12k" for allocs/op or events/s.
func formatValue(v float64, tidy string) string {
	cls := benchunit.ClassOf(tidy)
	num, _, _ := strings.Cut(tidy, "/")
	suffix := ""
	switch {
	case num == "sec" || strings.HasSuffix(num, "-sec"):
		suffix = "s"
	case cls == benchunit.Binary:
		suffix = "B"
	}
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64) + suffix
	}
	if suffix != "s" && math.Abs(v) < 1 {
		return sig3(v) + suffix // "0.500 allocs", not "500m"
	}
	sc := benchunit.CommonScale([]float64{v}, cls)
	if sc.Prefix == "" && v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64) + suffix // "11 allocs", "896B"
	}
	return sig3(v/sc.Factor) + sc.Prefix + suffix
}

// sig3 formats x with three significant digits: "1.20", "12.0", "120".
func sig3(x float64) string {
	digits := max(0, 2-int(math.Floor(math.Log10(math.Abs(x)))))
	return strconv.FormatFloat(x, 'f', digits, 64)
}

// formatStat is the median with its confidence interval: "1.23µs ±2%".
func formatStat(s *Stat, tidy string) string {
	if s == nil {
		return "—"
	}
	return formatValue(s.Summary.Center, tidy) + " ±" + s.Summary.PctRangeString()
}

// formatRatio prints a ratio with three significant digits: "0.372×",
// "1.02×", "12.3×".
func formatRatio(r float64) string {
	switch {
	case math.IsNaN(r):
		return "—"
	case math.IsInf(r, 1):
		return "∞"
	case r == 0:
		return "0×"
	}
	digits := max(0, 2-int(math.Floor(math.Log10(r))))
	return strconv.FormatFloat(r, 'f', digits, 64) + "×" // keep zeros: "1.00×"
}

// formatBetter names the better direction of a unit.
func formatBetter(b int) string {
	if b > 0 {
		return "higher"
	}
	return "lower"
}

// formatCmp is benchmath's "p=0.002 n=6", or "—" without a comparison.
func formatCmp(r Row) string {
	if r.Cmp == nil {
		return "—"
	}
	return r.Cmp.String()
}

// rowNote explains a row with a missing side.
func rowNote(r Row) string {
	switch {
	case r.Upstream == nil && r.Typed == nil:
		return ""
	case r.Upstream == nil:
		return "no upstream"
	case r.Typed == nil:
		return "no typed"
	}
	return r.Verdict()
}
