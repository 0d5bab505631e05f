package engine

import (
	"context"

	"github.com/narma-rma/narma/internal/mem"
)

// Fence closes the current fence epoch and opens the next one,
// collectively (MPI_Win_fence).
//
// Immediate strategy: operations were performed as called, so the fence
// completes them (FlushAll) and then synchronizes once (Barrier): the one
// barrier both closes the previous epoch and opens the next. NoPrecede
// skips the flush; NoPrecede together with NoSucceed skips everything.
//
// Deferred strategy (Gropp and Thakur): operations were queued. The fence
// learns with one reduce-scatter how many origins target this rank,
// performs its own queued operations, and sends one "done" message to
// each target it accessed; it returns when as many "done" messages arrived
// as origins target it. No barrier is needed: a rank that nobody targets
// and that targets nobody pays only the reduce-scatter. NoPrecede skips it
// all (and is an error if operations were queued). A deferred fence that
// ends early (its context ends, a peer fails) leaves the "done" messages
// it waited for to the next fence of the rank, which waits for them as
// well as its own.
func (w *Win) Fence(ctx context.Context, assert Assert) error {
	if err := w.check("Fence"); err != nil {
		return err
	}
	if err := w.checkAssert("Fence", assert, fenceAsserts); err != nil {
		return err
	}
	if w.accessOn || w.exposeOn {
		return opErr("Fence", w.c.rank, ErrEpoch, "a PSCW epoch is open")
	}
	if w.nlocks > 0 || w.lockAll {
		return opErr("Fence", w.c.rank, ErrEpoch, "a lock epoch is open")
	}
	if assert&NoPrecede != 0 && (w.fenceUsed || w.queued > 0) {
		return opErr("Fence", w.c.rank, ErrAssert, "NoPrecede, but operations were issued in the epoch it closes")
	}
	var err error
	if w.strategy == Deferred {
		if assert&NoPrecede == 0 {
			err = w.fenceDeferred(ctx)
		}
	} else if assert&(NoPrecede|NoSucceed) != NoPrecede|NoSucceed {
		if assert&NoPrecede == 0 && w.fenceUsed {
			if ferr := w.c.ep.FlushAll(ctx); ferr != nil {
				err = w.c.transportFailure("Fence", ctx, ferr, "flush")
			}
		}
		if berr := w.c.Barrier(ctx); berr != nil && err == nil {
			err = berr
		}
	}
	if err != nil {
		return err
	}
	w.fenceOpen = assert&NoSucceed == 0
	w.fenceUsed = false
	return nil
}

func (w *Win) fenceDeferred(ctx context.Context) error {
	n := w.c.size
	counts := make([]int32, n)
	for t := range counts {
		if len(w.queue[t]) > 0 {
			counts[t] = 1
		}
	}
	var k [1]int32
	if err := w.c.ReduceScatter(ctx, mem.Bytes(counts), mem.Bytes(k[:]), mem.Int32, mem.Sum); err != nil {
		return err
	}
	var first error
	for t := range counts {
		if counts[t] == 0 {
			continue
		}
		if err := w.replay("Fence", t, false); err != nil && first == nil {
			first = err
		}
	}
	// A target reads its window as soon as its fence returns, so it must
	// be told "done" only once this rank's operations on it are complete
	// there. If FlushAll fails (its context ended, say, while operations
	// were still in flight), each target is flushed on its own and told
	// only if that flush succeeds; the others are left to learn of the
	// failure as they wait (their context, the job's abort, a failed
	// peer), as from any collective a rank abandons.
	flushed := true
	if err := w.c.ep.FlushAll(ctx); err != nil {
		flushed = false
		if first == nil {
			first = w.c.transportFailure("Fence", ctx, err, "flush")
		}
	}
	for t := range counts {
		if counts[t] == 0 {
			continue
		}
		if !flushed && w.c.ep.Flush(ctx, w.c.jobRank(t)) != nil {
			continue
		}
		if err := w.sendCtl("Fence", t, winFenceDone); err != nil && first == nil {
			first = err
		}
	}
	// The fence takes the "done" messages of this epoch and any that an
	// earlier fence ended without (fenceOwed): they come late, and left in
	// the count they would end this fence before this epoch's origins are
	// done. A fence that ends early takes nothing and owes them all.
	want := uint64(k[0]) + w.fenceOwed
	err := w.c.wait(ctx, func() bool {
		return w.ctlPending(winFenceDone, 0) >= want || w.c.anyFailed()
	})
	if err != nil {
		w.fenceOwed = want
		return w.c.ctxErr("Fence", err)
	}
	if w.ctlPending(winFenceDone, 0) < want {
		w.fenceOwed = want
		return opErr("Fence", w.c.rank, ErrPeer, "a peer failed before completing the fence")
	}
	w.seenFence += want
	w.fenceOwed = 0
	return first
}
