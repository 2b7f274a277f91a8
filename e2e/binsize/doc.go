// Package binsize holds four programs, the same small program twice over:
// a typed Pod informer on the library (informer) and on client-go's informer
// factory (clientgo); a manager with a Pod controller on typedcache
// (typedcache) and on controller-runtime's cache (controllerruntime). Its
// test checks that the library's programs link no function that turns the
// linker's dead-code elimination off, and BenchmarkBinarySize in
// e2e/benchmarks reports their sizes beside each other.
package binsize
