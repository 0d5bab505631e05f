//go:build race && linux

package shm

import (
	"runtime"
	"unsafe"
)

// The rings order memory through atomics on mapped memory, which the race
// detector does not see. raceRelease and raceAcquire tell it: whatever a
// producer did before publishing happens before whatever the consumer
// does after taking the entry (one token for all rings: coarser than the
// truth, never finer).
var raceToken byte

func raceRelease() { runtime.RaceReleaseMerge(unsafe.Pointer(&raceToken)) }
func raceAcquire() { runtime.RaceAcquire(unsafe.Pointer(&raceToken)) }
