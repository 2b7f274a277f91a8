// Package kubetest holds what the e2e tests, the fault suite and the benchmarks share on top of
// the harness: clients without client-side rate limits, a log of the HTTP requests a client
// makes, the comparison of an informer's cache with a fresh LIST from the server, a handler
// that mirrors the cache from its notifications and checks that they are consistent, and a
// ListerWatcher tap that records what the watches deliver.
//
// It imports the library only through its public API.
package kubetest
