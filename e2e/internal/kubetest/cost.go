package kubetest

import (
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ProcessCPU returns the user and system CPU time the test process has used, from
// getrusage(RUSAGE_SELF): the servers are child processes, which RUSAGE_SELF does not count.
func ProcessCPU() time.Duration {
	ru := selfUsage()
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// selfUsage returns getrusage(RUSAGE_SELF): every thread of the test process, its children not.
func selfUsage() syscall.Rusage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err) // cannot fail for RUSAGE_SELF
	}
	return ru
}

// ProcessSleeps returns, from one getrusage(RUSAGE_SELF) (every thread of the test process, its
// children not), how many times a thread has gone to sleep, waiting for something (a futex, a read
// with nothing to read: the voluntary context switches), and how many page faults the process has
// taken that needed no I/O (the minor faults). Each sleep is a wake-up later: a goroutine hand-off
// that finds no thread running pays one. A minor fault is the kernel handing the process a page
// the first time it touches it, such as heap the collector had given back to the system and the
// allocator reuses: its CPU is the process's system time, which a CPU profile does not attribute
// to what caused it.
func ProcessSleeps() (sleeps, faults int64) {
	ru := selfUsage()
	return ru.Nvcsw, ru.Minflt
}

// LiveHeap returns the bytes of heap objects not yet freed, reachable or not
// (/memory/classes/heap/objects:bytes), read without stopping the world.
func LiveHeap() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// MarkedHeap returns the bytes of heap objects the last collection marked live
// (/gc/heap/live:bytes), read without stopping the world.
func MarkedHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// ProcessSyscalls returns how many read and write system calls the process has made so far
// (syscr and syscw of /proc/self/io: every thread's, the children's not), or an error where the
// file cannot be read or parsed.
func ProcessSyscalls() (reads, writes uint64, err error) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, 0, err
	}
	var seen int
	for line := range strings.Lines(string(b)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok {
			continue
		}
		var dst *uint64
		switch name {
		case "syscr":
			dst = &reads
		case "syscw":
			dst = &writes
		default:
			continue
		}
		if *dst, err = strconv.ParseUint(value, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("/proc/self/io: %s: %w", name, err)
		}
		seen++
	}
	if seen != 2 {
		return 0, 0, fmt.Errorf("/proc/self/io: no syscr and syscw in %q", b)
	}
	return reads, writes, nil
}
