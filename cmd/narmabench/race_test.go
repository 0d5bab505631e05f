//go:build race

package main

// raceEnabled: the race detector is on. The unsound variants are data
// races by design, so the tests leave them out under the race detector.
const raceEnabled = true
