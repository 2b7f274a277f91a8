package docscheck

import (
	"strings"
	"testing"
)

func TestSlug(t *testing.T) {
	for _, tt := range []struct{ heading, want string }{
		{"Where we differ from client-go v0.37.2", "where-we-differ-from-client-go-v0372"},
		{"controller-runtime: one line", "controller-runtime-one-line"},
		{"Per-type options, several namespaces", "per-type-options-several-namespaces"},
		{"A compact store: full objects at a sixth of client-go's heap", "a-compact-store-full-objects-at-a-sixth-of-client-gos-heap"},
		{"`informertest`: fakes for unit tests", "informertest-fakes-for-unit-tests"},
		{"The [factory](factory.md) and *you*", "the-factory-and-you"},
		{"Ratios ≤ 0.5×", "ratios--05"},
		{"snake_case µs", "snake_case-µs"},
	} {
		if got := Slug(tt.heading); got != tt.want {
			t.Errorf("Slug(%q) = %q, want %q", tt.heading, got, tt.want)
		}
	}
}

func TestParse(t *testing.T) {
	d := Parse("x.md", strings.Join([]string{
		"# Title",
		"See [a](a.md#b) and ![c](c.svg), not `[d](d.md)`.",
		"## Title",
		"<!-- [e](e.md) -->",
		"- item",
		"",
		"  ```go",
		"  x := 1",
		"  ```",
		"<a id=\"here\"></a>",
		"[ref]: r.md",
		"<!-- docs-check: skip -->",
		"```go",
		"broken(",
		"```",
	}, "\n"))
	var links []string
	for _, l := range d.Links {
		links = append(links, l.Target)
	}
	if got, want := strings.Join(links, " "), "a.md#b c.svg r.md"; got != want {
		t.Errorf("links %q, want %q", got, want)
	}
	for _, a := range []string{"title", "title-1", "here"} {
		if !d.Anchors[a] {
			t.Errorf("no anchor %q in %v", a, d.Anchors)
		}
	}
	if len(d.Blocks) != 2 || d.Blocks[0].Code != "x := 1\n" || d.Blocks[0].Line != 8 || d.Blocks[0].Skip || !d.Blocks[1].Skip {
		t.Errorf("blocks %+v", d.Blocks)
	}
}

func TestWrap(t *testing.T) {
	for _, tt := range []struct {
		name, code string
		want       []string // substrings of the file
		err        bool
	}{
		{"statements", "pods, err := informer.For[*corev1.Pod](f)\n", []string{
			`corev1 "k8s.io/api/core/v1"`, `informer "github.com/typedkube/informer"`, "func _() {", "var f *informer.Factory"}, false},
		{"declarations", "type PodSlim struct {\n\twire.Meta[PodSlim]\n}\n", []string{`wire "github.com/typedkube/informer/wire"`, "type PodSlim"}, false},
		{"declarations then statements", "type X struct{ N int }\n\nx := X{N: 1}\nfmt.Println(x)\n", []string{"type X struct", "func _() {\n//line d.md:5\nx := X"}, false},
		{"expression", "ctrl.Options{\n\tNewCache: typedcache.New,\n}\n", []string{"var _ =", `ctrl "sigs.k8s.io/controller-runtime"`}, false},
		{"imports", "import \"github.com/typedkube/informer\"\n\nvar _ = informer.NewFactory\nvar _ = corev1.Pod{}\n", []string{"\t\"github.com/typedkube/informer\"\n)"}, false},
		{"full", "package main\n\nfunc main() {}\n", []string{"//line d.md:3\npackage main"}, false},
		{"broken", "x := (\n", nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Wrap("d.md", Block{Info: "go", Line: 3, Code: tt.code}, "p")
			if (err != nil) != tt.err {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				return
			}
			for _, w := range tt.want {
				if !strings.Contains(s.Src, w) {
					t.Errorf("no %q in\n%s", w, s.Src)
				}
			}
			if tt.name == "imports" && strings.Contains(s.Src, "k8s.io/api") {
				t.Errorf("a fragment with imports got more:\n%s", s.Src)
			}
		})
	}
}
