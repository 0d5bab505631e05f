// Package async is a test transport: it wraps the endpoints of another
// transport (typically the synchronous, direct local transport) so that
// they behave like a network transport, and exercises the engine's
// asynchronous paths — Completions, Flush waiting, results valid only
// after completion — that a synchronous transport never takes.
//
// # Data operations
//
// Put, Get, Accumulate and CompareSwap on a wrapped region return as soon
// as the operation is queued. Each wrapped endpoint has one worker
// goroutine that executes the operations it issued, in issue order (FIFO),
// against the inner region. The order of data operations and notices from
// one origin to one target is therefore the inner transport's, as package
// transport requires. Before an operation returns it calls c.Add(1) (when
// c is not nil); the worker passes c on to the inner region and calls
// c.Done with the inner operation's error once it has been issued there.
//
// Sources of at most 8 bytes (small puts, single-element atomics, the
// operands of compare and swap) are copied before the call returns, as
// libfabric's inject does; larger sources are read by the worker, so the
// caller must leave them unchanged until completion. Get's dst and the
// result buffers of the fetching atomics are written by the worker: they
// are valid only once the operation is complete.
//
// Argument errors that can be seen without the target — bounds against the
// region's Size, the alignment of off for atomics, an operation not valid
// for the element type, operand lengths — are returned at issue, leaving c
// untouched. Errors only the target can see (a withdrawn region, a closed
// or failed peer) are reported by the worker: through c.Done if the
// operation had a Completion, otherwise by the next Flush (or FlushAll) of
// its target. An error is reported once.
//
// To make ordering bugs visible, the worker yields (runtime.Gosched, a few
// times) before every Nth operation, N drawn small and afresh each time
// from a per-endpoint pseudo-random generator. It never sleeps.
//
// # Flush
//
// Flush(ctx, target) waits until every operation the endpoint issued to
// target before the call has been executed by the worker (not those issued
// concurrently with or after the call, so that Flush cannot be starved),
// then flushes the inner endpoint; FlushAll does so for every target. Both
// honour ctx while waiting.
//
// # Everything else
//
// Caps are the inner transport's with Name "async(<inner name>)",
// Synchronous and Direct false; the regions do not implement
// transport.WordRegion. SendAM goes straight to the inner endpoint, not
// through the data queue: an active message can overtake data operations
// issued before it, as on a network that does not order its channels
// against each other, so the engine must Flush before it sends a message
// that announces their completion. Handlers, Expose, Unexpose, Region,
// Rank and Size are the inner endpoint's. Notice handlers of a target run
// on the worker goroutine of the origin (with the local transport); they
// may issue operations and send active messages, but must not block, and
// in particular must not Flush or Close the endpoint whose worker runs
// them.
//
// If the inner endpoint can simulate its failure (a Kill() error method,
// as transporttest.Killer), the wrapped endpoint can too: Kill is passed
// through.
//
// Close stops the endpoint: operations issued after it has begun fail at
// issue with transport.ErrClosed, the operations already queued are
// executed, the worker exits, and then the inner endpoint is closed. No
// goroutine survives Close.
package async
