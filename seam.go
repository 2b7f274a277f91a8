package informer

import (
	"context"
	"fmt"
	"reflect"

	"github.com/typedkube/informer/internal/seam"
)

func init() {
	seam.WaitQueued = func(ctx context.Context, inf any) error {
		q, ok := inf.(queueWaiter)
		if !ok {
			return fmt.Errorf("informer: wait for the queue of %T, which is not a *SharedIndexInformer", inf)
		}
		return q.waitQueued(ctx)
	}
	seam.ObjectType = func(inf any) reflect.Type {
		if t, ok := inf.(objectTyped); ok {
			return t.objectType()
		}
		return nil
	}
}

// objectTyped is what every *SharedIndexInformer[T] implements for
// seam.ObjectType.
type objectTyped interface {
	objectType() reflect.Type
}

// objectType returns the Go type of the objects s holds (see
// seam.ObjectType).
func (s *SharedIndexInformer[T]) objectType() reflect.Type {
	if s.opts.objType != nil {
		return s.opts.objType
	}
	if t := reflect.TypeFor[T](); t.Kind() != reflect.Interface {
		return t
	}
	return nil
}

// queueWaiter is what every *SharedIndexInformer[T] implements for
// seam.WaitQueued.
type queueWaiter interface {
	waitQueued(ctx context.Context) error
}

// waitQueued returns once the cache has applied every event queued before
// the call (see seam.WaitQueued). Before Run nothing is queued.
func (s *SharedIndexInformer[T]) waitQueued(ctx context.Context) error {
	if s.opts.Queue == QueueDeltaFIFO {
		return fmt.Errorf("informer %s: wait for its queue: %w (QueueDeltaFIFO)", s.opts.Name, ErrNotInOrder)
	}
	s.mu.Lock()
	wait := s.queueApplied // nil before Run
	s.mu.Unlock()
	if wait == nil {
		return nil
	}
	return wait(ctx)
}
