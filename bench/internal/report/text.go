package report

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText prints the table and the problems for a terminal.
func WriteText(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tmetric\tbetter\tupstream\ttyped\ttyped/upstream\tp (n)\tverdict")
	for _, row := range r.Rows {
		name := ""
		if row.First {
			name = row.Workload
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, row.Unit, formatBetter(row.Better),
			formatStat(row.Upstream, row.Tidy), formatStat(row.Typed, row.Tidy), formatRatio(row.Ratio),
			formatCmp(row), rowNote(row))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Geomeans) > 0 {
		fmt.Fprintln(w)
		for _, g := range r.Geomeans {
			fmt.Fprintf(w, "geomean %s: %s over %d workload(s) (%s is better)\n", g.Unit, formatRatio(g.Ratio), g.N, formatBetter(g.Better))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "ratio = typed median / upstream median; ± = %.0f%% confidence interval of the median;\n", Confidence*100)
	fmt.Fprintln(w, "p = Mann-Whitney U-test (golang.org/x/perf/benchmath); ~ = no significant difference at p <= 0.05.")
	if len(r.Problems) > 0 {
		fmt.Fprintln(w)
		for _, p := range r.Problems {
			fmt.Fprintln(w, p)
			for _, d := range p.Detail {
				fmt.Fprintf(w, "\t%s\n", d)
			}
		}
	}
	return nil
}
