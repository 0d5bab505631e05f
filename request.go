package narma

import (
	"context"

	"github.com/narma-rma/narma/internal/engine"
)

// Status describes a received or probed message, or a completed request.
type Status struct {
	// Source is the rank that sent the message (of an Isend: this
	// rank) or the matched notice (of a notification request: the last
	// of its count), or the target of a request-based RMA operation. A
	// counter threshold and an inactive notification request report
	// AnySource.
	Source int
	// Tag is the tag of the message or matched notice, or the counter
	// index of a counter threshold; 0 for a request-based RMA operation.
	// An inactive notification request reports AnyTag.
	Tag int
	// Count is the length of the message in bytes (its full length,
	// if it was truncated), or the bytes a request-based RMA operation
	// moves; 0 for notices.
	Count int
}

// Request is a nonblocking operation in flight: Isend and Irecv, the
// request-based RMA calls (Rput, RgetNotify, ...), a persistent
// notification request (NotifyInit) or a counter threshold
// (CounterThreshold). Test polls it, Wait blocks until it completes, Free
// releases it; Start re-arms a notification request. Requests also take
// part in WaitAny, TestAny, WaitAll and TestSome. A Request is used by
// one goroutine at a time.
type Request engine.Request

// Test reports whether the operation is complete, without blocking, and
// its status. Once it reports true, the status and error are final. A
// notification request that is not started completes at once with
// Source AnySource and Tag AnyTag, as in MPI.
func (r *Request) Test() (Status, bool, error) {
	st, done, err := r.eng().Test()
	return Status(st), done, err
}

// Wait blocks until the operation is complete or ctx is done, and
// returns its status. On a notification request Wait takes count
// matching notices (see NotifyInit); on a request-based RMA operation
// queued by the Deferred strategy under a lock not yet taken, Wait takes
// the lock and performs it.
func (r *Request) Wait(ctx context.Context) (Status, error) {
	st, err := r.eng().Wait(ctx)
	return Status(st), err
}

// Start activates a persistent request (made by NotifyInit): its match
// count is reset, and Test and Wait look for count new matching notices.
// Starting a request that is active (started and not yet complete) is
// refused with ErrInvalid, and the request keeps its matches; so is
// starting any other kind of request.
func (r *Request) Start() error { return r.eng().Start() }

// Free releases the request; later calls on it return ErrFreed. A
// receive that has not matched is cancelled. Notices an active
// notification request has already matched are consumed with it; those
// it has not matched stay queued for other requests. Free of an RMA
// request does not cancel the operation: the epoch's closing call still
// completes it.
func (r *Request) Free() error { return r.eng().Free() }

// WaitAny waits until one of reqs completes and returns its index and
// status. Nil and freed requests, inactive notification requests and
// requests whose completion the wait family already reported are skipped;
// with none left it returns -1.
func WaitAny(ctx context.Context, reqs []*Request) (int, Status, error) {
	i, st, err := engine.WaitAnyOf(ctx, reqs, (*Request).eng)
	return i, Status(st), err
}

// TestAny is the nonblocking WaitAny: index -1 if none is complete.
func TestAny(reqs []*Request) (int, Status, error) {
	i, st, err := engine.TestAnyOf(reqs, (*Request).eng)
	return i, Status(st), err
}

// WaitAll waits until every request of reqs completes. statuses, if not
// nil, has one entry per request and receives their statuses.
func WaitAll(ctx context.Context, reqs []*Request, statuses []Status) error {
	return engine.WaitAllOf(ctx, reqs, (*Request).eng, statuses, publicStatus)
}

// TestSome tests every request of reqs and appends the indices of the
// completed ones to done (pass a reused slice to avoid allocating).
func TestSome(reqs []*Request, done []int) ([]int, error) {
	return engine.TestSomeOf(reqs, (*Request).eng, done)
}

// A Request is the engine's request under a type of its own, so that its
// methods are documented here: the two pointers convert into each other
// without copying or allocating, and nil stays nil.

// eng returns r as the engine's request.
func (r *Request) eng() *engine.Request { return (*engine.Request)(r) }

// request returns the engine's request r as a *Request.
func request(r *engine.Request) *Request { return (*Request)(r) }

// requestOf is request for the results of the calls that make one.
func requestOf(r *engine.Request, err error) (*Request, error) { return request(r), err }

// publicStatus converts the engine's status.
func publicStatus(st engine.Status) Status { return Status(st) }
