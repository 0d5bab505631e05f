// Package engine is narma's RMA engine: communicators with two-sided
// messages and collectives, windows, the data-movement calls with their
// argument checks, and the three MPI synchronization modes (fence,
// post-start-complete-wait, lock) in the immediate and deferred
// implementations analysed by Gropp and Thakur.
//
// The engine is built on a transport.Endpoint and nothing else: locks are
// words in an exposed control region updated with remote atomics; PSCW and
// fence completion are counts in words of that region, added to by the
// target's notice handler when a sender's notice with no data reaches the
// region; two-sided messages are active messages
// matched here. The public package narma wraps this one; it never
// sees the transport.
package engine
