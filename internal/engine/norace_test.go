//go:build !race

package engine

// raceEnabled: the tests run under the race detector.
const raceEnabled = false
