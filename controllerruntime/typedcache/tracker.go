package typedcache

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// writeTracker is what the reads of one kind and representation must wait
// for: the writes in flight, the newest resource version written per
// object, and the deletions asked for, until a read has seen them in the
// cache.
type writeTracker struct {
	mu      sync.Mutex                                      // guards the fields below
	flight  map[client.ObjectKey]map[chan struct{}]struct{} // writes in flight, each closed when it returns
	rvs     map[client.ObjectKey]string                     // the newest version written, not yet seen applied
	deletes map[client.ObjectKey]map[types.UID]struct{}     // deletions asked for, not yet seen
}

func newWriteTracker() *writeTracker {
	return &writeTracker{
		flight:  map[client.ObjectKey]map[chan struct{}]struct{}{},
		rvs:     map[client.ObjectKey]string{},
		deletes: map[client.ObjectKey]map[types.UID]struct{}{},
	}
}

// begin records a write of key in flight; end with its channel when it
// returns.
func (t *writeTracker) begin(key client.ObjectKey) chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	done := make(chan struct{})
	if t.flight[key] == nil {
		t.flight[key] = map[chan struct{}]struct{}{}
	}
	t.flight[key][done] = struct{}{}
	return done
}

func (t *writeTracker) end(key client.ObjectKey, done chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.flight[key], done)
	if len(t.flight[key]) == 0 {
		delete(t.flight, key)
	}
	close(done)
}

// wrote records that a write of key returned rv; a version that cannot be
// compared (none, from a dry run) is not waited for.
func (t *writeTracker) wrote(key client.ObjectKey, rv string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.rvs[key]; ok {
		if c, err := resourceversion.CompareResourceVersion(rv, old); err != nil || c <= 0 {
			return
		}
	} else if _, err := resourceversion.CompareResourceVersion(rv, rv); err != nil {
		return
	}
	t.rvs[key] = rv
}

// deleting records a deletion of key's object uid; forgetDelete forgets it
// (the call failed), deleted once a read has seen it.
func (t *writeTracker) deleting(key client.ObjectKey, uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deletes[key] == nil {
		t.deletes[key] = map[types.UID]struct{}{}
	}
	t.deletes[key][uid] = struct{}{}
}

func (t *writeTracker) forgetDelete(key client.ObjectKey, uid types.UID) {
	t.deleted(key, []types.UID{uid})
}

func (t *writeTracker) deleted(key client.ObjectKey, uids []types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, uid := range uids {
		delete(t.deletes[key], uid)
	}
	if len(t.deletes[key]) == 0 {
		delete(t.deletes, key)
	}
}

// inFlight returns the channels of the writes in flight of key, or of
// every key if key is nil.
func (t *writeTracker) inFlight(key *client.ObjectKey) []chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []chan struct{}
	for k, writes := range t.flight {
		if key != nil && k != *key {
			continue
		}
		for done := range writes {
			out = append(out, done)
		}
	}
	return out
}

// pending returns, of key (or, if key is nil, of every key in namespace
// ns, or in all if ns is ""), the newest version written and the deletions
// asked for, that a read has not seen yet.
func (t *writeTracker) pending(key *client.ObjectKey, ns string) (map[client.ObjectKey]string, map[client.ObjectKey][]types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	match := func(k client.ObjectKey) bool {
		if key != nil {
			return k == *key
		}
		return ns == "" || k.Namespace == ns
	}
	var rvs map[client.ObjectKey]string
	for k, v := range t.rvs {
		if match(k) {
			if rvs == nil {
				rvs = map[client.ObjectKey]string{}
			}
			rvs[k] = v
		}
	}
	var deletes map[client.ObjectKey][]types.UID
	for k, uids := range t.deletes {
		if !match(k) {
			continue
		}
		if deletes == nil {
			deletes = map[client.ObjectKey][]types.UID{}
		}
		for uid := range uids {
			deletes[k] = append(deletes[k], uid)
		}
	}
	return rvs, deletes
}

// seen forgets the versions of rvs, which a read has seen applied, unless
// a newer one was written since.
func (t *writeTracker) seen(rvs map[client.ObjectKey]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, rv := range rvs {
		if c, err := resourceversion.CompareResourceVersion(t.rvs[k], rv); err == nil && c <= 0 {
			delete(t.rvs, k)
		}
	}
}
