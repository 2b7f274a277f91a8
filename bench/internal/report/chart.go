package report

import (
	"bytes"
	"image/color"
	"io"
	"math"
	"strconv"

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
	chartWidth   = 10 * vg.Inch
	chartMargin  = 12             // points around everything
	barThickness = 0.19 * vg.Inch // one bar's thickness
	chartRowGap  = 0.14 * vg.Inch // between workloads
	chartDPI     = 110            // PNG resolution

	chartTitle   = "informer: typed / upstream client-go, median per workload"
	chartCaption = "typed / upstream (log scale): left of 1× typed is lower, right of 1× it is higher; pale bar and ~ = not significant."
	chartMixed   = "Where a colour lists several units, a workload's bar shows the first of them it reports."
)

// Font sizes in points.
const (
	titleSize   = 15
	legendSize  = 11
	captionSize = 11
	nameSize    = 11
	valueSize   = 10
)

// WriteSVG renders the ratio chart as SVG.
func WriteSVG(w io.Writer, r *Report) error {
	ch := buildChart(r)
	c := vgsvg.New(chartWidth, ch.height)
	ch.draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return err
	}
	_, err := w.Write(withFallbackFonts(b.Bytes()))
	return err
}

// WritePNG renders the same chart as PNG.
func WritePNG(w io.Writer, r *Report) error {
	ch := buildChart(r)
	c := vgimg.NewWith(vgimg.UseWH(chartWidth, ch.height), vgimg.UseDPI(chartDPI))
	ch.draw(draw.New(c))
	_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
	return err
}

// A chart is laid out top to bottom: the title, the legend (entries left to
// right, wrapped), the plot (workload names on the left, one group of bars
// per workload, the ratio axis) and the caption. gonum draws the axis and
// the grid; the rest is drawn here so that it can be placed for fonts wider
// than the one gonum measures with (see wide).
type chart struct {
	plot    *plot.Plot // nil: nothing paired
	title   []string
	legend  [][]chartLegend // rows
	caption []string
	height  vg.Length
}

// Vertical space of one text line and one legend row.
func lineHeight(st text.Style) vg.Length { return st.FontExtents().Height * 1.2 }

func legendRowHeight() vg.Length { return max(lineHeight(sans(legendSize)), swatchH+4) }

// Legend swatches.
const (
	swatchW   = 18
	swatchH   = 10
	swatchGap = 5  // between a swatch and its text
	entryGap  = 18 // between entries
)

// buildChart lays out horizontal bars of log10(typed/upstream) per workload,
// first workload on top, with a line at 1×. Bars left of the line mean typed
// is lower; pale bars and "~" mark differences that are not significant.
func buildChart(r *Report) *chart {
	d := selectChartData(r)
	inner := chartWidth - 2*chartMargin
	ch := &chart{title: []string{chartTitle}}
	caption := chartCaption
	if d.mixed {
		caption += " " + chartMixed
	}
	ch.caption = wrapText(sans(captionSize), caption, inner)
	ch.legend = layoutLegend(d.legend, inner)
	if len(d.workloads) == 0 {
		ch.title = append(ch.title, "(no paired results)")
		ch.caption = nil
		ch.height = 2*chartMargin + ch.headerHeight() + 0.5*vg.Inch
		return ch
	}

	// Names take what they need up to 40% of the width; longer ones
	// are wrapped after a "/".
	nameW := vg.Length(0)
	for _, w := range d.workloads {
		nameW = max(nameW, wide(sans(nameSize), w.name))
	}
	nameW = min(nameW, inner*0.4)
	bars := newChartBars(d, nameW, chartMargin)
	p := plot.New()
	p.HideY()
	p.Y.Padding = nameW + 10 // room for the names, drawn by chartBars
	p.Y.Min, p.Y.Max = 0, float64(bars.height())
	p.X.Tick.Marker = ratioTicks{}
	setSans(&p.X.Tick.Label, 11)
	grid := plotter.NewGrid()
	grid.Horizontal.Color = color.Transparent
	grid.Vertical.Color = color.Gray{Y: 0xe6}
	p.Add(grid, bars)
	ch.plot = p

	// The ratio axis: room for the value labels beside the bar ends,
	// measured with wide, on the side each one is drawn. The data width is
	// what is left of the names, less room for the outer tick labels.
	dataW := inner - p.Y.Padding - chartRight - 24
	p.X.Min, p.X.Max = bars.xRange(dataW)

	// Height: header, rows, axis, caption.
	probe := vg.Length(1000)
	dc := p.DataCanvas(draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: inner - chartRight, Y: probe}}})
	axisH := probe - dc.Size().Y
	ch.height = 2*chartMargin + ch.headerHeight() + bars.height() + axisH + ch.footerHeight()
	return ch
}

// chartRight is left free right of the plot, where the outer tick label
// and the value labels may run in a wider font.
const chartRight = 6

// layoutLegend places the entries in rows of at most width.
func layoutLegend(entries []chartLegend, width vg.Length) [][]chartLegend {
	var rows [][]chartLegend
	var row []chartLegend
	var used vg.Length
	for _, e := range entries {
		w := legendEntryWidth(e)
		if len(row) > 0 && used+entryGap+w > width {
			rows = append(rows, row)
			row, used = nil, 0
		}
		if len(row) > 0 {
			used += entryGap
		}
		row = append(row, e)
		used += w
	}
	if len(row) > 0 {
		rows = append(rows, row)
	}
	return rows
}

func legendEntryWidth(e chartLegend) vg.Length {
	return swatchW + swatchGap + wide(sans(legendSize), e.text)
}

func (ch *chart) headerHeight() vg.Length {
	h := lineHeight(sans(titleSize)) * vg.Length(len(ch.title))
	if len(ch.legend) > 0 {
		h += 6 + legendRowHeight()*vg.Length(len(ch.legend))
	}
	return h + 10
}

func (ch *chart) footerHeight() vg.Length {
	if len(ch.caption) == 0 {
		return 0
	}
	return 6 + lineHeight(sans(captionSize))*vg.Length(len(ch.caption))
}

// draw renders the chart on c, which is chartWidth × ch.height.
func (ch *chart) draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	c = draw.Crop(c, chartMargin, -chartMargin, chartMargin, -chartMargin)
	center := (c.Min.X + c.Max.X) / 2

	// Header: the title lines, then the legend rows; all text left-aligned,
	// so that a wider font runs right, away from a swatch.
	y := c.Max.Y
	st := sans(titleSize)
	for _, line := range ch.title {
		lh := lineHeight(st)
		c.FillText(st, vg.Point{X: centred(st, line, center, c.Max.X), Y: y - lh/2}, line)
		y -= lh
	}
	if len(ch.legend) > 0 {
		y -= 6
	}
	st = sans(legendSize)
	for _, row := range ch.legend {
		rh := legendRowHeight()
		var rowW vg.Length
		for i, e := range row {
			if i > 0 {
				rowW += entryGap
			}
			rowW += legendEntryWidth(e)
		}
		x, mid := center-rowW/2, y-rh/2
		for _, e := range row {
			if e.floor {
				c.StrokeLine2(floorStyle, x+swatchW/2, mid-swatchH/2-1, x+swatchW/2, mid+swatchH/2+1)
			} else {
				clr := chartSeriesList[e.series].color
				c.FillPolygon(clr, rect(x, mid-swatchH/2, x+swatchW, mid+swatchH/2))
			}
			c.FillText(st, vg.Point{X: x + swatchW + swatchGap, Y: mid}, e.text)
			x += legendEntryWidth(e) + entryGap
		}
		y -= rh
	}
	if ch.plot == nil {
		return
	}
	top := c.Max.Y - y + 10

	// Footer: caption lines, centred like the title.
	st = sans(captionSize)
	y = c.Min.Y + ch.footerHeight()
	y -= 6
	for _, line := range ch.caption {
		lh := lineHeight(st)
		c.FillText(st, vg.Point{X: centred(st, line, center, c.Max.X), Y: y - lh/2}, line)
		y -= lh
	}
	ch.plot.Draw(draw.Crop(c, 0, -chartRight, ch.footerHeight(), -top))
}

// rect is the closed polygon of a rectangle.
func rect(x0, y0, x1, y1 vg.Length) []vg.Point {
	return []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
}

func pale(c color.RGBA) color.RGBA {
	mix := func(v uint8) uint8 { return uint8((int(v) + 3*0xff) / 4) }
	return color.RGBA{R: mix(c.R), G: mix(c.G), B: mix(c.B), A: 0xff}
}

// maxDecades is the most decades labelled on the ratio axis.
const maxDecades = 7

// maxTickDecades bounds the ratio axis's ticks: 1e-12× to 1e12×.
const maxTickDecades = 12

// ratioTicks labels a log10 axis with ratios: 0.1×, 0.2×, 0.5×, 1×, 2×, ...
type ratioTicks struct{}

func (ratioTicks) Ticks(min, max float64) []plot.Tick {
	// An axis range that is not finite (a bound at log10(0), or a
	// width with no room left for the bars) would make the loop below
	// run without end, appending ticks: the axis is labelled within
	// maxTickDecades of 1× instead.
	if math.IsNaN(min) || math.IsNaN(max) {
		return nil
	}
	min, max = math.Max(min, -maxTickDecades), math.Min(max, maxTickDecades)
	var ticks []plot.Tick
	for e := math.Floor(min) - 1; e <= math.Ceil(max)+1; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := math.Log10(m) + e
			if v < min || v > max {
				continue
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: fmtTick(m, e)})
		}
	}
	if len(ticks) <= 11 {
		return ticks
	}
	// Decades only, every step-th of them, 1× among them.
	var dec []plot.Tick
	for _, t := range ticks {
		if math.Abs(t.Value-math.Round(t.Value)) < 1e-9 {
			dec = append(dec, t)
		}
	}
	step := (len(dec) + maxDecades - 1) / maxDecades
	ticks = dec[:0]
	for _, t := range dec {
		if int(math.Round(t.Value))%step == 0 {
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// fmtTick formats m×10^e (m one digit) without exponent or rounding error.
func fmtTick(m, e float64) string {
	return strconv.FormatFloat(m*math.Pow(10, e), 'f', int(max(0, -e)), 64) + "×"
}
