package benchmarks

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkBinarySize builds the programs of e2e/binsize, the same program
// on the library and on client-go's informer factory (program=informer: a
// typed Pod informer, synced and listed) or controller-runtime's cache
// (program=manager: a manager with a Pod controller), with the default
// flags (symbols and DWARF kept, as go build makes them), and reports each
// binary's size (B/binary) and that of its text, read-only data and pc
// tables (text-B/binary): what an image, start-up and the page cache pay.
// No server is used; each round builds once.
func BenchmarkBinarySize(b *testing.B) {
	for _, prog := range []struct{ name, upstream, typed string }{
		{"informer", "clientgo", "informer"},
		{"manager", "controllerruntime", "typedcache"},
	} {
		for _, impl := range []struct{ name, dir string }{{"upstream", prog.upstream}, {"typed", prog.typed}} {
			b.Run("program="+prog.name+"/impl="+impl.name, func(b *testing.B) {
				out := filepath.Join(b.TempDir(), impl.dir)
				for b.Loop() {
					cmd := exec.Command("go", "build", "-o", out, "../binsize/"+impl.dir)
					if msg, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("go build %s: %v\n%s", impl.dir, err, msg)
					}
				}
				fi, err := os.Stat(out)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(fi.Size()), "B/binary")
				text, err := textBytes(out)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(text), "text-B/binary")
			})
		}
	}
}
