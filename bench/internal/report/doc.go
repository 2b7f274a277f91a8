// Package report turns paired benchmark output into the project's benchmark
// report: a table of typed/upstream ratios with benchstat's statistics, a
// Markdown page, an SVG (and optionally PNG) chart, and the README summary.
//
// # Pairing
//
// Every workload is benchmarked twice in the same run, as sub-benchmarks whose
// names carry an element impl=upstream (client-go) and impl=typed (this
// project), e.g. BenchmarkDeltaFIFOAddPop/keys=1000/impl=typed-2. The workload
// is the name without the impl= element and without the -GOMAXPROCS suffix.
// Results are grouped by (package, workload, GOMAXPROCS, impl, unit).
//
// # Statistics
//
// Parsing uses golang.org/x/perf/benchfmt and the numbers come from
// golang.org/x/perf/benchmath, as in benchstat: the center is the median, the
// ± is its 95% confidence interval, and the p-value is the Mann-Whitney U-test
// of the two samples (unless the input's unit metadata asks for another
// assumption). A difference is significant when p <= 0.05. Nothing here
// computes a statistic by hand; the ratio is typed median / upstream median.
//
// # Flow
//
// [Main] parses the command line. Without -in, a [Runner] compiles the test
// binary of each package once, lists its benchmarks, and runs them one
// top-level benchmark per process, in interleaved rounds (-count rounds of
// -test.count 1), appending everything to the raw output file. The raw file (or
// the -in files) is then read by [ReadFiles] into [Data], [Build] pairs and
// summarizes it into a [Report], and the writers render that report.
//
// The package is not safe for concurrent use; every value belongs to one run.
package report
