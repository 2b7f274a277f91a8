// Package seam holds the hooks through which the module's other packages
// reach internals of package informer that are not part of its API.
// Package informer sets them when it is initialised.
package seam

import (
	"context"
	"reflect"
)

// WaitQueued waits until the informer inf (a *informer.SharedIndexInformer
// of any type) has applied to its cache every event its queue held when
// WaitQueued was called: a relist included, even one at the resource
// version the cache had already applied, which a wait for that version
// cannot tell from the state before it. It returns an error wrapping
// informer.ErrNotInOrder for an informer in QueueDeltaFIFO mode, and
// informer.ErrClosed if the informer stops first.
var WaitQueued func(ctx context.Context, inf any) error

// ObjectType returns the Go type of the objects the informer inf (a
// *informer.SharedIndexInformer of any type) holds: its T, or for
// informer.ForType's the type named at run time; nil when T is an
// interface type and the informer was made otherwise.
var ObjectType func(inf any) reflect.Type
