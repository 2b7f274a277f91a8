//go:build !race

package wire

// tinyPacked says that the allocator packs small blocks without pointers,
// such as short strings, into shared 16-byte blocks (see stringBytes).
const tinyPacked = true
