package shard

import "errors"

// ErrInvalidOptions reports options that cannot work, such as a missing
// client or a bucket count that is not a power of two.
var ErrInvalidOptions = errors.New("shard: invalid options")
