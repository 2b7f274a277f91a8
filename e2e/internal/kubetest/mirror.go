package kubetest

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/typedkube/informer"
)

// EventKind is the handler method a notification called.
type EventKind string

const (
	Add    EventKind = "add"
	Update EventKind = "update"
	Delete EventKind = "delete"
)

// Event is one notification a Mirror received.
type Event struct {
	Kind    EventKind
	Key     string
	RV      string // the new state's (the deleted state's for Delete)
	OldRV   string // Update: the old state's
	Initial bool   // Add: isInInitialList
	Unknown bool   // Delete: FinalStateUnknown
}

func (e Event) String() string {
	switch e.Kind {
	case Update:
		return fmt.Sprintf("update %s %s->%s", e.Key, e.OldRV, e.RV)
	case Delete:
		if e.Unknown {
			return fmt.Sprintf("delete %s rv=%s (final state unknown)", e.Key, e.RV)
		}
		return fmt.Sprintf("delete %s rv=%s", e.Key, e.RV)
	}
	return fmt.Sprintf("add %s rv=%s initial=%t", e.Key, e.RV, e.Initial)
}

// Mirror is a typed event handler that rebuilds the informer's cache from its notifications
// alone and checks that they are consistent with what it has seen:
//   - OnAdd names an object it does not hold;
//   - OnUpdate names an object it holds, with the old state it holds, and a new state whose
//     resource version is not older;
//   - OnDelete names an object it holds; unless the final state is unknown, the deleted state
//     is not older than the one it holds.
//
// Resource versions are compared as integers, which is what kube-apiserver over etcd gives
// (clients in general must treat them as opaque). Every notification that breaks a rule is
// recorded; Err returns them. With Record set before the informer starts, every notification is
// also kept, in order, for Events.
type Mirror[T informer.Object] struct {
	Record bool

	mu         sync.Mutex
	objs       map[string]T // guarded by mu
	events     []Event      // guarded by mu; only with Record
	violations []error      // guarded by mu
	counts     map[EventKind]int
}

// NewMirror returns an empty Mirror.
func NewMirror[T informer.Object]() *Mirror[T] {
	return &Mirror[T]{objs: make(map[string]T), counts: make(map[EventKind]int)}
}

func (m *Mirror[T]) violate(format string, args ...any) {
	if len(m.violations) < 20 {
		m.violations = append(m.violations, fmt.Errorf(format, args...))
	}
}

func (m *Mirror[T]) record(e Event) {
	m.counts[e.Kind]++
	if m.Record {
		m.events = append(m.events, e)
	}
}

// OnAdd implements informer.ResourceEventHandler.
func (m *Mirror[T]) OnAdd(obj T, isInInitialList bool) {
	k := key(obj)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.record(Event{Kind: Add, Key: k, RV: obj.GetResourceVersion(), Initial: isInInitialList})
	if old, ok := m.objs[k]; ok {
		m.violate("OnAdd(%s rv=%s) for an object held at rv=%s", k, obj.GetResourceVersion(), old.GetResourceVersion())
	}
	m.objs[k] = obj
}

// OnUpdate implements informer.ResourceEventHandler.
func (m *Mirror[T]) OnUpdate(oldObj, newObj T) {
	k := key(newObj)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.record(Event{Kind: Update, Key: k, RV: newObj.GetResourceVersion(), OldRV: oldObj.GetResourceVersion()})
	held, ok := m.objs[k]
	switch {
	case key(oldObj) != k:
		m.violate("OnUpdate with old %s and new %s", key(oldObj), k)
	case !ok:
		m.violate("OnUpdate(%s %s->%s) for an object not held", k, oldObj.GetResourceVersion(), newObj.GetResourceVersion())
	case held.GetResourceVersion() != oldObj.GetResourceVersion():
		m.violate("OnUpdate(%s %s->%s) but held rv=%s", k, oldObj.GetResourceVersion(), newObj.GetResourceVersion(), held.GetResourceVersion())
	case rvLess(newObj.GetResourceVersion(), oldObj.GetResourceVersion()):
		m.violate("OnUpdate(%s %s->%s) goes back in time", k, oldObj.GetResourceVersion(), newObj.GetResourceVersion())
	}
	m.objs[k] = newObj
}

// OnDelete implements informer.ResourceEventHandler.
func (m *Mirror[T]) OnDelete(d informer.DeletedObject[T]) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var rv string
	if !isZero(d.Obj) {
		rv = d.Obj.GetResourceVersion()
		if key(d.Obj) != d.Key {
			m.violate("OnDelete(key %s) of object %s", d.Key, key(d.Obj))
		}
	} else if !d.FinalStateUnknown {
		m.violate("OnDelete(%s) with no object and a known final state", d.Key)
	}
	m.record(Event{Kind: Delete, Key: d.Key, RV: rv, Unknown: d.FinalStateUnknown})
	held, ok := m.objs[d.Key]
	switch {
	case !ok:
		m.violate("OnDelete(%s rv=%s) for an object not held", d.Key, rv)
	case !d.FinalStateUnknown && rvLess(rv, held.GetResourceVersion()):
		m.violate("OnDelete(%s rv=%s) older than held rv=%s", d.Key, rv, held.GetResourceVersion())
	}
	delete(m.objs, d.Key)
}

func isZero[T informer.Object](obj T) bool {
	var zero T
	return any(obj) == any(zero)
}

// rvLess compares resource versions as integers; unparsable ones are never less.
func rvLess(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}

// State returns the state the notifications have built.
func (m *Mirror[T]) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := make(State, len(m.objs))
	for k, obj := range m.objs {
		s[k] = obj.GetResourceVersion()
	}
	return s
}

// Get returns the object the notifications left under key.
func (m *Mirror[T]) Get(key string) (T, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	obj, ok := m.objs[key]
	return obj, ok
}

// Events returns the notifications received so far, in order (only with Record).
func (m *Mirror[T]) Events() []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Event(nil), m.events...)
}

// Counts returns how many notifications of each kind were received.
func (m *Mirror[T]) Counts() map[EventKind]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[EventKind]int, len(m.counts))
	for k, n := range m.counts {
		out[k] = n
	}
	return out
}

// Err returns the inconsistencies seen (at most 20), or nil.
func (m *Mirror[T]) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return errors.Join(m.violations...)
}
