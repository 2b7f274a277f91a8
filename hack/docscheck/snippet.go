package docscheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// A Go snippet is either a complete file (it starts with a package clause), type-checked as it
// is, or a fragment, made into a file:
//
//   - Leading import declarations are the fragment's imports. A fragment that has them must be
//     complete: it gets no other import and no given, so that "with every import" stays true.
//   - Otherwise each package it uses by its usual name (corev1, metav1, informer, ctrl: see
//     imports) is imported, and each name of givens it uses without declaring it is declared,
//     with the type a reader's program would have (ctx is a context.Context, f an
//     *informer.Factory).
//   - The rest is top-level declarations, or statements (the body of a function), or
//     declarations then statements, or one expression, whichever parses.
//
// Fragments may declare variables they do not use (p, ok := pods.GetByKey(key) shows what
// GetByKey returns); every other compile error fails the check, reported at the snippet's line.

// imports are the packages a fragment may use without importing them, by the name it uses.
var imports = map[string]string{
	"context":  "context",
	"errors":   "errors",
	"fmt":      "fmt",
	"http":     "net/http",
	"log":      "log",
	"os":       "os",
	"slices":   "slices",
	"strings":  "strings",
	"sync":     "sync",
	"testing":  "testing",
	"time":     "time",
	"iter":     "iter",
	"signal":   "os/signal",
	"atomic":   "sync/atomic",
	"maps":     "maps",
	"strconv":  "strconv",
	"filepath": "path/filepath",
	"reflect":  "reflect",

	"informer":     "github.com/typedkube/informer",
	"clientgo":     "github.com/typedkube/informer/clientgo",
	"informertest": "github.com/typedkube/informer/informertest",
	"shard":        "github.com/typedkube/informer/shard",
	"wire":         "github.com/typedkube/informer/wire",
	"watchconn":    "github.com/typedkube/informer/watchconn",
	"typedcache":   "github.com/typedkube/informer/controllerruntime/typedcache",
	"informerprom": "github.com/typedkube/informer/examples/prometheus",

	"appsv1":         "k8s.io/api/apps/v1",
	"coordinationv1": "k8s.io/api/coordination/v1",
	"corev1":         "k8s.io/api/core/v1",
	"apierrors":      "k8s.io/apimachinery/pkg/api/errors",
	"meta":           "k8s.io/apimachinery/pkg/api/meta",
	"resource":       "k8s.io/apimachinery/pkg/api/resource",
	"metav1":         "k8s.io/apimachinery/pkg/apis/meta/v1",
	"unstructured":   "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured",
	"fields":         "k8s.io/apimachinery/pkg/fields",
	"labels":         "k8s.io/apimachinery/pkg/labels",
	"runtime":        "k8s.io/apimachinery/pkg/runtime",
	"schema":         "k8s.io/apimachinery/pkg/runtime/schema",
	"types":          "k8s.io/apimachinery/pkg/types",
	"watch":          "k8s.io/apimachinery/pkg/watch",
	"kubernetes":     "k8s.io/client-go/kubernetes",
	"fake":           "k8s.io/client-go/kubernetes/fake",
	"corev1listers":  "k8s.io/client-go/listers/core/v1",
	"rest":           "k8s.io/client-go/rest",
	"clienttesting":  "k8s.io/client-go/testing",
	"toolscache":     "k8s.io/client-go/tools/cache",
	"clientcmd":      "k8s.io/client-go/tools/clientcmd",
	"workqueue":      "k8s.io/client-go/util/workqueue",
	"ptr":            "k8s.io/utils/ptr",
	"prometheus":     "github.com/prometheus/client_golang/prometheus",
	"ctrl":           "sigs.k8s.io/controller-runtime",
	"builder":        "sigs.k8s.io/controller-runtime/pkg/builder",
	"cache":          "sigs.k8s.io/controller-runtime/pkg/cache",
	"client":         "sigs.k8s.io/controller-runtime/pkg/client",
	"handler":        "sigs.k8s.io/controller-runtime/pkg/handler",
	"reconcile":      "sigs.k8s.io/controller-runtime/pkg/reconcile",
}

// givens are the names fragments use without declaring them, with their types: what a
// reader's program has at hand where the fragment goes.
var givens = map[string]string{
	"ctx":               "context.Context",
	"cfg":               "*rest.Config",
	"clientset":         "kubernetes.Interface",
	"cs":                "*fake.Clientset",
	"f":                 "*informer.Factory",
	"factory":           "*informer.Factory",
	"pod":               "*corev1.Pod",
	"pods":              "*informer.SharedIndexInformer[*corev1.Pod]",
	"nodes":             "*informer.SharedIndexInformer[*corev1.Node]",
	"cms":               "*informer.SharedIndexInformer[*corev1.ConfigMap]",
	"inf":               "*informer.SharedIndexInformer[*corev1.Pod]",
	"cm":                "*corev1.ConfigMap",
	"ns":                "string",
	"podName":           "string",
	"queue":             "workqueue.TypedInterface[string]",
	"handler":           "informer.ResourceEventHandler[*corev1.Pod]",
	"byZone":            "informer.IndexFunc[*corev1.Node]",
	"dropManagedFields": "toolscache.TransformFunc",
	"registry":          "*prometheus.Registry",
	"scheme":            "*runtime.Scheme",
	"mgr":               "ctrl.Manager",
}

// Snippet is a Go block made into a file.
type Snippet struct {
	Doc   string
	Block Block
	Full  bool   // a complete file, type-checked as it is
	Src   string // the file; //line directives map it to the Markdown
}

// Wrap makes the Go block b of the Markdown file doc into a file of package pkg.
func Wrap(doc string, b Block, pkg string) (*Snippet, error) {
	s := &Snippet{Doc: doc, Block: b}
	lines := strings.Split(strings.TrimRight(b.Code, "\n"), "\n")
	first := 0
	for first < len(lines) && (strings.TrimSpace(lines[first]) == "" || strings.HasPrefix(strings.TrimSpace(lines[first]), "//")) {
		first++
	}
	if first < len(lines) && strings.HasPrefix(lines[first], "package ") {
		s.Full = true
		s.Src = lineDirective(doc, b.Line) + b.Code
		return s, nil
	}

	// Leading imports.
	var explicit []string
	i := first
	for i < len(lines) && strings.HasPrefix(lines[i], "import") {
		if strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(lines[i], "import")), "(") {
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != ")"; i++ {
				explicit = append(explicit, lines[i])
			}
		} else {
			explicit = append(explicit, strings.TrimPrefix(lines[i], "import"))
		}
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) == ""; i++ {
		}
	}
	if i > first {
		first = i
	}
	rest := lines[first:]
	at := b.Line + first

	body, err := shape(doc, at, rest)
	if err != nil {
		return nil, err
	}
	file := func(importLines []string, extra string) string {
		var src strings.Builder
		fmt.Fprintf(&src, "%spackage %s\n\nimport (\n", lineDirective(doc, b.Line), pkg)
		for _, l := range importLines {
			src.WriteString("\t" + strings.TrimSpace(l) + "\n")
		}
		src.WriteString(")\n\n" + body + extra)
		return src.String()
	}
	if explicit != nil {
		s.Src = file(explicit, "")
		return s, nil
	}

	// Givens, then the imports that the fragment and the givens' types use.
	var extra strings.Builder
	unresolved, err := unresolvedNames(file(nil, ""))
	if err != nil {
		return nil, err
	}
	var given []string
	for _, name := range slices.Sorted(maps.Keys(unresolved)) {
		if typ, ok := givens[name]; ok {
			given = append(given, name)
			fmt.Fprintf(&extra, "var %s %s\n", name, typ)
		}
	}
	if extra.Len() > 0 {
		extra.WriteString("\nvar _ = []any{" + strings.Join(given, ", ") + "}\n")
		extra = *withDirective(&extra)
	}
	unresolved, err = unresolvedNames(file(nil, extra.String()))
	if err != nil {
		return nil, err
	}
	var auto []string
	for _, name := range slices.Sorted(maps.Keys(unresolved)) {
		if path, ok := imports[name]; ok {
			auto = append(auto, name+" "+strconv.Quote(path))
		}
	}
	s.Src = file(auto, extra.String())
	return s, nil
}

func withDirective(b *strings.Builder) *strings.Builder {
	var out strings.Builder
	out.WriteString("\n" + lineDirective("docscheck-givens.go", 1))
	out.WriteString(b.String())
	return &out
}

// shape returns the fragment's lines as Go top-level code: declarations, a function body,
// declarations and a function body, or an expression, whichever parses.
func shape(doc string, at int, lines []string) (string, error) {
	join := func(from, to int) string {
		return lineDirective(doc, at+from) + strings.Join(lines[from:to], "\n") + "\n"
	}
	decls := func(from, to int) string { return join(from, to) }
	stmts := func(from, to int) string { return "func _() {\n" + join(from, to) + "}\n" }
	n := len(lines)
	// Declarations, then declarations followed by statements (the longest run of declarations
	// first), then statements, then one expression.
	candidates := []string{decls(0, n)}
	for k := n - 1; k > 0; k-- {
		if strings.TrimSpace(lines[k]) == "" || strings.ContainsAny(lines[k][:1], " \t})") {
			continue
		}
		candidates = append(candidates, decls(0, k)+stmts(k, n))
	}
	candidates = append(candidates, stmts(0, n), "var _ =\n"+join(0, n))
	var bodyErr error
	for _, c := range candidates {
		f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+c, parser.SkipObjectResolution)
		if err != nil {
			if strings.HasPrefix(c, "func _()") {
				bodyErr = err
			}
			continue
		}
		if isValue(f) {
			continue // a composite literal or other value: the expression's turn
		}
		return c, nil
	}
	return "", fmt.Errorf("%s:%d: a Go block that parses neither as declarations, nor as statements, nor as an expression: %w", doc, at, bodyErr)
}

// isValue reports whether f is the statements form of one expression that is not a call.
func isValue(f *ast.File) bool {
	if len(f.Decls) != 1 {
		return false
	}
	fn, ok := f.Decls[0].(*ast.FuncDecl)
	if !ok || fn.Name.Name != "_" || len(fn.Body.List) != 1 {
		return false
	}
	es, ok := fn.Body.List[0].(*ast.ExprStmt)
	if !ok {
		return false
	}
	_, call := es.X.(*ast.CallExpr)
	return !call
}

// unresolvedNames returns the names src uses and does not declare: packages, givens and the
// universe's names, but not the keys of composite literals (field names, left unresolved too).
func unresolvedNames(src string) (map[string]bool, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, 0)
	if err != nil {
		return nil, err
	}
	keys := map[*ast.Ident]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if kv, ok := n.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok {
				keys[id] = true
			}
		}
		return true
	})
	names := map[string]bool{}
	for _, id := range f.Unresolved {
		if !keys[id] {
			names[id.Name] = true
		}
	}
	return names, nil
}

func lineDirective(file string, line int) string {
	return fmt.Sprintf("//line %s:%d\n", file, line)
}
