//go:build race

package wire

// tinyPacked is false under the race detector, which turns off the
// allocator's packing of small blocks without pointers: each short string
// then takes a block of 16 bytes (see stringBytes).
const tinyPacked = false
