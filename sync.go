package narma

import (
	"context"
	"fmt"

	"github.com/narma-rma/narma/internal/engine"
)

// Fence closes the current fence epoch and opens the next, collectively:
// operations issued before it are complete and visible at their targets
// when it returns on every rank. The first Fence opens the first epoch; a
// Fence with NoSucceed opens none. If a rank of the window has failed,
// Fence returns an error wrapping ErrPeer, and so do the later ones.
func (w *Win[T]) Fence(ctx context.Context, assert Assert) error {
	return w.eng().Fence(ctx, engine.Assert(assert))
}

// Post opens an exposure epoch for the origins in group (ranks): they may
// access this rank's window from their Start to their Complete. Post does
// not block. Wait or Test ends the epoch. If a rank of group is known to
// have failed, Post posts to none and returns an error wrapping ErrPeer;
// if one fails during the call, the ranks already posted to owe this rank
// a Complete that the next Wait including them takes as well.
func (w *Win[T]) Post(group []int, assert Assert) error {
	return w.eng().Post(group, engine.Assert(assert))
}

// Start opens an access epoch to the targets in group, each of which must
// Post a group containing this rank. If a target has failed, Start
// returns an error wrapping ErrPeer and leaves no epoch open; the live
// targets it had a post from are sent a Complete of an empty epoch, so
// that their Wait returns.
func (w *Win[T]) Start(ctx context.Context, group []int, assert Assert) error {
	return w.eng().Start(ctx, group, engine.Assert(assert))
}

// Complete closes the access epoch: every operation is complete at its
// target once the target's Wait returns. If a target has failed, the
// operations to the live targets are still completed and those targets
// told; Complete then returns an error wrapping ErrPeer.
func (w *Win[T]) Complete(ctx context.Context) error { return w.eng().Complete(ctx) }

// Wait closes the exposure epoch: it returns when every origin in the
// post group has called Complete, so their operations are visible. If an
// origin has failed, Wait takes the Completes of the live ones and then
// returns an error wrapping ErrPeer naming it; the epoch is closed.
func (w *Win[T]) Wait(ctx context.Context) error { return w.eng().Wait(ctx) }

// Test is the nonblocking Wait: it reports whether every origin has
// completed, and if so closes the exposure epoch.
func (w *Win[T]) Test() (bool, error) { return w.eng().Test() }

// Lock opens a passive-target epoch on target: Shared allows other shared
// holders, Exclusive none. The target does not take part. NoCheck asserts
// that no conflicting lock can exist and skips the lock word. A lock that
// a failed rank held exclusively fails the attempt with ErrPeer at once;
// one held by shared holders after a rank failed fails it after a second
// of trying (shared holders are not known by rank).
func (w *Win[T]) Lock(ctx context.Context, kind LockType, target int, assert Assert) error {
	if kind != Shared && kind != Exclusive {
		rank := -1
		if e := w.eng(); e != nil {
			rank = e.Comm().Rank()
		}
		return &OpError{Op: "Lock", Rank: rank, Detail: fmt.Sprintf("lock type %d", kind), Err: ErrInvalid}
	}
	return w.eng().Lock(ctx, kind == Exclusive, target, engine.Assert(assert))
}

// Unlock completes every operation to target (at origin and target) and
// closes its lock epoch.
func (w *Win[T]) Unlock(ctx context.Context, target int) error { return w.eng().Unlock(ctx, target) }

// LockAll opens a shared passive-target epoch on every rank.
func (w *Win[T]) LockAll(ctx context.Context, assert Assert) error {
	return w.eng().LockAll(ctx, engine.Assert(assert))
}

// UnlockAll completes every operation and closes the LockAll epoch.
func (w *Win[T]) UnlockAll(ctx context.Context) error { return w.eng().UnlockAll(ctx) }

// Flush completes every operation issued to target in the current lock
// epoch, at origin and target; the epoch stays open.
func (w *Win[T]) Flush(ctx context.Context, target int) error { return w.eng().Flush(ctx, target) }

// FlushAll flushes every target of the current lock epochs.
func (w *Win[T]) FlushAll(ctx context.Context) error { return w.eng().FlushAll(ctx) }

// FlushLocal completes every operation issued to target at the origin:
// origin buffers may be reused, and the results of gets and fetching
// operations are in place. Unlike Flush it does not wait for the target
// to have applied puts and accumulates: over TCP it returns at once
// after puts, where Flush waits for the target's answer. A producer that
// streams values with notified puts needs no more than FlushLocal before
// it reuses a buffer, since the notice tells the target when the data is
// there. On shared memory every operation is complete at both ends when
// it returns, and FlushLocal, like Flush, waits for nothing.
func (w *Win[T]) FlushLocal(ctx context.Context, target int) error {
	return w.eng().FlushLocal(ctx, target)
}

// FlushLocalAll is FlushLocal for every target of the current lock
// epochs.
func (w *Win[T]) FlushLocalAll(ctx context.Context) error { return w.eng().FlushLocalAll(ctx) }

// Sync makes local stores and remote updates of this rank's window visible
// to each other (MPI_Win_sync). narma's windows are unified, so it is a
// memory barrier.
func (w *Win[T]) Sync() error { return w.eng().Sync() }
