// Package hybrid makes one transport.Endpoint out of two, as MPI
// libraries do for jobs that span hosts: ranks on the same host talk over
// shared memory (package shm), ranks on different hosts over TCP (package
// tcp). The choice is made per pair of ranks when the endpoint is built,
// from the host of every rank, and the engine never sees it.
//
// # Ranks
//
// Every rank in the API is a global rank. The shm endpoint numbers the
// ranks of its host 0, 1, ... in increasing global rank; the hybrid
// endpoint translates targets to those local ranks, and the sources that
// the shm endpoint gives its handlers (notices, active messages,
// failures) and the errors it returns back to global ranks. The TCP
// endpoint spans all ranks and needs no translation.
//
// # Routing
//
// Region, Flush and SendAM go to the shm endpoint for a target on this
// host (this rank included) and to the TCP endpoint otherwise. A pair of
// ranks always uses the same path, so the orders the transport contract
// promises per origin and target (notices, accumulates, active messages)
// hold as each inner transport keeps them. FlushAll flushes both.
//
// # Keys
//
// Expose exposes the memory on both inner endpoints and returns one key
// that holds both inner keys, the shm key in its first half and the TCP
// key in its second (key.go). Region uses the half of the endpoint it
// routes to; Unexpose withdraws both. An inner key that does not fit in
// half a key fails Expose with ErrKeySpace. Notices from an inner endpoint
// name its inner key: two maps, from shm key and from TCP key to hybrid
// key, replaced on each Expose and Unexpose and read with one atomic load,
// turn it back into the hybrid key.
//
// # Handlers
//
// The endpoint embeds transport.Handlers, the table the engine fills.
// When the engine installs a notice or active-message handler, the
// endpoint installs on both inner endpoints a translating handler that
// looks the engine's up at each delivery; removing it removes them, so
// that each inner endpoint keeps its own treatment of messages that find
// no handler (shm holds them until one is installed). Failure handlers are
// installed on both from the start: a peer's failure reported by either
// inner endpoint, or by both, reaches the engine once. Close and Kill act
// on both inner endpoints.
//
// # Capabilities
//
// Caps are Name "hybrid(shm+tcp)", Synchronous false (TCP operations
// complete later), Direct false, MaxAM the smaller of the inner limits.
// Not being Direct, the endpoint hands out no words: handles on regions
// of this host wrap shm's and do not implement transport.WordRegion (the
// conformance suite requires this of a transport that is not Direct, and
// the engine, internal/engine/win.go, takes lock words through
// WordRegion only if Caps.Direct). The engine
// then updates lock words through Region.Accumulate and CompareSwap, and
// the two paths stay coherent: the shm endpoint applies them with atomic
// instructions on the mapped memory, the target's TCP reader with atomic
// instructions on the same memory (both through the load/store core of
// package local; sub-word elements through a compare-and-swap on the same
// aligned word), and the target's own operations go through the shm
// endpoint.
//
// # Polling and sleeping
//
// The endpoint is a transport.Poller and transport.Sleeper through the
// shm endpoint: Poll and PollNotices drain its rings (with sources and
// keys translated), Yield and Park are its own, and Sleep sleeps on its
// doorbell, which shm producers ring, so that a same-host arrival wakes
// the waiting thread directly. TCP deliveries run on the TCP endpoint's
// reader goroutines instead, and Poll does not see them; so that they
// wake a waiter too, the translating TCP handlers (and the failure
// handlers), after running the engine's, ring the shm doorbell (Wake) if
// a goroutine is registered as a sleeper (between Prepare and the end of
// Sleep or Cancel). A waiter registers before its last look at what it
// waits for, and a TCP handler runs the engine's handler before it looks
// for sleepers (sequentially consistent atomics, as in shm's own Prepare
// and Wake), so a TCP delivery either finds the sleeper and rings,
// changing the doorbell's count so that the sleep with the older ticket
// returns at once, or came before the waiter's last look, which sees
// it: no wake-up is lost between a waiter's last look and its sleep,
// however many goroutines wait. The engine adds its own
// guarantee on top: its handlers call Wake (Comm.wake) whenever a waiter
// is registered, and its waiters register before their last check
// (internal/engine/wait.go, sleepWait), so a rank waiting for a notice
// from another host is woken as soon as the TCP reader has run the
// notice's handler, at the cost of one futex wake.
//
// Not implementing Sleeper would also be correct (waiters would then
// Park and sleep on the engine's channel, and shm's progress goroutine
// would wake them), but same-host arrivals would then reach a sleeping
// waiter through an extra goroutine hand-off.
//
// # Jobs in one process
//
// Group builds a whole job in this process for tests: one shm group per
// host over one shared heap (which should be mem's source), and one TCP
// group over all ranks on loopback. The package builds on every
// platform; Group, like shm, only on Linux.
package hybrid
