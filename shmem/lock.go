package shmem

import (
	"context"

	"github.com/narma-rma/narma"
)

// Distributed locks: OpenSHMEM's shmem_set_lock, shmem_test_lock and
// shmem_clear_lock. A lock is one symmetric int64 that every PE allocated
// (Alloc, zero: free); its copy on PE 0 is the lock word, which holds 0
// or the holder's PE number plus one, changed by compare-and-swap. A PE
// that waits polls with the backoff of WaitUntil. The lock is not fair
// and not reentrant; ClearLock completes the holder's puts first
// (Quiet), so that the next holder sees them once it has the lock.

// lockPE is the PE whose copy of a lock is the lock word.
const lockPE = 0

// SetLock waits until it holds lock: shmem_set_lock.
func SetLock(ctx context.Context, w *World, lock Sym[int64]) error {
	const op = "SetLock"
	for try := 0; ; try++ {
		ok, err := tryLock(ctx, w, op, lock)
		if err != nil || ok {
			return err
		}
		if err := w.backoff(ctx, op, try); err != nil {
			return err
		}
	}
}

// TestLock takes lock if it is free and reports whether it did:
// shmem_test_lock (which returns 0 when it took the lock).
func TestLock(ctx context.Context, w *World, lock Sym[int64]) (bool, error) {
	return tryLock(ctx, w, "TestLock", lock)
}

func tryLock(ctx context.Context, w *World, op string, lock Sym[int64]) (bool, error) {
	if err := lockArgs(w, op, lock); err != nil {
		return false, err
	}
	me := int64(w.me + 1)
	// Not cut short by ctx: the swap may take the lock, and must then
	// be known to have.
	old, err := AtomicCompareSwap(context.WithoutCancel(ctx), w, lock, 0, me, lockPE)
	if err != nil {
		return false, err
	}
	if old == me {
		return false, w.opErr(op, narma.ErrInvalid, "PE %d holds the lock already (locks are not reentrant)", w.me)
	}
	return old == 0, nil
}

// ClearLock completes this PE's puts (Quiet) and frees lock, which it
// must hold: shmem_clear_lock. A PE that does not hold it gets an error
// and the lock is unchanged.
func ClearLock(ctx context.Context, w *World, lock Sym[int64]) error {
	const op = "ClearLock"
	if err := lockArgs(w, op, lock); err != nil {
		return err
	}
	if err := w.Quiet(ctx); err != nil {
		return err
	}
	me := int64(w.me + 1)
	old, err := AtomicCompareSwap(ctx, w, lock, me, 0, lockPE)
	if err != nil {
		return err
	}
	if old == 0 {
		return w.opErr(op, narma.ErrInvalid, "PE %d does not hold the lock: it is free", w.me)
	}
	if old != me {
		return w.opErr(op, narma.ErrInvalid, "PE %d does not hold the lock: PE %d does", w.me, old-1)
	}
	return nil
}

func lockArgs(w *World, op string, lock Sym[int64]) error {
	if err := w.ok(op); err != nil {
		return err
	}
	return lock.elem(w, op)
}
