// Package informertest helps unit-test controllers built on informer
// without an API server.
//
// Source is a scripted, in-memory API server for one resource that
// implements informer.ListerWatcher: create, update and delete objects, make
// informers relist (410 Gone), drop watches, send bookmarks and fail lists or
// watches with the API's own errors. It serves watch-list streams, so an
// informer in its default mode syncs on it as on a real server.
//
// Server is an in-memory API server for every kind, one Source per kind,
// and the source of the informers of the Factory it makes (NewFactory):
// a controller built on informer.For runs in a unit test unchanged, with
// the factory's options honoured as over an API server, and the test's
// writes (Server.Add, Update, Delete) reach its informers.
//
// Recorder is an event handler that records every call and lets a test wait
// for calls without polling; a wait that cannot finish returns, when its
// context ends, an error saying what it waited for and what it got.
//
//	src := informertest.NewSource(pod1, pod2)
//	inf, _ := informer.NewSharedIndexInformer(src, informer.SharedIndexInformerOptions[*corev1.Pod]{})
//	var rec informertest.Recorder[*corev1.Pod]
//	reg, _ := inf.AddEventHandler(&rec)
//	go inf.Run(ctx)
//	informer.WaitForCacheSync(ctx, inf, reg)
//	src.Update(changed)
//	rec.WaitForKey(ctx, informertest.OnUpdate, "default/web-1", "")
package informertest
