package binsize

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNoReflectMethod builds the library's programs with -ldflags=-dumpdep
// and fails if a reachable function other than package reflect's own is
// marked <ReflectMethod>: one call of reflect.Value.Method, or of
// MethodByName with a name that is not a constant, makes the linker keep
// every exported method of every reachable type (66.9 MB against client-go's
// 40.1 MB for the informer program, before the factory's reflection over a
// clientset moved behind NewFactoryForClients).
func TestNoReflectMethod(t *testing.T) {
	if testing.Short() {
		t.Skip("links two Kubernetes programs (a minute)")
	}
	for _, prog := range []string{"informer", "typedcache"} {
		t.Run(prog, func(t *testing.T) {
			cmd := exec.Command("go", "build", "-ldflags=-dumpdep", "-o", os.DevNull, "./"+prog)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("go build: %v\n%s", err, tail(out.String()))
			}
			if marked := reflectMethods(out.Bytes()); len(marked) > 0 {
				t.Errorf("reachable functions that turn dead-code elimination off:\n%s", strings.Join(marked, "\n"))
			}
		})
	}
}

// reflectMethods returns the functions the linker's dependency dump marks
// <ReflectMethod> as the source of an edge (so reachable), but for package
// reflect's own and type descriptors' method tables, which every program
// has.
func reflectMethods(dump []byte) []string {
	seen := map[string]bool{}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(dump))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		src, _, ok := strings.Cut(line, " -> ")
		if !ok || !strings.HasSuffix(src, " <ReflectMethod>") {
			continue
		}
		name := strings.TrimSuffix(src, " <ReflectMethod>")
		if strings.HasPrefix(name, "reflect.") || strings.HasPrefix(name, "type:") || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, name)
	}
	return out
}

// TestReflectMethodsFinds checks the dump reader on lines of a real dump.
func TestReflectMethodsFinds(t *testing.T) {
	dump := []byte(strings.Join([]string{
		"github.com/typedkube/informer.(*typedClientMapper).scan-fm -> github.com/typedkube/informer.(*typedClientMapper).scan <ReflectMethod>",
		"github.com/typedkube/informer.(*typedClientMapper).scan <ReflectMethod> -> k8s.io/client-go/kubernetes.New",
		"type:reflect.Value <UsedInIface> -> reflect.(*Value).Method <ReflectMethod>",
		"reflect.(*rtype).Methods -> reflect.(*rtype).Methods.func1 <ReflectMethod>",
		"reflect.Value.Methods <ReflectMethod> -> reflect.Value.Methods.func1",
	}, "\n"))
	got := reflectMethods(dump)
	if len(got) != 1 || got[0] != "github.com/typedkube/informer.(*typedClientMapper).scan" {
		t.Errorf("reflectMethods = %q", got)
	}
}

func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}
