package benchmarks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/controllerruntime/typedcache"
	"github.com/typedkube/informer/e2e/internal/kubetest"
	"github.com/typedkube/informer/wire"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// peakEnv, when set in the environment of this test binary, makes it a child of
// BenchmarkPeakRSS: it runs the variant its JSON names once, from nothing to synced, prints what
// it measured as JSON on stdout, and exits.
const peakEnv = "INFORMER_BENCH_PEAK"

// peakTypedEnv, when set, holds environment settings (NAME=value, space-separated) that the
// children of our side's variants get besides the test binary's own: GOMEMLIMIT=48MiB, say, to
// see what a memory limit does to a variant's peak and CPU. client-go's side does not get them.
const peakTypedEnv = "INFORMER_PEAK_TYPED_ENV"

// peakHeapProfileEnv, when set, names a directory where each child writes the heap profile of
// what it holds once synced (<variant>.heap, sampled every 4 KiB): where the bytes are.
const peakHeapProfileEnv = "INFORMER_PEAK_HEAPPROFILE"

// peakJob is what a child of BenchmarkPeakRSS is told.
type peakJob struct {
	Host, Token string
	CA          []byte
	Namespace   string
	Pods        int
	Variant     string
}

// peakResult is what a child measured: VmHWM, the process's peak resident set (it only grows,
// so each variant needs a process of its own), and VmRSS before the start; the heap's peak during
// the start (sampled every 2 ms: PeakHeap of objects not yet freed, PeakMarked of what a
// collection marked live) and after the sync and a full collection, above the heap before the
// start; its CPU time from the start to the sync.
type peakResult struct {
	HWM, RSSBefore               int64
	PeakHeap, PeakMarked, Steady int64
	CPU                          time.Duration
	Objects                      int
}

// peakVariants are the programs BenchmarkPeakRSS runs, by name: client-go's informer and
// controller-runtime's manager, and ours, each with the options operators keep.
var peakVariants = map[string]func(cfg *rest.Config, ns string, n int) startFunc{
	// A typed Pod informer: client-go's generated factory, and For.
	"informer/upstream": func(cfg *rest.Config, ns string, _ int) startFunc { return upstreamPods(childFatal{}, cfg, ns, nil) },
	"informer/upstream-nomanagedfields": func(cfg *rest.Config, ns string, _ int) startFunc {
		return upstreamPods(childFatal{}, cfg, ns, dropManagedFields)
	},
	"informer/typed": func(cfg *rest.Config, ns string, _ int) startFunc {
		return typedPods(childFatal{}, cfg, ns, informer.FactoryOptions{})
	},
	"informer/typed-nomanagedfields": func(cfg *rest.Config, ns string, _ int) startFunc {
		return typedPods(childFatal{}, cfg, ns, informer.FactoryOptions{Wire: wire.Options{DropManagedFields: true}})
	},
	"informer/typed-compact": func(cfg *rest.Config, ns string, _ int) startFunc {
		return typedPods(childFatal{}, cfg, ns, informer.FactoryOptions{Informer: informer.InformerOptions{Compact: true}})
	},
	"informer/typed-compact-nomanagedfields": func(cfg *rest.Config, ns string, _ int) startFunc {
		return typedPods(childFatal{}, cfg, ns, informer.FactoryOptions{Informer: informer.InformerOptions{Compact: true}, Wire: wire.Options{DropManagedFields: true}})
	},
	// A manager with a controller of Pods, with controller-runtime's TransformStripManagedFields
	// as its default transform, as kubebuilder operators keep it, or without a transform.
	"manager/upstream": func(cfg *rest.Config, ns string, n int) startFunc {
		return startManager(childFatal{}, cfg, ns, n, cache.New, cache.TransformStripManagedFields())
	},
	"manager/typed": func(cfg *rest.Config, ns string, n int) startFunc {
		return startManager(childFatal{}, cfg, ns, n, typedcache.New, cache.TransformStripManagedFields())
	},
	"manager/typed-compact": func(cfg *rest.Config, ns string, n int) startFunc {
		return startManager(childFatal{}, cfg, ns, n, typedcache.NewWith(typedcache.Options{Informer: informer.InformerOptions{Compact: true}}), cache.TransformStripManagedFields())
	},
	"manager/upstream-notransform": func(cfg *rest.Config, ns string, n int) startFunc {
		return startManager(childFatal{}, cfg, ns, n, cache.New, nil)
	},
	"manager/typed-notransform": func(cfg *rest.Config, ns string, n int) startFunc {
		return startManager(childFatal{}, cfg, ns, n, typedcache.New, nil)
	},
	// An operator's manager (startOperator): two controllers, field indexes, a metadata-only
	// watch, a ByObject label selector, and TransformStripManagedFields.
	"operator/upstream": func(cfg *rest.Config, ns string, n int) startFunc {
		return startOperator(childFatal{}, cfg, ns, n, cache.New, cache.TransformStripManagedFields())
	},
	"operator/typed": func(cfg *rest.Config, ns string, n int) startFunc {
		return startOperator(childFatal{}, cfg, ns, n, typedcache.New, cache.TransformStripManagedFields())
	},
	"operator/typed-compact": func(cfg *rest.Config, ns string, n int) startFunc {
		return startOperator(childFatal{}, cfg, ns, n, typedcache.NewWith(typedcache.Options{Informer: informer.InformerOptions{Compact: true}}), cache.TransformStripManagedFields())
	},
}

// peakPairs are BenchmarkPeakRSS's sub-benchmarks: a name, and the variants of impl=upstream
// and impl=typed.
var peakPairs = []struct{ name, upstream, typed string }{
	{"program=informer", "informer/upstream", "informer/typed"},
	{"program=informer/mode=nomanagedfields", "informer/upstream-nomanagedfields", "informer/typed-nomanagedfields"},
	{"program=informer/store=compact", "informer/upstream", "informer/typed-compact"},
	{"program=informer/store=compact/mode=nomanagedfields", "informer/upstream-nomanagedfields", "informer/typed-compact-nomanagedfields"},
	{"program=manager", "manager/upstream", "manager/typed"},
	{"program=manager/store=compact", "manager/upstream", "manager/typed-compact"},
	{"program=manager/mode=notransform", "manager/upstream-notransform", "manager/typed-notransform"},
}

// operatorPairs are BenchmarkPeakRSS's sub-benchmarks of the operator's workload.
var operatorPairs = []struct{ name, upstream, typed string }{
	{"program=operator", "operator/upstream", "operator/typed"},
	{"program=operator/store=compact", "operator/upstream", "operator/typed-compact"},
}

// BenchmarkPeakRSS starts each program of peakVariants in a process of its own (a child of this
// test binary, so that its peak resident set, VmHWM, is its own), from nothing until it has
// synced (an informer) or reconciled every Pod once (a manager), over 10,000 realistic Pods
// (testobj.RealisticPod), 10,000 harsh ones (testobj.HarshPod: each Pod's managedFields differ
// from its siblings' in a few bytes) and, unless -short, 50,000 realistic ones; and the operator
// of startOperator over 5,000 realistic Pods. It reports, per Pod: peak-RSS-B/object, the peak
// resident set above the one before the start, which is what sizes a Pod's memory limit beyond
// the program's fixed cost; peak-heap-B/object, the peak of the heap's objects not yet freed
// (garbage included); peak-marked-B/object, the peak of the live heap the collector marked;
// B/object, the heap held once synced; cpu-ns/object; and peak-RSS-B, the process's whole
// peak. Each round starts one process per variant; with -benchtime 1x, the rounds of a pair's
// two variants alternate (see pairedRounds). With -short (CI's smoke run), only realistic Pods,
// 2,000 of them (pods=2k/realistic; realisticCount), for the informer and the two managers.
func BenchmarkPeakRSS(b *testing.B) {
	cfg := benchConfig()
	type pair = struct{ name, upstream, typed string }
	type workload struct {
		name  string
		ns    func() string
		n     int
		pairs []pair
	}
	rn := realisticCount()
	workloads := []workload{
		{fmt.Sprintf("pods=%dk/realistic", rn/1000), func() string { return realisticPods(b, rn) }, rn, peakPairs},
		{fmt.Sprintf("pods=%dk/harsh", rn/1000), func() string { return harshPods(b, rn) }, rn, peakPairs},
	}
	if testing.Short() {
		// CI's smoke run: the realistic Pods, an informer and the two managers.
		workloads = []workload{{workloads[0].name, workloads[0].ns, rn, []pair{peakPairs[0], peakPairs[4], peakPairs[5]}}}
	} else {
		workloads = append(workloads,
			workload{"pods=50k/realistic", func() string { return realisticPods(b, 50000) }, 50000, peakPairs},
			workload{"pods=5k/realistic", func() string { return realisticPods(b, operatorPods) }, operatorPods, operatorPairs})
	}
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) {
			ns := w.ns()
			for _, p := range w.pairs {
				b.Run(p.name, func(b *testing.B) {
					rounds := &pairedRounds{run: func(b *testing.B, variant string) peakResult { return runPeakChild(b, cfg, ns, w.n, variant) }, variants: [2]string{p.upstream, p.typed}}
					b.Run("impl=upstream", func(b *testing.B) { peakRounds(b, rounds, 0) })
					b.Run("impl=typed", func(b *testing.B) { peakRounds(b, rounds, 1) })
				})
			}
		})
	}
}

// pairedRounds are the rounds of a pair of variants, run in alternation: with -benchtime 1x
// and -count n, the first round of either side runs n rounds of both, the two sides' children
// one after the other in each round, upstream first in even rounds and typed first in odd ones,
// so that a drift of the machine over the rounds (the CPU of a fresh process, which pays for
// its heap's first pages, moves by tens of percent between processes here) falls on both sides
// alike; each round of the benchmark then reports one of them. Go runs a sub-benchmark's -count
// rounds one after the other, so without this every round of one side would run before the
// other's first. With another -benchtime, each side runs its own children, as b.Loop asks.
type pairedRounds struct {
	run      func(b *testing.B, variant string) peakResult // fails b if the child does
	variants [2]string                                     // upstream, typed
	done     bool
	results  [2][]peakResult
}

// next returns the next result of side i (0 upstream, 1 typed), running the rounds of both
// sides in b the first time, or false when it has none left or the rounds do not alternate.
func (p *pairedRounds) next(b *testing.B, i int) (peakResult, bool) {
	if !p.done {
		p.done = true
		if benchFlag("test.benchtime") == "1x" {
			n, _ := strconv.Atoi(benchFlag("test.count"))
			for round := range max(n, 1) {
				first := round % 2 // upstream first in even rounds
				for _, side := range []int{first, 1 - first} {
					p.results[side] = append(p.results[side], p.run(b, p.variants[side]))
				}
			}
		}
	}
	if len(p.results[i]) == 0 {
		return peakResult{}, false
	}
	r := p.results[i][0]
	p.results[i] = p.results[i][1:]
	return r, true
}

// benchFlag returns the value of the test binary's flag name, or "".
func benchFlag(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// peakRounds reports the averages of side i of rounds (0 upstream, 1 typed) over the
// benchmark's iterations: each takes the next of the alternating rounds, or runs a child.
func peakRounds(b *testing.B, rounds *pairedRounds, i int) {
	var rss, heap, peak, marked, cpu, hwm float64
	n := 0
	for b.Loop() {
		r, ok := rounds.next(b, i)
		if !ok {
			r = rounds.run(b, rounds.variants[i])
		}
		objects := float64(r.Objects)
		rss += float64(r.HWM-r.RSSBefore) / objects
		heap += float64(r.Steady) / objects
		peak += float64(r.PeakHeap) / objects
		marked += float64(r.PeakMarked) / objects
		cpu += float64(r.CPU.Nanoseconds()) / objects
		hwm += float64(r.HWM)
		n++
	}
	k := float64(n)
	b.ReportMetric(rss/k, "peak-RSS-B/object")
	b.ReportMetric(peak/k, "peak-heap-B/object")
	b.ReportMetric(marked/k, "peak-marked-B/object")
	b.ReportMetric(heap/k, "B/object")
	b.ReportMetric(cpu/k, "cpu-ns/object")
	b.ReportMetric(hwm/k, "peak-RSS-B")
}

// runPeakChild runs variant in a child process and returns what it measured.
func runPeakChild(b *testing.B, cfg *rest.Config, ns string, n int, variant string) peakResult {
	b.Helper()
	spec, err := json.Marshal(peakJob{Host: cfg.Host, Token: cfg.BearerToken, CA: cfg.CAData, Namespace: ns, Pods: n, Variant: variant})
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), peakEnv+"="+string(spec))
	if strings.Contains(variant, "/typed") {
		cmd.Env = append(cmd.Env, strings.Fields(os.Getenv(peakTypedEnv))...)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v\n%s", variant, err, out.String())
	}
	var r peakResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		b.Fatalf("%s: %v in %q", variant, err, out.String())
	}
	if r.Objects < n {
		b.Fatalf("%s synced with %d Pods, want %d", variant, r.Objects, n)
	}
	return r
}

// childFatal is the fataler of a child process: it panics, and runPeak turns the panic into an
// error.
type childFatal struct{}

func (childFatal) Fatal(args ...any) { panic(fmt.Sprint(args...)) }

// runPeak runs the child's variant once and prints its peakResult as JSON.
func runPeak(job peakJob) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %v", job.Variant, r)
		}
	}()
	variant, ok := peakVariants[job.Variant]
	if !ok {
		return fmt.Errorf("no variant %q", job.Variant)
	}
	if os.Getenv(peakHeapProfileEnv) != "" {
		runtime.MemProfileRate = 4096
	}
	cfg := &rest.Config{Host: job.Host, BearerToken: job.Token, TLSClientConfig: rest.TLSClientConfig{CAData: job.CA}, QPS: -1}
	start := variant(cfg, job.Namespace, job.Pods)
	var r peakResult
	before := heapInUse()
	if r.RSSBefore, err = procStatus("VmRSS"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sampler := startHeapSampler()
	stopProfile := profileWindow(childFatal{}, "BenchmarkPeakRSS_"+job.Variant)
	cpu := kubetest.ProcessCPU()
	synced, size, _, stop := start(ctx)
	for !synced() {
		if ctx.Err() != nil {
			return fmt.Errorf("%s did not sync within 10 minutes", job.Variant)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.CPU = kubetest.ProcessCPU() - cpu
	stopProfile()
	r.PeakHeap = int64(sampler.Peak()) - before
	r.PeakMarked = int64(sampler.Marked()) - before
	r.Objects = size()
	r.Steady = heapInUse() - before
	if dir := os.Getenv(peakHeapProfileEnv); dir != "" {
		if err := writeHeapProfile(filepath.Join(dir, strings.ReplaceAll(job.Variant, "/", "_")+".heap")); err != nil {
			return err
		}
	}
	if r.HWM, err = procStatus("VmHWM"); err != nil {
		return err
	}
	runtime.KeepAlive(size)
	stop()
	return json.NewEncoder(os.Stdout).Encode(r)
}

// procStatus returns the field of /proc/self/status named name, in bytes (the file says kB).
func procStatus(name string) (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", name)
}

// writeHeapProfile writes the child's heap profile to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
