package kubetest

import (
	"runtime/metrics"
	"syscall"
	"time"
)

// ProcessCPU returns the user and system CPU time the test process has used, from
// getrusage(RUSAGE_SELF): the servers are child processes, which RUSAGE_SELF does not count.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err) // cannot fail for RUSAGE_SELF
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
