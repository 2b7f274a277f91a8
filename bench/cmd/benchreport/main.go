// Command benchreport runs the informer benchmarks that pair client-go
// (impl=upstream) with this module (impl=typed), or reads go test -bench
// output, and writes the comparison: a table on stdout, BENCHMARKS.md, an SVG
// chart and the README summary. Run it from bench/; see -h for the flags and
// package github.com/typedkube/informer/bench/internal/report for the method.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/typedkube/informer/bench/internal/report"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal kills the process
	}()
	code := report.Main(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
