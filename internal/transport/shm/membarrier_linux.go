package shm

import "github.com/narma-rma/narma/internal/sys"

// The handshake between a producer that publishes a notice and a
// consumer that goes to sleep is Dekker's: the producer stores the slot's
// sequence and then loads the count of sleepers; the consumer adds itself
// to that count and then looks at the slot. On amd64 a plain store may
// wait in the store buffer while a later load goes ahead, so one side
// needs a fence between its store and its load. Producers publish all the
// time and consumers sleep rarely, so the consumer pays: before its last
// look it calls membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), which runs a
// full memory barrier on every processor that runs a thread of a process
// registered for it (every narma process that could register, and any
// other program that did). After the call, either the producer's store is
// visible to the consumer's look, or the producer's load of the count
// comes after the barrier and sees the consumer. Producers then publish
// with a plain (release) store, and neither wait for their stores to
// reach the consumer nor make the consumer's line wait for a locked
// instruction.
//
// A process whose kernel refuses the registration (before Linux 4.16, or
// under a seccomp filter) says so in its control segment (header.barrier
// stays 0), and its producers, and every producer that targets it,
// publish with a fenced store as before.

// barrierReady registers this process for global expedited memory
// barriers, once, and reports whether it could. A variable for tests,
// which make the kernel refuse.
var barrierReady = sys.GlobalBarrierReady
