//go:build race

package bench

// raceEnabled: the race detector is on. The unsync variant is a data race
// by design (the receiver polls words that a put writes), so the tests
// leave it out under the race detector.
const raceEnabled = true
