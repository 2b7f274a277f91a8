//go:build !race

package memory

// raceEnabled is true when the race detector is on: its allocator pads
// and aligns blocks, which StoreBytes does not follow.
const raceEnabled = false
