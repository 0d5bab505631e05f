package engine

import (
	"context"
	"errors"
	"fmt"
)

// Sentinel errors. The public package re-exports them; every error the
// engine returns wraps one of them (or a context error).
var (
	ErrRank        = errors.New("narma: rank out of range")
	ErrBounds      = errors.New("narma: access outside the target window")
	ErrLayout      = errors.New("narma: invalid layout or buffer length")
	ErrOp          = errors.New("narma: operation not defined for the element type")
	ErrType        = errors.New("narma: element type mismatch")
	ErrAlign       = errors.New("narma: atomic access not aligned to the element size")
	ErrNotInEpoch  = errors.New("narma: target not in an access epoch")
	ErrEpoch       = errors.New("narma: call not allowed in the current epoch")
	ErrLock        = errors.New("narma: lock misuse")
	ErrGroup       = errors.New("narma: invalid or mismatched group")
	ErrAssert      = errors.New("narma: assertion contradicted")
	ErrFreed       = errors.New("narma: window or request freed")
	ErrTruncate    = errors.New("narma: message truncated")
	ErrTag         = errors.New("narma: invalid tag")
	ErrAborted     = errors.New("narma: job aborted")
	ErrPeer        = errors.New("narma: peer failed")
	ErrNotAlloc    = errors.New("narma: memory not from the library allocator")
	ErrCollective  = errors.New("narma: collective arguments differ between ranks")
	ErrInvalidArgs = errors.New("narma: invalid argument")
	ErrNotShared   = errors.New("narma: memory not shared with this rank")

	ErrInvalidNotification = errors.New("narma: invalid notification")
)

// OpError describes a failed call: which call, on which rank, and why.
type OpError struct {
	Op     string // the call, e.g. "Put"
	Rank   int    // the calling rank
	Detail string // the bad value, e.g. "target 7 not in [0,4)"
	Err    error  // a sentinel above, or a cause that wraps one
}

// Error formats the error as "Op (rank R): detail: cause".
func (e *OpError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%s (rank %d): %v", e.Op, e.Rank, e.Err)
	}
	return fmt.Sprintf("%s (rank %d): %s: %v", e.Op, e.Rank, e.Detail, e.Err)
}

// Unwrap returns the underlying error.
func (e *OpError) Unwrap() error { return e.Err }

// As lets errors.As and errors.AsType find e as the public package's
// OpError, a type of its own with the same fields (which this package
// cannot name): PublicAs converts e if target points to one.
func (e *OpError) As(target any) bool { return PublicAs != nil && PublicAs(e, target) }

// PublicAs is set once, by the public package's initialization, to store
// e in target and report true if target is a pointer to its *OpError.
var PublicAs func(e *OpError, target any) bool

// causeError is a sentinel together with the error that caused it, so
// that errors.Is matches both (e.g. ErrPeer and the transport's error).
type causeError struct{ sentinel, cause error }

func (e *causeError) Error() string   { return e.sentinel.Error() + ": " + e.cause.Error() }
func (e *causeError) Unwrap() []error { return []error{e.sentinel, e.cause} }

// transportFailure wraps an error a transport returned for op. A context
// error stays a context error (and the abort stays the abort); anything
// else is ErrPeer, keeping the cause.
func (c *Comm) transportFailure(op string, ctx context.Context, err error, format string, args ...any) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		return c.ctxErr(op, c.stopErr(ctx))
	}
	d := fmt.Sprintf(format, args...)
	return &OpError{Op: op, Rank: c.rank, Detail: d, Err: &causeError{ErrPeer, err}}
}

func opErr(op string, rank int, err error, format string, args ...any) error {
	d := ""
	if format != "" {
		d = fmt.Sprintf(format, args...)
	}
	return &OpError{Op: op, Rank: rank, Detail: d, Err: err}
}
