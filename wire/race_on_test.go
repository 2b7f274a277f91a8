//go:build race

package wire

// raceEnabled scales the fuzzed differential tests down under the race
// detector, which makes them about ten times slower.
const raceEnabled = true
