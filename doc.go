// Package informer is a generics-first rewrite of the client-go informer
// stack: the concrete object type T goes from the list and watch to the
// event handler, with client-go's semantics and without its interface{}
// core.
//
// # The pipeline
//
//	ListerWatcher[T] --list/watch--> Reflector[T] --Add/Update/Delete/Replace--> queue
//	queue --ordered batches--> informer: apply to Indexer[T], then hand out
//	per-handler buffer --> ResourceEventHandler[T] (OnAdd, OnUpdate, OnDelete)
//	Lister[T] and Indexer[T] <-- reads by controllers
//
// A ListerWatcher[T] lists and watches one kind of object; adapters build
// one from a client-go typed client (ListWatchFromClient), the dynamic
// client or the metadata client. A Reflector[T] lists (or streams the
// initial state with watch-list), watches from the resource version it
// listed at, and lists again after 410 Gone, with client-go's paging,
// bookmarks, backoff and resync rules. It writes into any ReflectorStore[T]:
// a Store[T], a DeltaFIFO[T], or the informer's own queue.
//
// A SharedIndexInformer[T] runs a Reflector into an ordered queue, applies
// each change to its Indexer[T] cache from one goroutine, and hands the
// resulting notifications to each registered handler's buffer; every
// handler runs on a goroutine of its own. Lister[T] reads the cache.
//
// A Factory makes informers of any type without generated code, and shares
// them. For, ForProjection, ForUnstructured and ForMetadata take one path,
// and differ only in the Go type or resource they start from and in the
// sources they allow:
//
//	what:  the Go type --scheme--> kind --RESTMapper--> resource, scope, informer name
//	where: namespaces, label and field selectors, tweaks of each request
//	how:   one source: package wire or client-go's codecs over REST, the factory's clients,
//	       the dynamic or metadata client, a projection, a compact store
//	join:  the informer an earlier call made, if the options agree; else a new one, registered
//	start: with Factory.Start, or at once if the factory runs
//
// The structures underneath are usable alone: Store[T] and Indexer[T] (a
// thread-safe keyed cache with secondary indexes), FIFO[T] (latest object
// per key) and DeltaFIFO[T] (every change per key, with tombstones for
// objects a relist no longer has).
//
// # Concurrency
//
// Every exported type is safe for concurrent use unless its doc says
// otherwise. No lock of this package is held while user code runs, with two
// documented exceptions: index functions run holding an Indexer's writer
// lock (readers are not blocked, but the function must not write to the
// Indexer), and a FIFO's or DeltaFIFO's Pop runs its process function with
// the queue locked, as client-go does, so that a consumer can update its
// store in step with the queue. Handlers and transforms never run under a
// lock. Components with goroutines are started with Run(ctx), which returns
// only after every goroutine it started has ended.
//
// # Ownership
//
// Objects handed out by a Store, an Indexer, a Lister, a queue or an event
// handler are shared with the cache: never mutate them. Copy an object
// (DeepCopy) before changing it. A list given to Replace belongs to the
// store from then on.
//
// # Errors
//
// Bad input never panics and never silently drops data. A nil object, a
// key that cannot be computed or an empty key is a *KeyError; the other
// errors wrap the sentinels of this package (ErrNilObject, ErrEmptyKey,
// ErrNoSuchIndex, ErrIndexConflict, ErrClosed, ...), so test for them with
// errors.Is and errors.As. Constructors panic only on programming errors
// they document, such as a nil key function.
package informer
