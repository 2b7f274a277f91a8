package informertest

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedkube/informer"
)

// CallKind is the handler method a Call was.
type CallKind uint8

// The handler methods.
const (
	OnAdd CallKind = iota + 1
	OnUpdate
	OnDelete
)

func (k CallKind) String() string {
	switch k {
	case OnAdd:
		return "OnAdd"
	case OnUpdate:
		return "OnUpdate"
	case OnDelete:
		return "OnDelete"
	}
	return fmt.Sprintf("CallKind(%d)", uint8(k))
}

// Call is one call a Recorder received.
type Call[T informer.Object] struct {
	Kind CallKind
	// Key is the object's namespace/name key.
	Key string
	// Old is the previous state (OnUpdate) or the deleted object (OnDelete).
	Old T
	// New is the added or updated object.
	New T
	// Initial is OnAdd's isInInitialList.
	Initial bool
	// FinalStateUnknown is OnDelete's DeletedObject.FinalStateUnknown.
	FinalStateUnknown bool
}

// String prints the call as "OnUpdate ns/name rv=5", for failure messages.
func (c Call[T]) String() string {
	obj := c.New
	if c.Kind == OnDelete {
		obj = c.Old
	}
	s := fmt.Sprintf("%s %s", c.Kind, c.Key)
	if !isNil(obj) && obj.GetResourceVersion() != "" {
		s += " rv=" + obj.GetResourceVersion()
	}
	if c.Initial {
		s += " initial"
	}
	if c.FinalStateUnknown {
		s += " final-state-unknown"
	}
	return s
}

// Recorder is an event handler that records every call, for tests to wait
// for and compare. Register it with AddEventHandler. The zero value is
// ready to use; it must not be copied after first use. Safe for concurrent
// use.
type Recorder[T informer.Object] struct {
	mu      sync.Mutex // guards the fields below
	calls   []Call[T]
	changed chan struct{} // closed and replaced on every call; nil until a waiter asks
}

var _ informer.ResourceEventHandler[*corev1.Pod] = (*Recorder[*corev1.Pod])(nil)

// OnAdd records an OnAdd call.
func (r *Recorder[T]) OnAdd(obj T, isInInitialList bool) {
	r.record(Call[T]{Kind: OnAdd, Key: keyOf(obj), New: obj, Initial: isInInitialList})
}

// OnUpdate records an OnUpdate call.
func (r *Recorder[T]) OnUpdate(old, new T) {
	r.record(Call[T]{Kind: OnUpdate, Key: keyOf(new), Old: old, New: new})
}

// OnDelete records an OnDelete call.
func (r *Recorder[T]) OnDelete(d informer.DeletedObject[T]) {
	r.record(Call[T]{Kind: OnDelete, Key: d.Key, Old: d.Obj, FinalStateUnknown: d.FinalStateUnknown})
}

func (r *Recorder[T]) record(c Call[T]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// Calls returns a copy of the calls received so far, in order.
func (r *Recorder[T]) Calls() []Call[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call[T](nil), r.calls...)
}

// Len returns the number of calls received so far.
func (r *Recorder[T]) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// Reset forgets the calls received so far.
func (r *Recorder[T]) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = nil
}

// WaitFor blocks until cond, called with the calls received so far after
// each new call (and once at the start), returns true, or ctx ends. It
// does not poll. On ctx's end the error says what was waited for and lists
// the last calls received, and wraps ctx's cause.
func (r *Recorder[T]) WaitFor(ctx context.Context, what string, cond func(calls []Call[T]) bool) error {
	for {
		r.mu.Lock()
		if cond(r.calls) {
			r.mu.Unlock()
			return nil
		}
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("informertest: waited for %s: %w; %s", what, context.Cause(ctx), r.summary(5))
		}
	}
}

// WaitForCalls waits until at least n calls were received.
func (r *Recorder[T]) WaitForCalls(ctx context.Context, n int) error {
	return r.WaitFor(ctx, fmt.Sprintf("%d calls", n), func(calls []Call[T]) bool { return len(calls) >= n })
}

// WaitForKey waits for a call of kind about key whose object (the new one,
// or the deleted one) has resource version rv; rv "" matches any.
func (r *Recorder[T]) WaitForKey(ctx context.Context, kind CallKind, key, rv string) error {
	what := fmt.Sprintf("%s %s", kind, key)
	if rv != "" {
		what += " rv=" + rv
	}
	return r.WaitFor(ctx, what, func(calls []Call[T]) bool {
		for _, c := range calls {
			obj := c.New
			if c.Kind == OnDelete {
				obj = c.Old
			}
			if c.Kind == kind && c.Key == key && (rv == "" || !isNil(obj) && obj.GetResourceVersion() == rv) {
				return true
			}
		}
		return false
	})
}

func (r *Recorder[T]) summary(last int) string {
	calls := r.Calls()
	if len(calls) == 0 {
		return "no call received"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d calls received", len(calls))
	if len(calls) > last {
		fmt.Fprintf(&b, ", the last %d:", last)
		calls = calls[len(calls)-last:]
	} else {
		b.WriteString(":")
	}
	for _, c := range calls {
		b.WriteString(" [")
		b.WriteString(c.String())
		b.WriteString("]")
	}
	return b.String()
}
