package informer

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
)

// MultiNamespaceListWatch returns a ListerWatcher of the objects of several
// namespaces: it lists and watches each namespace through the
// ListerWatcher perNamespace returns for it, and presents them as one
// source, so that one informer caches them all (its Lister reads each
// namespace with ByNamespace, or all of them).
//
// A List lists every namespace, following each one's pages, and returns
// them as one page whose resource version is the newest of theirs, with
// the shard info of their pages if every page has one (the server filtered
// each by ShardSelector). A
// Watch watches every namespace, each from the resource version of the
// last of its objects this ListerWatcher handed over (or of its last
// list), not from the one the Reflector asks for, which is the newest
// across namespaces: a namespace whose watch lagged behind the others
// loses nothing when the watch restarts. When any namespace's watch ends,
// the merged watch ends, and the Reflector watches them all again. It
// declares that it lacks watch-list semantics, so the Reflector lists and
// watches.
//
// Read-your-writes (WaitForResourceVersion) over such a source waits for
// the newest version applied in any namespace, which a lagging namespace
// may not have reached yet.
//
// namespaces must be distinct and non-empty (metav1.NamespaceAll is one
// source already); perNamespace is called once per namespace, here.
func MultiNamespaceListWatch[T Object](namespaces []string, perNamespace func(namespace string) (ListerWatcher[T], error)) (ListerWatcher[T], error) {
	if len(namespaces) == 0 {
		return nil, fmt.Errorf("%w: no namespaces", ErrInvalidOptions)
	}
	m := &multiNamespaceListWatch[T]{namespaces: slices.Clone(namespaces), rvs: make([]string, len(namespaces))}
	seen := make(map[string]bool, len(namespaces))
	for _, ns := range namespaces {
		if ns == metav1.NamespaceAll || seen[ns] {
			return nil, fmt.Errorf("%w: namespaces must be distinct and not empty: %q", ErrInvalidOptions, namespaces)
		}
		seen[ns] = true
		lw, err := perNamespace(ns)
		if err != nil {
			return nil, err
		}
		if lw == nil {
			return nil, fmt.Errorf("%w: nil ListerWatcher for namespace %q", ErrInvalidOptions, ns)
		}
		m.lws = append(m.lws, lw)
	}
	return m, nil
}

type multiNamespaceListWatch[T Object] struct {
	namespaces []string
	lws        []ListerWatcher[T]

	mu  sync.Mutex
	rvs []string // per namespace: the resource version to watch it from
}

// IsWatchListSemanticsUnSupported is client-go's marker; it returns true.
func (m *multiNamespaceListWatch[T]) IsWatchListSemanticsUnSupported() bool { return true }

// List lists every namespace, whole.
func (m *multiNamespaceListWatch[T]) List(ctx context.Context, opts metav1.ListOptions) (*ListPage[T], error) {
	out := &ListPage[T]{}
	rvs := make([]string, len(m.lws))
	opts.Continue = ""
	sharded := true // every page so far had shard info
	for i, lw := range m.lws {
		o := opts
		for {
			page, err := lw.List(ctx, o)
			if err != nil {
				return nil, fmt.Errorf("namespace %q: %w", m.namespaces[i], err)
			}
			if page == nil {
				return nil, fmt.Errorf("namespace %q: %w: nil list page", m.namespaces[i], ErrUnexpectedObject)
			}
			out.Items = append(out.Items, page.Items...)
			if sharded = sharded && page.ShardInfo != nil; sharded {
				out.ShardInfo = page.ShardInfo
			}
			if rvs[i] == "" {
				rvs[i] = page.ResourceVersion
			}
			if page.Continue == "" {
				break
			}
			o.Continue = page.Continue
			o.ResourceVersion, o.ResourceVersionMatch = "", "" // a continued list keeps its snapshot
		}
		out.ResourceVersion = newerVersion(out.ResourceVersion, rvs[i])
	}
	if !sharded {
		out.ShardInfo = nil
	}
	m.mu.Lock()
	m.rvs = rvs
	m.mu.Unlock()
	return out, nil
}

// newerVersion returns the newer of two resource versions, b if they
// cannot be compared.
func newerVersion(a, b string) string {
	if a == "" {
		return b
	}
	if c, err := resourceversion.CompareResourceVersion(a, b); err == nil && c > 0 {
		return a
	}
	return b
}

// Watch watches every namespace from its own resource version, merging
// the events.
func (m *multiNamespaceListWatch[T]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	m.mu.Lock()
	rvs := slices.Clone(m.rvs)
	m.mu.Unlock()
	w := &mergedWatch[T]{
		m:    m,
		out:  make(chan watch.Event),
		done: make(chan struct{}),
	}
	for i, lw := range m.lws {
		o := opts
		if rvs[i] != "" {
			o.ResourceVersion = rvs[i]
		}
		sub, err := lw.Watch(ctx, o)
		if err != nil {
			for _, s := range w.subs {
				s.Stop()
			}
			return nil, fmt.Errorf("namespace %q: %w", m.namespaces[i], err)
		}
		w.subs = append(w.subs, sub)
	}
	for i, sub := range w.subs {
		w.wg.Add(1)
		go w.forward(i, sub)
	}
	go func() {
		w.wg.Wait()
		close(w.out)
	}()
	return w, nil
}

// mergedWatch is the watch of a multiNamespaceListWatch: one goroutine per
// namespace forwards its events to out, and the first to end ends all.
type mergedWatch[T Object] struct {
	m    *multiNamespaceListWatch[T]
	subs []watch.Interface
	out  chan watch.Event
	wg   sync.WaitGroup

	once sync.Once
	done chan struct{} // closed by Stop, or when a namespace's watch ends
}

// forward hands over the events of namespace i until its watch ends or the
// merged watch stops, recording the resource version of each object handed
// over.
func (w *mergedWatch[T]) forward(i int, sub watch.Interface) {
	defer w.wg.Done()
	defer w.end()
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-sub.ResultChan():
			if !ok {
				return
			}
			select {
			case w.out <- ev:
			case <-w.done:
				return
			}
			if ev.Type == watch.Error {
				return
			}
			if acc, err := meta.Accessor(ev.Object); err == nil && acc.GetResourceVersion() != "" {
				w.m.mu.Lock()
				w.m.rvs[i] = acc.GetResourceVersion()
				w.m.mu.Unlock()
			}
		}
	}
}

// Stop stops every namespace's watch and returns once their goroutines
// have, so that the next Watch starts from every event handed over.
func (w *mergedWatch[T]) Stop() {
	w.end()
	w.wg.Wait()
}

// end stops every namespace's watch.
func (w *mergedWatch[T]) end() {
	w.once.Do(func() {
		close(w.done)
		for _, s := range w.subs {
			s.Stop()
		}
	})
}

// ResultChan returns the merged events.
func (w *mergedWatch[T]) ResultChan() <-chan watch.Event { return w.out }
