//go:build race

package mem

import (
	"runtime"
	"unsafe"
)

// RaceRelease and RaceAcquire tell the race detector that what the caller
// did before a RaceRelease of token happens before what a caller of
// RaceAcquire of the same token does after it: memory ordered through
// atomics on mapped memory, which the detector does not see. Without
// -race they do nothing.
func RaceRelease(token *byte) { runtime.RaceReleaseMerge(unsafe.Pointer(token)) }

// RaceAcquire: see RaceRelease.
func RaceAcquire(token *byte) { runtime.RaceAcquire(unsafe.Pointer(token)) }
