//go:build linux

package shm

import "github.com/narma-rma/narma/internal/mem"

// The rings order memory through atomics on mapped memory, which the race
// detector does not see. raceRelease and raceAcquire tell it: whatever a
// producer did before publishing happens before whatever the consumer
// does after taking the entry (one token for all rings: coarser than the
// truth, never finer). Without -race they do nothing.
var raceToken byte

func raceRelease() { mem.RaceRelease(&raceToken) }
func raceAcquire() { mem.RaceAcquire(&raceToken) }
