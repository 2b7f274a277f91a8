// Package clientgo connects informer to code written against client-go's
// tools/cache: SharedIndexInformer exposes a typed informer as a
// cache.SharedIndexInformer; Indexer adapts a typed *informer.Indexer[T],
// such as an informer's cache, to a cache.Indexer, so that generated
// listers (corev1listers.NewPodLister and the like) read it; Handler
// registers a client-go cache.ResourceEventHandler on our informers;
// ListerWatcher turns a client-go cache.ListerWatcher into ours.
package clientgo
