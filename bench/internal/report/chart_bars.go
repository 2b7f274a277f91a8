package report

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// chartBars is the plotter of the chart's rows: per workload its name
// (left-aligned from nameLeft, in the room the Y axis padding leaves), its
// bars from the 1× line to log10 of the ratio, centred on the row, and
// each bar's value beside its end. A row is as high as its bars plus
// chartRowGap; the Y axis counts points from the bottom, so the first
// workload is on top.
type chartBars struct {
	data     chartData
	names    [][]string // per workload, its name's lines
	nameLeft vg.Length  // x of the names on the canvas
}

// newChartBars lays out the names of d's workloads in lines of at most
// nameW (wide widths).
func newChartBars(d chartData, nameW, nameLeft vg.Length) *chartBars {
	b := &chartBars{data: d, nameLeft: nameLeft}
	for _, w := range d.workloads {
		b.names = append(b.names, wrapName(sans(nameSize), w.name, nameW))
	}
	return b
}

// rowHeight is the height of workload i's row: its bars or its name's
// lines, and a gap.
func (b *chartBars) rowHeight(i int) vg.Length {
	bars := barThickness * vg.Length(len(b.data.workloads[i].bars))
	name := lineHeight(sans(nameSize)) * vg.Length(len(b.names[i]))
	return max(bars, name) + chartRowGap
}

// height is the height of all rows.
func (b *chartBars) height() vg.Length {
	var h vg.Length
	for i := range b.data.workloads {
		h += b.rowHeight(i)
	}
	return h
}

// floorStyle draws the transport floor's mark.
var floorStyle = draw.LineStyle{Color: color.Gray{Y: 0x10}, Width: vg.Points(2.5)}

// valueGap is between a bar's end and its label; minBar is the shortest bar
// drawn.
const (
	valueGap = 4
	minBar   = 3
)

// pos is where a ratio's bar ends in log10 space, 0 and +Inf at the edges
// beyond the finite ratios.
func (b *chartBars) pos(r float64) float64 {
	lo, hi := b.finiteRange()
	switch {
	case r <= 0:
		return lo - 0.05*(hi-lo)
	case math.IsInf(r, 1):
		return hi + 0.05*(hi-lo)
	}
	return math.Log10(r)
}

// finiteRange is the log10 range of the finite ratios, at least 0.5× to 2×.
func (b *chartBars) finiteRange() (lo, hi float64) {
	lo, hi = math.Log10(0.5), math.Log10(2)
	for _, w := range b.data.workloads {
		for _, bar := range w.bars {
			for _, r := range []float64{bar.ratio, bar.floor} {
				if r > 0 && !math.IsInf(r, 0) {
					lo, hi = math.Min(lo, math.Log10(r)), math.Max(hi, math.Log10(r))
				}
			}
		}
	}
	return lo, hi
}

// xRange is the X axis range that fits every bar and, in a data area
// dataW wide, every value label measured with wide.
func (b *chartBars) xRange(dataW vg.Length) (xMin, xMax float64) {
	st := sans(valueSize)
	lo, hi := 0.0, 0.0 // the 1× line
	var left, right vg.Length
	for _, w := range b.data.workloads {
		for _, bar := range w.bars {
			v := b.pos(bar.ratio)
			lo, hi = math.Min(lo, v), math.Max(hi, v)
			if bar.floor > 0 {
				f := b.pos(bar.floor)
				lo, hi = math.Min(lo, f), math.Max(hi, f)
			}
			lw := wide(st, bar.label()) + valueGap
			if v < 0 {
				left = max(left, lw)
			} else {
				right = max(right, lw)
			}
		}
	}
	flo, fhi := b.finiteRange()
	lo, hi = math.Min(lo, flo), math.Max(hi, fhi)
	// Points left for the bars; a third of the width at least.
	barsW := max(dataW-left-right, dataW/3)
	k := (hi - lo) / float64(barsW) // log10 units per point
	return lo - float64(left)*k, hi + float64(right)*k
}

// Plot implements plot.Plotter.
func (b *chartBars) Plot(c draw.Canvas, p *plot.Plot) {
	x := func(v float64) vg.Length { return c.X(p.X.Norm(v)) }
	top := b.height()
	nameSt, valueSt := sans(nameSize), sans(valueSize)
	valueSt.Color = color.Gray{Y: 0x20}
	x0 := x(0)
	for i, w := range b.data.workloads {
		rh := b.rowHeight(i)
		yc := c.Y(p.Y.Norm(float64(top - rh/2)))
		top -= rh
		lh := lineHeight(nameSt)
		for j, line := range b.names[i] {
			ly := yc + (vg.Length(len(b.names[i])-1)/2-vg.Length(j))*lh
			c.FillText(nameSt, vg.Point{X: b.nameLeft, Y: ly}, line)
		}
		for k, bar := range w.bars {
			// Bar k of nb, top to bottom, the group centred on the row.
			mid := yc + (vg.Length(len(w.bars))/2-vg.Length(k)-0.5)*barThickness
			x1 := x(b.pos(bar.ratio))
			if d := x1 - x0; d > -minBar && d < minBar { // a bar of ~1× still shows its colour
				x1 = x0 + minBar
				if bar.ratio < 1 {
					x1 = x0 - minBar
				}
			}
			clr := chartSeriesList[bar.series].color
			if !bar.sig {
				clr = pale(clr)
			}
			h := barThickness * 0.92 / 2
			c.FillPolygon(clr, rect(min(x0, x1), mid-h, max(x0, x1), mid+h))
			lbl := bar.label()
			lx := x1 + valueGap
			if x1 < x0 {
				lx = x1 - valueGap - wide(valueSt, lbl)
			}
			if bar.floor > 0 {
				// The floor: a dark mark across the bar, where the bar
				// would end if the informer cost only the transport. The
				// label starts beyond the bar or the mark, whichever is
				// further out.
				xf := x(b.pos(bar.floor))
				c.StrokeLine2(floorStyle, xf, mid-h-1, xf, mid+h+1)
				if x1 < x0 && xf < x1 {
					lx = xf - valueGap - wide(valueSt, lbl)
				} else if x1 >= x0 && xf > x1 {
					lx = xf + valueGap
				}
			}
			c.FillText(valueSt, vg.Point{X: lx, Y: mid}, lbl)
		}
	}
	// The 1× line over the bars' roots.
	ls := draw.LineStyle{Color: color.Gray{Y: 0x30}, Width: vg.Points(1.5)}
	c.StrokeLine2(ls, x0, c.Min.Y, x0, c.Max.Y)
}
