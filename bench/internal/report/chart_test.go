package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// svgText checks that the SVG is well-formed XML with an <svg> root and
// returns the text of its <text> elements.
func svgText(t *testing.T, svg []byte) []string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var texts []string
	var inText bool
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
			inText = tok.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		case xml.EndElement:
			inText = false
		}
	}
	if root != "svg" {
		t.Fatalf("root element is %q, want svg", root)
	}
	return texts
}

// renderSVG is r's chart.
func renderSVG(t *testing.T, r *Report) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSVG(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestWriteSVG(t *testing.T) {
	texts := svgText(t, renderSVG(t, buildAll(t, readTestdata(t, "paired.txt"), ".")))
	all := strings.Join(texts, "\n")
	for _, want := range []string{
		"informer: typed / upstream client-go, median per workload",
		// Workload labels without the Benchmark prefix.
		"IndexerAdd/objects=1000",
		"IndexerByIndex/objects=100000/match=1%",
		"WatchThroughput/handlers=4",
		"ListerSelector/objects=10000",
		// Legend, axis and the 1× reference.
		"time/op", "allocs/op", "1×", "0.1×",
		"typed / upstream (log scale)",
		// Value labels; "~" marks the non-significant ones.
		"0.605×", "0.335×", "0×", "1.04× ~", "0.982× ~",
	} {
		found := false
		for _, s := range texts {
			if s == want || strings.HasPrefix(s, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("SVG has no text %q; it has:\n%s", want, all)
		}
	}
	if strings.Contains(all, "BenchmarkIndexerAdd") {
		t.Error("labels keep the Benchmark prefix")
	}
}

func TestChartSeries(t *testing.T) {
	// Which figure each workload's bars show: the e2e workloads their
	// client-side figures (CPU per object or event, heap held per object,
	// allocations per object or event), WatchThroughput, which reports none
	// of them, its time/op and allocs/op; the in-process workloads time/op,
	// allocs/op and, where reported, B/object.
	for _, tt := range []struct{ input, golden string }{
		{"e2e.txt", "e2e-chart.txt"},
		{"paired.txt", "paired-chart.txt"},
	} {
		t.Run(tt.input, func(t *testing.T) {
			r := buildAll(t, readTestdata(t, tt.input), ".")
			checkGolden(t, tt.golden, []byte(selectChartData(r).String()))
		})
	}
}

func TestWriteSVGE2E(t *testing.T) {
	doc := parseSVG(t, renderSVG(t, buildAll(t, readTestdata(t, "e2e.txt"), ".")))
	var texts []string
	for _, tx := range doc.texts {
		texts = append(texts, tx.text)
	}
	for _, want := range []string{
		// Legend: the units drawn, per colour.
		"cpu-ns/object, cpu-ns/event", "time/op", "B/object (heap held)", "allocs/object, allocs/event, allocs/op",
		// cpu-ns/object, B/object, allocs/object of ColdStart/pods=10k.
		"0.708×", "0.822×", "0.442×",
		// cpu-ns/event of WatchCost; time/op and allocs/op of WatchThroughput.
		"0.807×", "1.00× ~",
	} {
		if !slices.Contains(texts, want) {
			t.Errorf("SVG has no text %q; it has:\n%s", want, strings.Join(texts, "\n"))
		}
	}
	// The wall time of ColdStart/pods=10k (0.817× ~) is not plotted.
	if slices.Contains(texts, "0.817× ~") {
		t.Error("ColdStart/pods=10k shows its time/op")
	}
}

func TestWriteSVGLayout(t *testing.T) {
	// With every text measured as the widest common sans-serif font would
	// draw it: no text leaves the picture, no two texts overlap, and no text
	// overlaps a bar or a legend swatch.
	tests := []struct {
		name string
		r    func(t *testing.T) *Report
	}{
		{"e2e", func(t *testing.T) *Report { return buildAll(t, readTestdata(t, "e2e.txt"), ".") }},
		{"in-process", func(t *testing.T) *Report { return buildAll(t, readTestdata(t, "paired.txt"), ".") }},
		{"extremes", func(t *testing.T) *Report { return buildAll(t, extremeData(t), ".") }},
		{"floor", func(t *testing.T) *Report { return buildAll(t, floorData(t), ".") }},
		{"empty", func(t *testing.T) *Report { return &Report{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkLayout(t, renderSVG(t, tt.r(t)))
		})
	}
}

// checkLayout checks the SVG's texts against the view box, each other and
// the filled rectangles, and that they fall back to a sans-serif font.
func checkLayout(t *testing.T, svg []byte) {
	t.Helper()
	doc := parseSVG(t, svg)
	if len(doc.texts) == 0 {
		t.Fatal("no text")
	}
	view := box{0, 0, doc.width, doc.height}
	for i, a := range doc.texts {
		if !view.contains(a.box) {
			t.Errorf("text %q %v is not inside the view box %v", a.text, a.box, view)
		}
		for _, c := range doc.texts[i+1:] {
			if a.box.overlaps(c.box) {
				t.Errorf("texts %q %v and %q %v overlap", a.text, a.box, c.text, c.box)
			}
		}
		for _, f := range doc.fills {
			if f.color != "#FFFFFF" && a.box.overlaps(f.box) {
				t.Errorf("text %q %v overlaps a %s rectangle %v", a.text, a.box, f.color, f.box)
			}
		}
		if !strings.Contains(a.style, "sans-serif") {
			t.Errorf("text %q has no generic font family: %s", a.text, a.style)
		}
	}
}

// extremeData has long names, ratios of 0 and of more than 100, and
// differences that are not significant on both sides of 1×.
func extremeData(t *testing.T) *Data {
	t.Helper()
	var b strings.Builder
	b.WriteString("pkg: example.com/x\n")
	for i := range 6 {
		line := func(name, impl string, ns, allocs float64) {
			fmt.Fprintf(&b, "%s/impl=%s-2 \t 100 \t %g ns/op \t %g B/op \t %g allocs/op\n", name, impl, ns, 10.0, allocs)
		}
		j := float64(i)
		line("BenchmarkAVeryLongWorkloadNameForTheLayout/objects=100000/match=1%/mode=whatever", "upstream", 1000+j, 50+j)
		line("BenchmarkAVeryLongWorkloadNameForTheLayout/objects=100000/match=1%/mode=whatever", "typed", 1+j/100, 0)
		line("BenchmarkSlower", "upstream", 10+j, 5+j)
		line("BenchmarkSlower", "typed", 12345+j, 500+j)
		line("BenchmarkSame", "upstream", 100+j, 10+j)
		line("BenchmarkSame", "typed", 105-j, 10-j)
	}
	path := filepath.Join(t.TempDir(), "extremes.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return ReadFiles([]string{path})
}

// A box is a rectangle of the SVG's view box, y down.
type box struct{ x0, y0, x1, y1 float64 }

func (a box) overlaps(b box) bool {
	return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1
}

func (a box) contains(b box) bool {
	return b.x0 >= a.x0 && b.x1 <= a.x1 && b.y0 >= a.y0 && b.y1 <= a.y1
}

func (a box) String() string {
	return fmt.Sprintf("[%.1f,%.1f]x[%.1f,%.1f]", a.x0, a.x1, a.y0, a.y1)
}

type svgTextBox struct {
	text, style string
	box         box
}

type svgFill struct {
	color string
	box   box
}

type svgDoc struct {
	width, height float64
	texts         []svgTextBox
	fills         []svgFill // filled paths, by their bounding box
}

var (
	fontSizeRE = regexp.MustCompile(`font-size:([0-9.]+)px`)
	fillRE     = regexp.MustCompile(`^fill:(#[0-9A-Fa-f]{6})$`)
	pointRE    = regexp.MustCompile(`(-?[0-9.]+(?:e-?[0-9]+)?),(-?[0-9.]+(?:e-?[0-9]+)?)`)
)

// parseSVG reads what gonum's vgsvg writes: a group flipping y, texts
// flipped back (so a text at y is at height+y in the view box) and paths
// of M/L commands. A text's box is its wide width from x, and from 0.93 of
// its size above the baseline to 0.24 below (DejaVu Sans' ascent and
// descent; Liberation Sans has less).
func parseSVG(t *testing.T, svg []byte) svgDoc {
	t.Helper()
	svgText(t, svg) // well-formed, <svg> root
	var doc svgDoc
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var cur *svgTextBox
	attr := func(e xml.StartElement, name string) string {
		for _, a := range e.Attr {
			if a.Name.Local == name {
				return a.Value
			}
		}
		return ""
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("bad number %q: %v", s, err)
		}
		return v
	}
	var pending xml.StartElement
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			switch tok.Name.Local {
			case "svg":
				vb := strings.Fields(attr(tok, "viewBox"))
				if len(vb) != 4 {
					t.Fatalf("viewBox = %q", attr(tok, "viewBox"))
				}
				doc.width, doc.height = num(vb[2]), num(vb[3])
			case "text":
				pending = tok.Copy()
				cur = &svgTextBox{}
			case "path":
				m := fillRE.FindStringSubmatch(attr(tok, "style"))
				if m == nil {
					continue // a stroke
				}
				b := box{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
				for _, p := range pointRE.FindAllStringSubmatch(attr(tok, "d"), -1) {
					x, y := num(p[1]), doc.height-num(p[2])
					b = box{math.Min(b.x0, x), math.Min(b.y0, y), math.Max(b.x1, x), math.Max(b.y1, y)}
				}
				doc.fills = append(doc.fills, svgFill{color: strings.ToUpper(m[1]), box: b})
			}
		case xml.CharData:
			if cur != nil {
				cur.text += string(tok)
			}
		case xml.EndElement:
			if tok.Name.Local != "text" || cur == nil {
				continue
			}
			cur.style = attr(pending, "style")
			m := fontSizeRE.FindStringSubmatch(cur.style)
			if m == nil {
				t.Fatalf("text %q has no font size: %s", cur.text, cur.style)
			}
			size := num(m[1])
			x, y := num(attr(pending, "x")), doc.height+num(attr(pending, "y"))
			w := float64(wide(sans(size), cur.text))
			cur.box = box{x, y - 0.93*size, x + w, y + 0.24*size}
			doc.texts = append(doc.texts, *cur)
			cur = nil
		}
	}
	return doc
}

func TestWriteSVGEmpty(t *testing.T) {
	// A run where nothing paired still gets a well-formed chart that says so.
	var b bytes.Buffer
	if err := WriteSVG(&b, &Report{}); err != nil {
		t.Fatal(err)
	}
	texts := svgText(t, b.Bytes())
	if !strings.Contains(strings.Join(texts, " "), "no paired results") {
		t.Errorf("empty chart texts = %q", texts)
	}
}

func TestWritePNG(t *testing.T) {
	r := buildAll(t, readTestdata(t, "paired.txt"), ".")
	var b bytes.Buffer
	if err := WritePNG(&b, r); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	// 10 inches at 110 dpi; 9 workloads at half an inch plus the overhead.
	if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w != 1100 || h < 600 || h > 800 {
		t.Errorf("PNG is %dx%d", w, h)
	}
}

func TestRatioTicks(t *testing.T) {
	labels := func(min, max float64) string {
		var s []string
		for _, tk := range (ratioTicks{}).Ticks(min, max) {
			s = append(s, tk.Label)
		}
		return strings.Join(s, " ")
	}
	if got := labels(-0.5, 0.5); got != "0.5× 1× 2×" {
		t.Errorf("ticks(-0.5, 0.5) = %s", got)
	}
	if got := labels(-1.1, 0.4); got != "0.1× 0.2× 0.5× 1× 2×" {
		t.Errorf("ticks(-1.1, 0.4) = %s", got)
	}
	// Wide ranges keep decades only.
	if got := labels(-3.2, 1.2); got != "0.001× 0.01× 0.1× 1× 10×" {
		t.Errorf("ticks(-3.2, 1.2) = %s", got)
	}
	// A range that is not finite ends (it ran without end, appending
	// ticks, until the process held 24 GB), labelled within 1e±12.
	for _, r := range [][2]float64{{math.Inf(-1), 0.5}, {-0.5, math.Inf(1)}, {math.Inf(-1), math.Inf(1)}, {math.NaN(), 1}} {
		ticks := (ratioTicks{}).Ticks(r[0], r[1])
		if len(ticks) > 2*maxTickDecades+1 {
			t.Errorf("ticks(%v, %v): %d", r[0], r[1], len(ticks))
		}
		for _, tk := range ticks {
			if math.IsInf(tk.Value, 0) || math.IsNaN(tk.Value) || math.Abs(tk.Value) > maxTickDecades {
				t.Errorf("ticks(%v, %v) has a tick at %v", r[0], r[1], tk.Value)
			}
		}
	}
}

// floorData has a workload with a transport floor (impl=floor) beside the
// pair, for five rounds, one whose typed side is above upstream, and one
// without a floor.
func floorData(t *testing.T) *Data {
	t.Helper()
	var b strings.Builder
	b.WriteString("pkg: example.com/e2e\n")
	for i := range 5 {
		j := float64(i) * 100
		fmt.Fprintf(&b, "BenchmarkWatchCost/impl=upstream-2 1 4000000000 ns/op %g cpu-ns/event %g allocs/event\n", 80000+j, 33+j/100)
		fmt.Fprintf(&b, "BenchmarkWatchCost/impl=typed-2 1 4000000000 ns/op %g cpu-ns/event %g allocs/event\n", 64000+j, 10+j/100)
		fmt.Fprintf(&b, "BenchmarkWatchCost/impl=floor-2 1 4000000000 ns/op %g cpu-ns/event %g allocs/event\n", 48000+j, 1+j/100)
		fmt.Fprintf(&b, "BenchmarkWatchCostPods/writes=status/impl=upstream-2 1 4000000000 ns/op %g cpu-ns/event\n", 300000+j)
		fmt.Fprintf(&b, "BenchmarkWatchCostPods/writes=status/impl=typed-2 1 4000000000 ns/op %g cpu-ns/event\n", 330000+j)
		fmt.Fprintf(&b, "BenchmarkWatchCostPods/writes=status/impl=floor-2 1 4000000000 ns/op %g cpu-ns/event\n", 120000+j)
		fmt.Fprintf(&b, "BenchmarkColdStart/impl=upstream-2 1 1 ns/op %g cpu-ns/object\n", 30+j/100)
		fmt.Fprintf(&b, "BenchmarkColdStart/impl=typed-2 1 1 ns/op %g cpu-ns/object\n", 20+j/100)
	}
	path := filepath.Join(t.TempDir(), "floor.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return ReadFiles([]string{path})
}

// A workload with a transport floor gets the floor's ratio to upstream on
// its CPU bar (a mark, and its value in the label; not on its allocations)
// and the chart a legend entry for the mark; a workload without one gets
// neither, and a chart of none has no such entry.
func TestChartFloor(t *testing.T) {
	d := selectChartData(buildAll(t, floorData(t), "."))
	got := d.String()
	for _, want := range []string{
		"legend: " + floorLegend + "\n",
		"WatchCost: cpu-ns/event 0.800× | floor 0.601×, allocs/event 0.343×\n",
		"WatchCostPods/writes=status: cpu-ns/event 1.10× | floor 0.400×\n",
		"ColdStart: cpu-ns/object 0.688×\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("chart data has no %q:\n%s", want, got)
		}
	}
	texts := svgText(t, renderSVG(t, buildAll(t, floorData(t), ".")))
	for _, want := range []string{floorLegend, "0.800× | floor 0.601×", "1.10× | floor 0.400×"} {
		if !slices.Contains(texts, want) {
			t.Errorf("SVG has no text %q; it has:\n%s", want, strings.Join(texts, "\n"))
		}
	}
	if s := selectChartData(buildAll(t, readTestdata(t, "e2e.txt"), ".")).String(); strings.Contains(s, "floor") {
		t.Errorf("a report without impl=floor has a floor in its chart:\n%s", s)
	}
}
