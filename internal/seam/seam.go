// Package seam holds the hooks through which the module's other packages
// reach internals of package informer that are not part of its API.
// Package informer sets them when it is initialised.
package seam

import "context"

// WaitQueued waits until the informer inf (a *informer.SharedIndexInformer
// of any type) has applied to its cache every event its queue held when
// WaitQueued was called: a relist included, even one at the resource
// version the cache had already applied, which a wait for that version
// cannot tell from the state before it. It returns an error wrapping
// informer.ErrNotInOrder for an informer in QueueDeltaFIFO mode, and
// informer.ErrClosed if the informer stops first.
var WaitQueued func(ctx context.Context, inf any) error
