// Package local is the in-process transport: every rank is a set of
// goroutines in one process, and the endpoints of a Fabric reach each
// other's exposed memory directly.
//
// It is a load/store transport, built the way a transport over shared
// (mapped) memory works: a Put is a copy into the target's exposed bytes, a
// Get a copy out of them, and the atomics are the element-wise atomics of
// package mem applied to the target's memory. The access functions PutAt,
// GetAt, AccumulateAt and CompareSwapAt hold that load/store core with its
// bounds and alignment checks, for reuse by other load/store transports.
//
// Every operation is complete when it returns (Caps.Synchronous), so a
// Completion is never touched and Flush only checks the endpoint and its
// context. Remote atomics are coherent with the target's own atomics on its
// memory (Caps.Direct).
//
// # Cost of an operation
//
// A Region handle caches the target's memory and carries one atomic state
// word, which records why the handle stopped once it can no longer be
// used: the region was withdrawn (Unexpose), the origin closed, or the
// target closed or failed. An operation is one atomic load of that word, a bounds
// (and, for atomics, alignment) check and the copy or atomic; it allocates
// nothing. A notice adds one atomic load of the target's NoticeHandler and
// the call.
//
// As on real load/store hardware, an operation that has passed its state
// check may still touch the memory while a concurrent Unexpose withdraws
// it; the engine must not withdraw a region while operations on it may be
// running (MPI makes window release collective for this reason).
// Operations that start after Unexpose has returned fail with
// transport.ErrNoRegion and write nothing.
//
// # Handlers and ordering
//
// Notices and active messages are delivered synchronously: the target's
// NoticeHandler or AMHandler runs on the goroutine of the operation or the
// SendAM call, before it returns. Delivery from one source is therefore in
// issue order as long as that source issues from one goroutine at a time,
// and handlers of one target may run concurrently when several goroutines
// send to it. Handlers must not block. A notice whose target has no
// NoticeHandler installed is dropped; an active message whose handler is
// missing is refused with ErrNoHandler.
//
// # Closing and failure
//
// Close is orderly: the endpoint's own operations then fail with
// transport.ErrClosed, operations aimed at it fail with an error matching
// transport.ErrPeer, and no FailureHandler is called. Fabric.Kill simulates
// the failure of a rank for tests: it behaves like Close and, in addition,
// tells the FailureHandler of every other open endpoint.
package local
