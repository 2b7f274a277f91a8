package informertest

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedkube/informer"
)

// Source is a scripted, in-memory API server for one resource: a
// ListerWatcher[T] whose contents a test changes with Add, Update and Delete,
// and whose failures it provokes with Expire (410 Gone), DropWatches,
// Relist, SetListError, SetWatchError and Offline.
//
// Like the API server, it stamps every change with the next resource
// version, lists the current state, serves watches from any resource version
// it still has, honours label selectors and the metadata.name and
// metadata.namespace field selectors, and streams watch-list requests
// (SendInitialEvents) as ADDED events ended by the k8s.io/initial-events-end
// bookmark, so that informers in their default watch-list mode sync on it.
// With a label selector, an update that moves an object out of the
// selection is a DELETED event carrying its last selected state, as the API
// server sends it.
//
// Resource versions count as etcd's revisions do: a new Source is at
// version 1, its first change is version 2, and each later change takes the
// next integer. A list answers the version of the last change (1 for a
// Source that has never changed), never "0", as the API server never does:
// an informer watches from the version its list answered, and a watch from
// "0" is an unordered replay of the current state, after which an informer
// cannot tell which versions its cache holds.
//
// Objects are copied (DeepCopyObject) on the way in: the test keeps its own.
// The objects a Source hands out are shared by its readers: never mutate
// them.
//
// The zero value is not usable; call NewSource. A Source is safe for
// concurrent use. Every watch it serves ends when the watcher calls Stop or
// the watch's context ends.
type Source[T informer.Object] struct {
	mu        sync.Mutex // guards the fields below
	rv        int        // the version of the last change; 1 before the first
	objs      map[string]T
	history   []watch.Event // every change, in order; those up to compacted are no longer served
	compacted int
	watchers  map[*sourceWatch]struct{}
	listErr   error
	watchErr  error
	offline   bool
	lists     int
	watches   int
	newObject func() T // an empty T, for bookmarks; nil for a new *E where T is *E
}

// NewSource returns a Source holding copies of objs, created in order.
func NewSource[T informer.Object](objs ...T) *Source[T] {
	s := &Source[T]{rv: 1, objs: map[string]T{}, watchers: map[*sourceWatch]struct{}{}}
	for _, obj := range objs {
		if _, err := s.Add(obj); err != nil {
			panic(err) // a programming error of the test: two objects with one key, or a nil one
		}
	}
	return s
}

// Add creates a copy of obj and returns it, stamped with its resource
// version. It fails if an object with the same key exists, like a create.
func (s *Source[T]) Add(obj T) (T, error) { return s.change(watch.Added, obj) }

// Update replaces the object with obj's key by a copy of obj and returns it.
// It fails if there is none, and, like the API server, with a Conflict if
// obj names a resource version other than the stored object's (one without
// a resource version updates unconditionally). Like the API server, it
// changes nothing for an object equal to the stored one but for its
// resource version: no new version, no event; it returns the stored object.
func (s *Source[T]) Update(obj T) (T, error) { return s.change(watch.Modified, obj) }

// Delete deletes the object with obj's key and returns its final state: the
// stored object with a new resource version, as the API server reports a
// deletion. It fails if there is none.
func (s *Source[T]) Delete(obj T) (T, error) { return s.change(watch.Deleted, obj) }

func (s *Source[T]) change(t watch.EventType, obj T) (T, error) {
	var zero T
	if isNil(obj) {
		return zero, fmt.Errorf("informertest: %s of a nil object", t)
	}
	key, err := informer.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return zero, fmt.Errorf("informertest: %s: %w", t, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, exists := s.objs[key]
	switch {
	case t == watch.Added && exists:
		return zero, apierrors.NewAlreadyExists(resource, key)
	case t != watch.Added && !exists:
		return zero, apierrors.NewNotFound(resource, key)
	}
	if t == watch.Deleted {
		obj = stored
	}
	obj = obj.DeepCopyObject().(T)
	if t == watch.Modified {
		// Optimistic concurrency, as on the API server: an update naming a
		// resource version must name the current one.
		if rv := obj.GetResourceVersion(); rv != "" && rv != stored.GetResourceVersion() {
			return zero, apierrors.NewConflict(resource, key, fmt.Errorf("the object has been modified; please apply your changes to the latest version (resourceVersion %s, not %s) and try again", stored.GetResourceVersion(), rv))
		}
		obj.SetResourceVersion(stored.GetResourceVersion())
		if equality.Semantic.DeepEqual(obj, stored) {
			return stored, nil // a no-op update, which the server does not write
		}
	}
	s.rv++
	obj.SetResourceVersion(strconv.Itoa(s.rv))
	if t == watch.Deleted {
		delete(s.objs, key)
	} else {
		s.objs[key] = obj
	}
	ev := watch.Event{Type: t, Object: obj}
	s.history = append(s.history, ev)
	for w := range s.watchers {
		w.send(ev)
	}
	return obj, nil
}

// Bookmark sends every watcher that allowed bookmarks a BOOKMARK event at the
// current resource version.
func (s *Source[T]) Bookmark() {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := watch.Event{Type: watch.Bookmark, Object: s.bookmarkLocked(false)}
	for w := range s.watchers {
		if w.bookmarks {
			w.send(ev)
		}
	}
}

func (s *Source[T]) bookmarkLocked(initialEventsEnd bool) T {
	var obj T
	if s.newObject != nil {
		obj = s.newObject()
	} else {
		obj = reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
	}
	obj.SetResourceVersion(strconv.Itoa(s.rv))
	if initialEventsEnd {
		obj.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return obj
}

// Expire forgets the history of changes: a watch or a list from an older
// resource version then fails with 410 Gone (Expired), as after an etcd
// compaction. Open watches go on.
func (s *Source[T]) Expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compacted = s.rv
}

// DropWatches ends every open watch, as a lost connection does: an informer
// watches again from the last resource version it saw.
func (s *Source[T]) DropWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropWatchesLocked()
}

func (s *Source[T]) dropWatchesLocked() {
	for w := range s.watchers {
		w.stop()
		delete(s.watchers, w)
	}
}

// Relist makes every informer list again: it expires the history and drops
// every watch.
func (s *Source[T]) Relist() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compacted = s.rv
	s.dropWatchesLocked()
}

// SetListError makes every list fail with err until it is set to nil. Use
// the errors of k8s.io/apimachinery/pkg/api/errors, such as NewForbidden, to
// get the behaviour an informer has with a real server.
func (s *Source[T]) SetListError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listErr = err
}

// SetWatchError makes every watch (and every watch-list request) fail with
// err until it is set to nil.
func (s *Source[T]) SetWatchError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchErr = err
}

// Offline makes lists and watches fail with 503 Service Unavailable and ends
// every watch; Online undoes it. Changes made meanwhile are seen only by
// the informer's next list.
func (s *Source[T]) Offline() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offline = true
	s.dropWatchesLocked()
}

// Online ends what Offline started.
func (s *Source[T]) Online() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offline = false
}

// Objects returns the current objects, sorted by key.
func (s *Source[T]) Objects() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sortedLocked(labels.Everything(), fields.Everything())
}

// ResourceVersion returns the resource version of the last change, or "1"
// if there was none.
func (s *Source[T]) ResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strconv.Itoa(s.rv)
}

// Lists and Watches return how many list and watch requests the Source got
// (watch-list requests count as watches).
func (s *Source[T]) Lists() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists
}

// Watches: see Lists.
func (s *Source[T]) Watches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watches
}

func (s *Source[T]) sortedLocked(ls labels.Selector, fs fields.Selector) []T {
	return sortedMatching(s.objs, ls, fs)
}

// sortedMatching returns the objects of objs that match ls and fs, sorted
// by key.
func sortedMatching[T informer.Object](objs map[string]T, ls labels.Selector, fs fields.Selector) []T {
	out := make([]T, 0, len(objs))
	for _, obj := range objs {
		if matches(obj, ls, fs) {
			out = append(out, obj)
		}
	}
	slices.SortFunc(out, func(a, b T) int { return cmp.Compare(keyOf(a), keyOf(b)) })
	return out
}

// List serves a list: every matching object at the current resource
// version, in one page. An exact match (ResourceVersionMatchExact) lists
// the objects as they were at that resource version, as the API server
// does; one older than the history fails with 410 Gone, and one newer than
// the last change with a timeout.
func (s *Source[T]) List(ctx context.Context, opts metav1.ListOptions) (*informer.ListPage[T], error) {
	ls, fs, err := selectors(opts)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	switch {
	case s.offline:
		return nil, errOffline
	case s.listErr != nil:
		return nil, s.listErr
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
		rv, err := strconv.Atoi(opts.ResourceVersion)
		switch {
		case err != nil || rv < s.compacted:
			return nil, apierrors.NewResourceExpired("informertest: too old resource version " + opts.ResourceVersion)
		case rv > s.rv:
			return nil, apierrors.NewTimeoutError("informertest: too large resource version "+opts.ResourceVersion, 1)
		case rv < s.rv:
			page := &informer.ListPage[T]{Items: s.stateAtLocked(rv, ls, fs)}
			page.ResourceVersion = opts.ResourceVersion
			return page, nil
		}
	}
	page := &informer.ListPage[T]{Items: s.sortedLocked(ls, fs)}
	page.ResourceVersion = strconv.Itoa(s.rv)
	return page, nil
}

// stateAtLocked is the matching objects as they were at resource version
// rv, sorted by key, replayed from the history.
func (s *Source[T]) stateAtLocked(rv int, ls labels.Selector, fs fields.Selector) []T {
	objs := make(map[string]T)
	for _, ev := range s.history {
		obj := ev.Object.(T)
		if v, _ := strconv.Atoi(obj.GetResourceVersion()); v > rv {
			break
		}
		if ev.Type == watch.Deleted {
			delete(objs, keyOf(obj))
		} else {
			objs[keyOf(obj)] = obj
		}
	}
	return sortedMatching(objs, ls, fs)
}

// Watch serves a watch from opts.ResourceVersion, or, with SendInitialEvents,
// a watch-list stream: every matching object as an ADDED event, then a
// bookmark annotated k8s.io/initial-events-end, then the changes.
func (s *Source[T]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	ls, fs, err := selectors(opts)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watches++
	switch {
	case s.offline:
		return nil, errOffline
	case s.watchErr != nil:
		return nil, s.watchErr
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	// A watch from "" or "0" starts now, with an ADDED event for every
	// object there is, as the API server's.
	from := s.rv
	replay := !initial && (opts.ResourceVersion == "" || opts.ResourceVersion == "0")
	if !initial && opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		var err error
		if from, err = strconv.Atoi(opts.ResourceVersion); err != nil {
			return nil, apierrors.NewBadRequest("informertest: resource version " + strconv.Quote(opts.ResourceVersion))
		}
		if from < s.compacted {
			return nil, apierrors.NewResourceExpired("informertest: too old resource version " + opts.ResourceVersion)
		}
	}
	w := newSourceWatch(ctx, ls, fs, opts.AllowWatchBookmarks)
	if initial || replay {
		for _, obj := range s.sortedLocked(ls, fs) {
			w.send(watch.Event{Type: watch.Added, Object: obj})
		}
		if initial {
			w.sendBookmark(watch.Event{Type: watch.Bookmark, Object: s.bookmarkLocked(true)})
		}
	} else {
		// The history up to from tells which objects the watcher's
		// selectors saw at from; the rest is sent.
		for _, ev := range s.history {
			if rv, _ := strconv.Atoi(ev.Object.(T).GetResourceVersion()); rv <= from {
				w.seen(ev)
			} else {
				w.send(ev)
			}
		}
	}
	s.watchers[w] = struct{}{}
	w.onStop = func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.watchers, w)
	}
	// A watch whose context ends is forgotten too, not sent to for ever.
	unregister := context.AfterFunc(ctx, w.Stop)
	w.unregister.Store(&unregister)
	return w, nil
}

// IsWatchListSemanticsUnSupported returns false: a Source serves watch-list
// streams.
func (s *Source[T]) IsWatchListSemanticsUnSupported() bool { return false }

func selectors(opts metav1.ListOptions) (labels.Selector, fields.Selector, error) {
	ls, fs := labels.Everything(), fields.Everything()
	var err error
	if opts.LabelSelector != "" {
		if ls, err = labels.Parse(opts.LabelSelector); err != nil {
			return nil, nil, apierrors.NewBadRequest("informertest: label selector: " + err.Error())
		}
	}
	if opts.FieldSelector != "" {
		if fs, err = fields.ParseSelector(opts.FieldSelector); err != nil {
			return nil, nil, apierrors.NewBadRequest("informertest: field selector: " + err.Error())
		}
		for _, r := range fs.Requirements() {
			if r.Field != "metadata.name" && r.Field != "metadata.namespace" {
				return nil, nil, apierrors.NewBadRequest("informertest: field selector on " + r.Field + ": only metadata.name and metadata.namespace are supported")
			}
		}
	}
	return ls, fs, nil
}

type object interface {
	GetName() string
	GetNamespace() string
	GetLabels() map[string]string
}

func matches(obj object, ls labels.Selector, fs fields.Selector) bool {
	return ls.Matches(labels.Set(obj.GetLabels())) &&
		fs.Matches(fields.Set{"metadata.name": obj.GetName(), "metadata.namespace": obj.GetNamespace()})
}

func keyOf(obj object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

func isNil[T any](v T) bool {
	rv := reflect.ValueOf(v)
	return !rv.IsValid() || rv.Kind() == reflect.Pointer && rv.IsNil()
}

var (
	resource   = schema.GroupResource{Resource: "objects"}
	errOffline = apierrors.NewServiceUnavailable("informertest: source offline")
)
