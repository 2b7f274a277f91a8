package benchmarks

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/typedkube/informer/e2e/internal/kubetest"
)

// processCost is what the test process has spent so far: its own CPU time (user and system,
// from getrusage(RUSAGE_SELF), which does not count the servers: they are child processes, and
// RUSAGE_SELF excludes children) and what it has allocated on the heap (runtime/metrics, read
// without stopping the world).
type processCost struct {
	cpu    time.Duration
	allocs uint64
	bytes  uint64
}

var costSamples = []metrics.Sample{
	{Name: "/gc/heap/allocs:objects"},
	{Name: "/gc/heap/allocs:bytes"},
}

// cpuProfileEnv, when set, names a directory where the benchmarks that measure a window of the
// process's CPU (a cold start, a relist, a writer's events, a child of BenchmarkPeakRSS) write a
// CPU profile of each measured window, <benchmark>-<pid>-<n>.cpu: where the measured CPU went,
// without the work around it (creating the objects, starting the servers and the writer), which
// -cpuprofile would count as well. Give go tool pprof several at once to merge them.
const cpuProfileEnv = "INFORMER_BENCH_CPUPROFILE"

// profiled numbers the profiles of cpuProfileEnv.
var profiled atomic.Int64

// profileWindow starts a CPU profile of the measured window of b when cpuProfileEnv names a
// directory, and returns what stops it; nothing otherwise. Call the stop after reading the
// window's cost: writing the profile costs CPU.
func profileWindow(b fataler, name string) (stop func()) {
	dir := os.Getenv(cpuProfileEnv)
	if dir == "" {
		return func() {}
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%d-%d.cpu", strings.ReplaceAll(name, "/", "_"), os.Getpid(), profiled.Add(1)))
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(fmt.Errorf("%s: %w", cpuProfileEnv, err))
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		b.Fatal(fmt.Errorf("%s (not with -cpuprofile): %w", cpuProfileEnv, err))
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Fatal(fmt.Errorf("%s: %w", cpuProfileEnv, err))
		}
	}
}

// costNow reads the process's cost so far.
func costNow() processCost {
	cpu := kubetest.ProcessCPU()
	s := make([]metrics.Sample, len(costSamples))
	copy(s, costSamples)
	metrics.Read(s)
	return processCost{
		cpu:    cpu,
		allocs: s[0].Value.Uint64(),
		bytes:  s[1].Value.Uint64(),
	}
}

// since returns the cost between prev and c.
func (c processCost) since(prev processCost) processCost {
	return processCost{cpu: c.cpu - prev.cpu, allocs: c.allocs - prev.allocs, bytes: c.bytes - prev.bytes}
}

// perUnit averages, over the rounds of a benchmark, what the process paid
// per object or event of each round.
type perUnit struct {
	cpu, allocs, bytes float64
	rounds             int
}

// add counts one round that cost c for units objects or events.
func (p *perUnit) add(c processCost, units int) {
	p.cpu += float64(c.cpu.Nanoseconds()) / float64(units)
	p.allocs += float64(c.allocs) / float64(units)
	p.bytes += float64(c.bytes) / float64(units)
	p.rounds++
}

// report reports the averages as cpu-ns/unit, allocs/unit and
// B-alloc/unit.
func (p *perUnit) report(b *testing.B, unit string) {
	n := float64(p.rounds)
	b.ReportMetric(p.cpu/n, "cpu-ns/"+unit)
	b.ReportMetric(p.allocs/n, "allocs/"+unit)
	b.ReportMetric(p.bytes/n, "B-alloc/"+unit)
}

// gcCPU returns the collector's CPU time so far, in seconds, as the runtime estimates it
// (/cpu/classes/gc/total:cpu-seconds: its mark workers, assists and pauses). The runtime brings
// the figure up to date at the end of each collection only, so a difference of two readings
// counts the collections that ended between them: over a round of thousands of events and many
// collections, the part of one collection at each end is noise that averages out over rounds.
func gcCPU() float64 {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64()
}

// churnCost averages, over the rounds of a steady-state benchmark, what the process paid per
// event for its collector, and per minute of churn at the rate of each round (the writer's, as
// fast as the server takes its writes): the whole process's CPU time and the collector's.
type churnCost struct {
	gcPerEvent, cpuPerMinute, gcPerMinute float64
	rounds                                int
}

// add counts one round of events events that took wall and cost cpu, gc seconds of it the
// collector's.
func (c *churnCost) add(cpu time.Duration, gc float64, wall time.Duration, events int) {
	minutes := wall.Minutes()
	c.gcPerEvent += gc * 1e9 / float64(events)
	c.cpuPerMinute += cpu.Seconds() / minutes
	c.gcPerMinute += gc / minutes
	c.rounds++
}

// report reports the averages as gc-cpu-ns/event, cpu-s/churn-min and gc-cpu-s/churn-min.
func (c *churnCost) report(b *testing.B) {
	n := float64(c.rounds)
	b.ReportMetric(c.gcPerEvent/n, "gc-cpu-ns/event")
	b.ReportMetric(c.cpuPerMinute/n, "cpu-s/churn-min")
	b.ReportMetric(c.gcPerMinute/n, "gc-cpu-s/churn-min")
}

// heapSampler reads the heap every 2 ms until stopped and keeps the highest values of two
// figures: the heap's objects not yet freed, reachable or not (/memory/classes/heap/objects:bytes,
// which at GOGC=100 grows to about twice what the last collection marked before the next one
// starts), and the heap the last collection marked live (/gc/heap/live:bytes: what the program
// held, garbage left out, as of each collection).
type heapSampler struct {
	stop         chan struct{}
	wg           sync.WaitGroup
	peak, marked uint64
}

func startHeapSampler() *heapSampler {
	h := &heapSampler{stop: make(chan struct{})}
	h.wg.Go(func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			h.peak = max(h.peak, kubetest.LiveHeap())
			h.marked = max(h.marked, kubetest.MarkedHeap())
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
		}
	})
	return h
}

// Peak stops the sampler and returns the highest heap of objects not yet freed it saw.
func (h *heapSampler) Peak() uint64 {
	close(h.stop)
	h.wg.Wait()
	return h.peak
}

// Marked returns the highest live heap a collection marked while the sampler ran, once Peak
// has stopped it.
func (h *heapSampler) Marked() uint64 { return h.marked }

// syscallsPerEvent averages, over the rounds of a steady-state benchmark, the read and write
// system calls the process made per event (kubetest.ProcessSyscalls). Over HTTP/2 most of the
// writes are the transport's flow control (a WINDOW_UPDATE frame each time 4 KiB of a body have
// been read: a TLS record and a send on the loopback each); any other write of the process in the
// window counts too, such as the writer's start (docs/transport.md).
// It also averages the threads' sleeps per event (kubetest.ProcessSleeps: voluntary context
// switches), each of which a wake-up follows: the floor's reader sleeps once an event or so,
// and every goroutine hand-off that finds no thread awake adds one; and the process's minor page
// faults per event (from the same getrusage).
type syscallsPerEvent struct {
	r0, w0, reads, writes float64
	s0, sleeps            float64
	f0, faults            float64
	rounds                int
}

func (s *syscallsPerEvent) start(b fataler) {
	r, w, err := kubetest.ProcessSyscalls()
	if err != nil {
		b.Fatal(err)
	}
	v, f := kubetest.ProcessSleeps()
	s.r0, s.w0, s.s0, s.f0 = float64(r), float64(w), float64(v), float64(f)
}

func (s *syscallsPerEvent) stop(b fataler, events int) {
	r, w, err := kubetest.ProcessSyscalls()
	if err != nil {
		b.Fatal(err)
	}
	v, f := kubetest.ProcessSleeps()
	s.faults += (float64(f) - s.f0) / float64(events)
	s.reads += (float64(r) - s.r0) / float64(events)
	s.writes += (float64(w) - s.w0) / float64(events)
	s.sleeps += (float64(v) - s.s0) / float64(events)
	s.rounds++
}

// report reports the averages as reads/event, writes/event, sleeps/event and faults/event.
func (s *syscallsPerEvent) report(b *testing.B) {
	n := float64(s.rounds)
	b.ReportMetric(s.reads/n, "reads/event")
	b.ReportMetric(s.writes/n, "writes/event")
	b.ReportMetric(s.sleeps/n, "sleeps/event")
	b.ReportMetric(s.faults/n, "faults/event")
}
