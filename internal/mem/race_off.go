//go:build !race

package mem

// RaceRelease tells the race detector of an ordering it cannot see; see
// race_on.go. Without -race it does nothing.
func RaceRelease(*byte) {}

// RaceAcquire: see RaceRelease.
func RaceAcquire(*byte) {}
