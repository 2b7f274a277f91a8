//go:build race

package informer

const raceEnabled = true
