package shmem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/narma-rma/narma"
)

// TestLockMutualExclusion: PEs increment a counter on PE 0 with a plain
// Get and Put inside SetLock and ClearLock; no increment is lost, which
// a missing exclusion or a ClearLock that did not complete the Put would
// cause.
func TestLockMutualExclusion(t *testing.T) {
	const n, rounds = 4, 25
	run(t, n, func(ctx context.Context, w *World) error {
		lock, err := Alloc[int64](ctx, w, 1)
		if err != nil {
			return err
		}
		counter, err := Alloc[int64](ctx, w, 1)
		if err != nil {
			return err
		}
		if err := w.BarrierAll(ctx); err != nil {
			return err
		}
		v := make([]int64, 1)
		for range rounds {
			if err := SetLock(ctx, w, lock); err != nil {
				return err
			}
			if err := Get(ctx, w, v, counter, 0); err != nil {
				return err
			}
			v[0]++
			if err := PutNBI(w, counter, v, 0); err != nil {
				return err
			}
			if err := ClearLock(ctx, w, lock); err != nil {
				return err
			}
		}
		if err := w.BarrierAll(ctx); err != nil {
			return err
		}
		if err := Get(ctx, w, v, counter, 0); err != nil {
			return err
		}
		if v[0] != n*rounds {
			return fmt.Errorf("counter %d after %d locked increments", v[0], n*rounds)
		}
		return nil
	})
}

// TestLockErrors: TestLock fails while another PE holds the lock and
// succeeds once it is free; clearing a lock not held, and taking one
// already held, are refused and change nothing.
func TestLockErrors(t *testing.T) {
	run(t, 2, func(ctx context.Context, w *World) error {
		lock, err := Alloc[int64](ctx, w, 2)
		if err != nil {
			return err
		}
		l := lock.At(0)
		me := w.MyPE()
		if err := w.BarrierAll(ctx); err != nil {
			return err
		}
		var errs []error
		if me == 1 {
			if err := SetLock(ctx, w, l); err != nil {
				return err
			}
			errs = append(errs, wantErr("SetLock of a lock held", SetLock(ctx, w, l), narma.ErrInvalid))
		}
		if err := w.BarrierAll(ctx); err != nil {
			return err
		}
		if me == 0 {
			got, err := TestLock(ctx, w, l)
			if err != nil || got {
				errs = append(errs, fmt.Errorf("TestLock of a lock PE 1 holds: %v, %v", got, err))
			}
			errs = append(errs, wantErr("ClearLock by a PE that does not hold it", ClearLock(ctx, w, l), narma.ErrInvalid))
		}
		if err := w.BarrierAll(ctx); err != nil {
			return err
		}
		if me == 1 {
			if err := ClearLock(ctx, w, l); err != nil {
				return err
			}
			errs = append(errs, wantErr("ClearLock of a free lock", ClearLock(ctx, w, l), narma.ErrInvalid))
		}
		if err := w.BarrierAll(ctx); err != nil {
			return err
		}
		if me == 0 {
			got, err := TestLock(ctx, w, l)
			if err != nil || !got {
				errs = append(errs, fmt.Errorf("TestLock of a free lock: %v, %v", got, err))
			} else if err := ClearLock(ctx, w, l); err != nil {
				return err
			}
		}
		errs = append(errs, wantErr("SetLock on two elements", SetLock(ctx, w, lock), narma.ErrInvalid))
		return errors.Join(errs...)
	})
}

// TestIPutIGet: strided puts and gets move every sst-th source element
// to every dst-th destination element and leave the others alone; bad
// strides and spans are refused.
func TestIPutIGet(t *testing.T) {
	run(t, 2, func(ctx context.Context, w *World) error {
		a, err := Alloc[int32](ctx, w, 12)
		if err != nil {
			return err
		}
		other := 1 - w.MyPE()
		for i := range a.Local(w) {
			a.Local(w)[i] = -1
		}
		if err := w.BarrierAll(ctx); err != nil {
			return err
		}
		src := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8}
		// src[0], src[2], src[4], src[6] into a[0], a[3], a[6], a[9].
		if err := IPut(ctx, w, a, src, 3, 2, 4, other); err != nil {
			return err
		}
		if err := w.BarrierAll(ctx); err != nil {
			return err
		}
		want := []int32{0, -1, -1, 2, -1, -1, 4, -1, -1, 6, -1, -1}
		if got := a.Local(w); !slices.Equal(got, want) {
			return fmt.Errorf("after IPut: %v, want %v", got, want)
		}
		dst := slices.Repeat([]int32{-7}, 4)
		if err := IGet(ctx, w, dst, a, 2, 6, 2, other); err != nil {
			return err
		}
		if !slices.Equal(dst, []int32{0, -7, 4, -7}) {
			return fmt.Errorf("IGet: %v", dst)
		}
		errs := []error{
			wantErr("IPut with stride 0", IPut(ctx, w, a, src, 0, 1, 2, other), narma.ErrInvalid),
			wantErr("IPut past dest", IPut(ctx, w, a, src, 4, 1, 4, other), narma.ErrBounds),
			wantErr("IPut past src", IPut(ctx, w, a, src, 1, 3, 4, other), narma.ErrBounds),
			wantErr("IGet past dest", IGet(ctx, w, dst, a, 2, 1, 3, other), narma.ErrBounds),
			wantErr("IGet from PE 2", IGet(ctx, w, dst, a, 1, 1, 1, 2), narma.ErrRank),
		}
		return errors.Join(errs...)
	})
}
