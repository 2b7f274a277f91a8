package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart sizes. The height grows with the number of workloads so that every
// label stays readable.
const (
	chartWidth    = 10 * vg.Inch
	chartRow      = 0.5 * vg.Inch // per workload
	chartOverhead = 1.9 * vg.Inch // title, axis, legend row
	chartDPI      = 110           // PNG resolution
)

// chartMetric is one bar per workload.
type chartMetric struct {
	tidy  string
	label string
	color color.RGBA
}

var chartMetrics = []chartMetric{
	{"sec/op", "time/op", color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}},
	{"allocs/op", "allocs/op", color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}},
}

// chartBar is one metric of one workload.
type chartBar struct {
	ratio float64 // NaN: no bar
	sig   bool
}

// WriteSVG renders the ratio chart as SVG.
func WriteSVG(w io.Writer, r *Report) error {
	p, h := buildChart(r)
	c := vgsvg.New(chartWidth, h)
	p.Draw(padded(draw.New(c)))
	_, err := c.WriteTo(w)
	return err
}

// WritePNG renders the same chart as PNG.
func WritePNG(w io.Writer, r *Report) error {
	p, h := buildChart(r)
	c := vgimg.NewWith(vgimg.UseWH(chartWidth, h), vgimg.UseDPI(chartDPI))
	p.Draw(padded(draw.New(c)))
	_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
	return err
}

// padded leaves a margin around the plot so no label touches the edge.
func padded(c draw.Canvas) draw.Canvas {
	m := vg.Points(12)
	return draw.Crop(c, m, -m, m, -m)
}

// sans sets a text style's font to Liberation Sans at size points.
func sans(st *text.Style, size float64) {
	st.Font.Typeface = "Liberation"
	st.Font.Variant = "Sans"
	st.Font.Size = vg.Points(size)
}

// buildChart lays out horizontal bars of log10(typed/upstream) for time/op
// and allocs/op per workload, first workload on top, with a line at 1×.
// Bars left of the line mean typed is lower (better); pale bars and "~" mark
// differences that are not significant.
func buildChart(r *Report) (*plot.Plot, vg.Length) {
	p := plot.New()
	p.Title.Text = "informer: typed / upstream client-go, median per workload"
	sans(&p.Title.TextStyle, 15)
	p.Title.Padding = vg.Points(10)

	var names []string
	var bars [][]chartBar // [workload][metric]
	for i := 0; i < len(r.Rows); {
		j := i + 1
		for j < len(r.Rows) && !r.Rows[j].First {
			j++
		}
		wb := make([]chartBar, len(chartMetrics))
		has := false
		for k, m := range chartMetrics {
			wb[k] = chartBar{ratio: math.NaN()}
			for _, rw := range r.Rows[i:j] {
				if rw.Tidy == m.tidy && rw.Cmp != nil && !math.IsNaN(rw.Ratio) {
					wb[k] = chartBar{ratio: rw.Ratio, sig: rw.Verdict() == "better" || rw.Verdict() == "worse"}
					has = true
				}
			}
		}
		if has {
			names = append(names, strings.Replace(r.Rows[i].Workload, "Benchmark", "", 1)) // "e2e.BenchmarkX" too
			bars = append(bars, wb)
		}
		i = j
	}
	n := len(names)
	height := chartOverhead + chartRow*vg.Length(max(n, 2))
	if n == 0 {
		p.Title.Text += "\n(no paired results)"
		p.HideAxes()
		return p, height
	}

	// Values in log10 space; 0 and ∞ ratios are drawn at the edge.
	lo, hi := math.Log10(0.5), math.Log10(2)
	for _, wb := range bars {
		for _, b := range wb {
			if b.ratio > 0 && !math.IsInf(b.ratio, 0) {
				lo, hi = math.Min(lo, math.Log10(b.ratio)), math.Max(hi, math.Log10(b.ratio))
			}
		}
	}
	span := hi - lo
	edgeLo, edgeHi := lo-0.05*span, hi+0.05*span
	// Room for the value labels on both sides.
	xMin, xMax := edgeLo-0.22*span-0.1, edgeHi+0.22*span+0.1
	yMin, yMax := -0.6, float64(n)+0.3
	logOf := func(r float64) float64 {
		switch {
		case r <= 0:
			return edgeLo
		case math.IsInf(r, 1):
			return edgeHi
		}
		return math.Log10(r)
	}

	// Workload i is drawn at y = n-1-i so the first one is on top; the
	// space above the last row holds the legend.
	rev := make([]string, n)
	for i, s := range names {
		rev[n-1-i] = s
	}
	p.NominalY(rev...)
	sans(&p.Y.Tick.Label, 11)
	p.X.Tick.Marker = ratioTicks{}
	sans(&p.X.Tick.Label, 11)
	p.X.Label.Text = "typed / upstream (log scale): left of 1× typed is lower, right of 1× it is higher; pale bar and ~ = not significant"
	sans(&p.X.Label.TextStyle, 11)

	grid := plotter.NewGrid()
	grid.Horizontal.Color = color.Transparent
	grid.Vertical.Color = color.Gray{Y: 0xe6}
	p.Add(grid)

	barW := chartRow * 0.38
	for k, m := range chartMetrics {
		offset := barW/2 - vg.Length(k)*barW // first metric above the second
		for _, sig := range []bool{true, false} {
			vals := make(plotter.Values, n)
			labels := plotter.XYLabels{XYs: make(plotter.XYs, 0, n)}
			var styles []text.Style
			for i, wb := range bars {
				b := wb[k]
				if math.IsNaN(b.ratio) || b.sig != sig {
					continue
				}
				v := logOf(b.ratio)
				vals[n-1-i] = v
				lbl := formatRatio(b.ratio)
				if !sig {
					lbl += " ~"
				}
				st := text.Style{Color: color.Gray{Y: 0x20}, YAlign: draw.YCenter, Handler: p.TextHandler}
				sans(&st, 10)
				x := v + 0.012*(xMax-xMin)
				st.XAlign = draw.XLeft
				if v < 0 {
					x, st.XAlign = v-0.012*(xMax-xMin), draw.XRight
				}
				labels.XYs = append(labels.XYs, plotter.XY{X: x, Y: float64(n - 1 - i)})
				labels.Labels = append(labels.Labels, lbl)
				styles = append(styles, st)
			}
			bc, err := plotter.NewBarChart(vals, barW)
			if err != nil {
				panic(err) // barW > 0 and vals are finite
			}
			bc.Horizontal = true
			bc.Offset = offset
			bc.Color = m.color
			bc.LineStyle.Width = 0
			if !sig {
				bc.Color = pale(m.color)
			} else {
				p.Legend.Add(m.label, bc)
			}
			p.Add(bc)
			if len(styles) > 0 {
				lp, err := plotter.NewLabels(labels)
				if err != nil {
					panic(err)
				}
				lp.TextStyle = styles
				lp.Offset = vg.Point{Y: offset}
				p.Add(lp)
			}
		}
	}

	one, err := plotter.NewLine(plotter.XYs{{X: 0, Y: yMin}, {X: 0, Y: float64(n) - 0.4}})
	if err != nil {
		panic(err)
	}
	one.LineStyle.Width = vg.Points(1.5)
	one.LineStyle.Color = color.Gray{Y: 0x30}
	p.Add(one)

	p.Legend.Top = true
	sans(&p.Legend.TextStyle, 11)
	p.Legend.XOffs = -vg.Points(6)
	p.Legend.ThumbnailWidth = vg.Points(18)
	// Set last: the plotters' data ranges widen the axes when added.
	p.X.Min, p.X.Max = xMin, xMax
	p.Y.Min, p.Y.Max = yMin, yMax
	return p, height
}

func pale(c color.RGBA) color.RGBA {
	mix := func(v uint8) uint8 { return uint8((int(v) + 3*0xff) / 4) }
	return color.RGBA{R: mix(c.R), G: mix(c.G), B: mix(c.B), A: 0xff}
}

// ratioTicks labels a log10 axis with ratios: 0.1×, 0.2×, 0.5×, 1×, 2×, ...
type ratioTicks struct{}

func (ratioTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(min) - 1; e <= math.Ceil(max)+1; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := math.Log10(m) + e
			if v < min || v > max {
				continue
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: fmtTick(m * math.Pow(10, e))})
		}
	}
	if len(ticks) > 11 { // keep decades only
		var dec []plot.Tick
		for _, t := range ticks {
			if math.Abs(t.Value-math.Round(t.Value)) < 1e-9 {
				dec = append(dec, t)
			}
		}
		ticks = dec
	}
	return ticks
}

func fmtTick(v float64) string {
	return fmt.Sprintf("%g×", math.Round(v*1000)/1000)
}
