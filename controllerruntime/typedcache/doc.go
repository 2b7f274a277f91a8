// Package typedcache is controller-runtime's cache.Cache on the informers of
// github.com/typedkube/informer: a manager takes it in one line,
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{NewCache: typedcache.New})
//
// and its controllers, clients and Watches read and hear from the library's
// informers: typed objects decoded straight from the wire, label selectors
// answered by the label index, sync failures reported as soon as the server
// answers. New takes controller-runtime's cache.Options and behaves as its
// cache.New does (docs/controller-runtime.md lists what
// differs); NewWith adds the library's own options.
//
// Every kind is cached by an informer of the library's Factory: built-in
// kinds and the Go types of Options.Types by For (decoded by package wire),
// Unstructured by ForUnstructured, PartialObjectMetadata by ForMetadata,
// projections by ForProjection. A Go type the cache does not know at
// compile time (a CRD's, registered only in the manager's scheme) is cached
// by an informer of client.Object decoded by client-go's codecs.
//
// NewClient gives the manager's client controller-runtime's read-your-writes
// consistency on the informers' WaitForResourceVersion.
package typedcache
