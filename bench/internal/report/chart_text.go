package report

import (
	"bytes"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The chart measures text with Liberation Sans, the font gonum embeds, but a
// browser draws the SVG with whatever font it has: Arial and Helvetica have
// the same widths, and DejaVu Sans (sans-serif on many Linux systems) is up
// to 25% wider on the chart's strings ("1.00× ~"; 14-16% on names and
// prose). So every layout decision uses wide(), which leaves room for that,
// and text that has to end at a point is placed left-aligned at that point
// minus its wide width, so a wider font runs into the margin instead of into
// a bar or a swatch.
const textSlack = 1.3

// wide is a width of s in st that no common sans-serif font exceeds.
func wide(st text.Style, s string) vg.Length {
	return st.Width(s) * textSlack
}

// centred is where s starts when centred on center in the usual fonts
// (Liberation Sans, Arial, DejaVu Sans, averaged), moved left as far as it
// must to end before right in the widest.
func centred(st text.Style, s string, center, right vg.Length) vg.Length {
	x := center - st.Width(s)*usualSlack/2
	return min(x, right-wide(st, s))
}

// usualSlack is the width of the chart's strings in DejaVu Sans over their
// width in Liberation Sans, typically (wide allows for the most).
const usualSlack = 1.15

// sans returns a left-aligned, vertically centred Liberation Sans style of
// size points.
func sans(size float64) text.Style {
	st := text.Style{XAlign: draw.XLeft, YAlign: draw.YCenter, Handler: plot.DefaultTextHandler}
	setSans(&st, size)
	return st
}

// setSans sets a text style's font to Liberation Sans at size points.
func setSans(st *text.Style, size float64) {
	st.Font.Typeface = "Liberation"
	st.Font.Variant = "Sans"
	st.Font.Size = vg.Points(size)
}

// svgFontFamily is what the SVG asks for instead of Liberation Sans alone:
// the metric-compatible fonts first, then any sans-serif.
const svgFontFamily = "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"

// withFallbackFonts rewrites the font-family of every text element of an
// SVG written by gonum so that a browser without Liberation Sans picks a
// sans-serif font rather than its default serif one.
func withFallbackFonts(svg []byte) []byte {
	return bytes.ReplaceAll(svg, []byte("font-family:Liberation Sans;"), []byte(svgFontFamily))
}

// wrapText splits s at spaces into lines whose wide width in st is at most
// width; a single word wider than that gets a line of its own.
func wrapText(st text.Style, s string, width vg.Length) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case wide(st, line+" "+w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// wrapName splits a workload name after its "/"s into lines whose wide
// width in st is at most width; a part wider than that is cut where it
// must be.
func wrapName(st text.Style, name string, width vg.Length) []string {
	var parts []string
	for rest := name; rest != ""; {
		i := strings.IndexByte(rest, '/') + 1
		if i == 0 {
			i = len(rest)
		}
		parts = append(parts, rest[:i])
		rest = rest[i:]
	}
	var lines []string
	line := ""
	for _, p := range parts {
		if line != "" && wide(st, line+p) > width {
			lines = append(lines, line)
			line = ""
		}
		line += p
		for wide(st, line) > width && len([]rune(line)) > 1 {
			r := []rune(line)
			n := len(r) - 1
			for n > 1 && wide(st, string(r[:n])) > width {
				n--
			}
			lines = append(lines, string(r[:n]))
			line = string(r[n:])
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
