package shmem

import (
	"context"
	"slices"

	"github.com/narma-rma/narma"
)

// Quiet completes every operation this PE issued, to every PE
// (shmem_quiet): nonblocking puts and gets, counting puts and puts with
// signal, those issued on contexts (Ctx) included. When it returns, their
// data is in place at their targets and their sources may be reused. It
// is narma's FlushAll on the heap window.
func (w *World) Quiet(ctx context.Context) error {
	if err := w.ok("Quiet"); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.win.FlushAll(ctx)
}

// Fence orders this PE's puts, atomics and signals to each PE
// (shmem_fence): those issued before it are delivered to a PE before
// those issued after it to the same PE. narma guarantees no order among
// plain puts, so Fence completes them, as Quiet does; it is therefore
// stronger, and no cheaper, than OpenSHMEM requires.
func (w *World) Fence(ctx context.Context) error {
	if err := w.ok("Fence"); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.win.FlushAll(ctx)
}

// BarrierAll completes this PE's operations (Quiet) and waits until every
// PE has called it (shmem_barrier_all): afterwards every PE's puts issued
// before the barrier are visible everywhere.
func (w *World) BarrierAll(ctx context.Context) error {
	if err := w.Quiet(ctx); err != nil {
		return err
	}
	return w.priv.Barrier(ctx)
}

// Barrier is BarrierAll over the PEs in pes (which must contain this PE,
// each PE once, in any order): every PE of the set calls it, and it
// returns once all have. It completes this PE's operations first (Quiet).
// It is built on two-sided messages of the World's private duplicate of
// its Comm: each PE of the set tells the lowest PE of the set that it
// arrived, and waits for that PE's release.
func (w *World) Barrier(ctx context.Context, pes []int) error {
	if err := w.ok("Barrier"); err != nil {
		return err
	}
	if len(pes) == 0 {
		return w.opErr("Barrier", narma.ErrInvalid, "empty PE set")
	}
	seen := make([]bool, w.n)
	for _, pe := range pes {
		if pe < 0 || pe >= w.n {
			return w.opErr("Barrier", narma.ErrRank, "PE %d not in [0,%d)", pe, w.n)
		}
		if seen[pe] {
			return w.opErr("Barrier", narma.ErrInvalid, "PE %d twice in %v", pe, pes)
		}
		seen[pe] = true
	}
	if !seen[w.me] {
		return w.opErr("Barrier", narma.ErrInvalid, "PE set %v does not contain this PE", pes)
	}
	if err := w.Quiet(ctx); err != nil {
		return err
	}
	// The root is the lowest PE, whatever the order of pes: between two
	// PEs, messages from the lower to the higher are then always releases
	// and messages the other way arrivals, whichever sets they share.
	root := slices.Min(pes)
	if w.me != root {
		if err := w.priv.Send(ctx, nil, root, barrierTag); err != nil {
			return err
		}
		_, err := w.priv.Recv(ctx, nil, root, barrierTag)
		return err
	}
	for _, pe := range pes {
		if pe != root {
			if _, err := w.priv.Recv(ctx, nil, pe, barrierTag); err != nil {
				return err
			}
		}
	}
	for _, pe := range pes {
		if pe != root {
			if err := w.priv.Send(ctx, nil, pe, barrierTag); err != nil {
				return err
			}
		}
	}
	return nil
}
