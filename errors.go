package narma

import "github.com/narma-rma/narma/internal/engine"

// Errors. Every error narma returns wraps one of these (or a context
// error), so errors.Is works; the message names the call, the rank and the
// bad value. An RMA call that fails its argument checks has written
// nothing, locally or remotely. (A collective that fails may have filled
// part of its receive buffer.)
var (
	// ErrRank: a rank outside [0, Size).
	ErrRank = engine.ErrRank
	// ErrBounds: a displacement or length reaching outside the target
	// window.
	ErrBounds = engine.ErrBounds
	// ErrLayout: an invalid layout, or a buffer too short for it, or
	// origin and target layouts with different element counts.
	ErrLayout = engine.ErrLayout
	// ErrOp: an operation not defined on the element type (bitwise on
	// floats, compare-and-swap on floats).
	ErrOp = engine.ErrOp
	// ErrType: arguments of mismatched element types.
	ErrType = engine.ErrType
	// ErrAlign: an atomic operation at a byte offset that is not a
	// multiple of the element size (with a displacement unit smaller than
	// the element).
	ErrAlign = engine.ErrAlign
	// ErrNotInEpoch: an RMA call to a target outside every open access
	// epoch.
	ErrNotInEpoch = engine.ErrNotInEpoch
	// ErrEpoch: a synchronization call not allowed in the current state
	// (e.g. Complete without Start, Lock during a fence epoch with
	// operations, a request-based call outside a lock epoch).
	ErrEpoch = engine.ErrEpoch
	// ErrLock: lock misuse (unlock without lock, a second lock on the
	// same target).
	ErrLock = engine.ErrLock
	// ErrGroup: an invalid group (a PSCW group, or a group or list of
	// ranks of Group, Create: a rank listed twice, a rank outside the
	// communicator), or a group mismatch.
	ErrGroup = engine.ErrGroup
	// ErrAssert: an assertion the call could check was false (NoPrecede
	// on a fence that closes operations).
	ErrAssert = engine.ErrAssert
	// ErrFreed: a call on a freed window or request.
	ErrFreed = engine.ErrFreed
	// ErrTruncate: a received message longer than the receive buffer.
	ErrTruncate = engine.ErrTruncate
	// ErrTag: a negative tag where a real tag is needed.
	ErrTag = engine.ErrTag
	// ErrAborted: the job was aborted because another rank failed; Run
	// returns that rank's error instead.
	ErrAborted = engine.ErrAborted
	// ErrPeer: a peer failed or its transport reported an error.
	ErrPeer = engine.ErrPeer
	// ErrNotAllocated: Create over memory that AllocMem did not return.
	ErrNotAllocated = engine.ErrNotAlloc
	// ErrCollective: ranks passed inconsistent arguments to a collective.
	ErrCollective = engine.ErrCollective
	// ErrInvalid: any other invalid argument.
	ErrInvalid = engine.ErrInvalidArgs
	// ErrNotShared: a rank's window memory asked for with SharedQuery, or
	// needed by AllocateShared, that this rank does not reach with loads
	// and stores (another host, or a network transport).
	ErrNotShared = engine.ErrNotShared
	// ErrInvalidNotification: a notice naming a counter the target does
	// not have (or counters not enabled), or an unknown signal operation:
	// the invalid-notification error of Intel's counter proposal.
	ErrInvalidNotification = engine.ErrInvalidNotification
)

// OpError is the error type of failed calls: the call, the rank, the bad
// value and the sentinel (Err) that errors.Is matches. Errors of narma's
// calls are, or wrap, an *OpError: get at it with errors.As or
// errors.AsType.
type OpError struct {
	Op     string // the call, e.g. "PutNotify"
	Rank   int    // the calling rank, or -1 where none applies (a call on a nil window or request)
	Detail string // the bad value, e.g. "rank 7 not in [0,4)"; may be empty
	Err    error  // a sentinel above or a context error, or a cause that wraps one
}

// Error formats the error as "Op (rank R): detail: cause", or
// "Op (rank R): cause" without a detail.
func (e *OpError) Error() string { return (*engine.OpError)(e).Error() }

// Unwrap returns Err.
func (e *OpError) Unwrap() error { return e.Err }

// The engine builds its errors as engine.OpError, which has OpError's
// fields (the conversions here do not compile otherwise); errors.As finds
// it as an *OpError through this conversion, which copies nothing.
func init() {
	engine.PublicAs = func(e *engine.OpError, target any) bool {
		p, ok := target.(**OpError)
		if ok {
			*p = (*OpError)(e)
		}
		return ok
	}
}
