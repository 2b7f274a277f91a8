package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
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

func TestWriteSVG(t *testing.T) {
	r := buildAll(t, readTestdata(t, "paired.txt"), ".")
	var b bytes.Buffer
	if err := WriteSVG(&b, r); err != nil {
		t.Fatal(err)
	}
	texts := svgText(t, b.Bytes())
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
}
