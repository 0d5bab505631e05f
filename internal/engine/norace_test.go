//go:build !race

package engine

// raceEnabled: whether the tests run under the race detector.
const raceEnabled = false
