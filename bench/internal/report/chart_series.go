package report

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"
)

// A chartSeries is one colour of bar. The figures it stands for are the
// units listed, in order of preference: a workload's bar shows the first of
// them the workload reports with both impls.
type chartSeries struct {
	slot  int      // series of one slot replace each other: the first with a figure wins
	units []string // as the benchmarks write them
	label string   // legend text; "" lists the units drawn
	color color.RGBA
}

// chartSeriesList is what the chart plots, per workload and top to bottom:
// the client's CPU (the e2e benchmarks report it per object or event; the
// wall time of a cold start against a real server is the server's, so it
// only stands in where no CPU figure is reported), the heap held per object,
// and the allocations. The in-process benchmarks report no CPU figure: there
// the wall time is the client's.
var chartSeriesList = []chartSeries{
	{slot: 0, units: []string{"cpu-ns/object", "cpu-ns/event"}, color: color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}},
	{slot: 0, units: []string{"ns/op"}, label: "time/op", color: color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}},
	{slot: 1, units: []string{"B/object"}, label: "B/object (heap held)", color: color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}},
	{slot: 2, units: []string{"allocs/object", "allocs/event", "allocs/op"}, color: color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}},
}

// chartBar is one figure of one workload.
type chartBar struct {
	series int // index in chartSeriesList
	unit   string
	ratio  float64 // typed / upstream, not NaN
	sig    bool    // significant difference
	// floor is the transport floor (impl=floor) over upstream, on the
	// bar's axis the least any informer could reach; 0 when the workload
	// has no floor or the bar is not of the client's CPU.
	floor float64
}

// chartWorkload is one row of the chart.
type chartWorkload struct {
	name string     // without the Benchmark prefix
	bars []chartBar // in slot order
}

// chartLegend is one legend entry: a series and the units drawn for it,
// or, with floor set, the mark of the transport floor.
type chartLegend struct {
	series int
	text   string
	floor  bool
}

// floorLegend is the legend's text for the floor's mark.
const floorLegend = "transport floor (impl=floor / upstream): no informer on the same transport goes below it"

// chartData is what the chart draws.
type chartData struct {
	workloads []chartWorkload
	legend    []chartLegend
	mixed     bool // a series drew more than one unit
}

// selectChartData picks the bars of every workload of r that has at least
// one; a workload without any of the units above is left out.
func selectChartData(r *Report) chartData {
	var d chartData
	drawn := make([][]string, len(chartSeriesList)) // units drawn per series
	floors := false
	for i := 0; i < len(r.Rows); {
		j := i + 1
		for j < len(r.Rows) && !r.Rows[j].First {
			j++
		}
		rows := r.Rows[i:j]
		w := chartWorkload{name: strings.Replace(r.Rows[i].Workload, "Benchmark", "", 1)} // "e2e.BenchmarkX" too
		slotDone := map[int]bool{}
		for k, s := range chartSeriesList {
			if slotDone[s.slot] {
				continue
			}
			if b, ok := pickBar(rows, s.units); ok {
				b.series = k
				floors = floors || b.floor > 0
				w.bars = append(w.bars, b)
				slotDone[s.slot] = true
				if !slices.Contains(drawn[k], b.unit) {
					drawn[k] = append(drawn[k], b.unit)
				}
			}
		}
		if len(w.bars) > 0 {
			d.workloads = append(d.workloads, w)
		}
		i = j
	}
	for k, s := range chartSeriesList {
		if len(drawn[k]) == 0 {
			continue
		}
		text := s.label
		if text == "" {
			var units []string // in the order of preference
			for _, u := range s.units {
				if slices.Contains(drawn[k], u) {
					units = append(units, u)
				}
			}
			text = strings.Join(units, ", ")
		}
		d.mixed = d.mixed || len(drawn[k]) > 1
		d.legend = append(d.legend, chartLegend{series: k, text: text})
	}
	if floors {
		d.legend = append(d.legend, chartLegend{text: floorLegend, floor: true})
	}
	return d
}

// pickBar returns the paired row of rows with the first of units.
func pickBar(rows []Row, units []string) (chartBar, bool) {
	for _, u := range units {
		for _, rw := range rows {
			if rw.Unit == u && rw.Cmp != nil && !math.IsNaN(rw.Ratio) {
				v := rw.Verdict()
				b := chartBar{unit: u, ratio: rw.Ratio, sig: v == "better" || v == "worse"}
				// The floor is drawn for the client's CPU, what it bounds:
				// the floor's allocations are next to none, and their mark
				// would only stretch the axis.
				if strings.HasPrefix(u, "cpu-ns/") && rw.Floor != nil && rw.UpstreamFloor > 0 && !math.IsInf(rw.UpstreamFloor, 0) {
					b.floor = 1 / rw.UpstreamFloor
				}
				return b, true
			}
		}
	}
	return chartBar{}, false
}

// String lists the bars one workload a line, for golden files:
// "ColdStart/pods=10k: cpu-ns/object 0.708×, B/object 0.822× ~".
func (d chartData) String() string {
	var b strings.Builder
	for _, l := range d.legend {
		fmt.Fprintf(&b, "legend: %s\n", l.text)
	}
	for _, w := range d.workloads {
		fmt.Fprintf(&b, "%s:", w.name)
		for i, bar := range w.bars {
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(&b, "%s %s %s", sep, bar.unit, bar.label())
		}
		b.WriteString("\n")
	}
	return b.String()
}

// label is the value written beside the bar: the ratio, with "~" when the
// difference is not significant, and the floor's ratio where there is one
// ("0.81× | floor 0.62×").
func (b chartBar) label() string {
	s := formatRatio(b.ratio)
	if !b.sig {
		s += " ~"
	}
	if b.floor > 0 {
		s += " | floor " + formatRatio(b.floor)
	}
	return s
}
