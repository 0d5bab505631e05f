package coarray

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/narma-rma/narma"
)

// TestLockExclusion: images increment a counter on image 1 with a plain
// Get and Put while holding the lock on image 1, and one on image 0 in a
// critical construct; no increment is lost.
func TestLockExclusion(t *testing.T) {
	const n, rounds = 3, 20
	runImages(t, n, func(ctx context.Context, im *Images) error {
		l, err := NewLock(ctx, im)
		if err != nil {
			return err
		}
		crit, err := NewCritical(ctx, im)
		if err != nil {
			return err
		}
		counter, err := New[int64](ctx, im, 2)
		if err != nil {
			return err
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		v := make([]int64, 1)
		for range rounds {
			if err := l.Lock(ctx, 1); err != nil {
				return err
			}
			if err := counter.Get(1, 0, v); err != nil {
				return err
			}
			v[0]++
			if err := counter.Put(1, 0, v); err != nil {
				return err
			}
			if err := l.Unlock(ctx, 1); err != nil {
				return err
			}
			if err := crit.Do(ctx, func() error {
				if err := counter.Get(0, 1, v); err != nil {
					return err
				}
				v[0] += 2
				return counter.Put(0, 1, v)
			}); err != nil {
				return err
			}
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		a, b := make([]int64, 1), make([]int64, 1)
		if err := counter.Get(1, 0, a); err != nil {
			return err
		}
		if err := counter.Get(0, 1, b); err != nil {
			return err
		}
		if a[0] != n*rounds || b[0] != 2*n*rounds {
			return fmt.Errorf("counters %d and %d, want %d and %d", a[0], b[0], n*rounds, 2*n*rounds)
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		if err := crit.Free(ctx); err != nil {
			return err
		}
		if err := counter.Free(ctx); err != nil {
			return err
		}
		return l.Free(ctx)
	})
}

// TestLockStatus: TryLock of a lock another image holds fails, and
// succeeds once it is free; taking a lock held, releasing one that is
// free or that another image holds, and a lock of an image outside the
// job are errors that change nothing; a critical construct returns its
// function's error and stays usable.
func TestLockStatus(t *testing.T) {
	runImages(t, 2, func(ctx context.Context, im *Images) error {
		l, err := NewLock(ctx, im)
		if err != nil {
			return err
		}
		me := im.ThisImage()
		var errs []error
		check := func(what string, err, target error) {
			if !errors.Is(err, target) {
				errs = append(errs, fmt.Errorf("%s: %v, want %v", what, err, target))
			}
		}
		if me == 0 {
			if err := l.Lock(ctx, 0); err != nil {
				return err
			}
			check("Lock of a lock this image holds", l.Lock(ctx, 0), narma.ErrInvalid)
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		if me == 1 {
			if ok, err := l.TryLock(ctx, 0); ok || err != nil {
				errs = append(errs, fmt.Errorf("TryLock of a lock image 0 holds: %v, %v", ok, err))
			}
			check("Unlock of a lock image 0 holds", l.Unlock(ctx, 0), narma.ErrInvalid)
			check("Unlock of a free lock", l.Unlock(ctx, 1), narma.ErrInvalid)
			check("Lock of image 2", l.Lock(ctx, 2), narma.ErrRank)
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		if me == 0 {
			if err := l.Unlock(ctx, 0); err != nil {
				return err
			}
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		if me == 1 {
			if ok, err := l.TryLock(ctx, 0); !ok || err != nil {
				errs = append(errs, fmt.Errorf("TryLock of a free lock: %v, %v", ok, err))
			} else if err := l.Unlock(ctx, 0); err != nil {
				return err
			}
		}
		crit, err := NewCritical(ctx, im)
		if err != nil {
			return err
		}
		mine := errors.New("mine")
		check("Critical.Do's function error", crit.Do(ctx, func() error { return mine }), mine)
		if err := crit.Do(ctx, func() error { return nil }); err != nil {
			errs = append(errs, fmt.Errorf("Critical.Do after an error: %v", err))
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		if err := crit.Free(ctx); err != nil {
			return err
		}
		if err := l.Free(ctx); err != nil {
			return err
		}
		return errors.Join(errs...)
	})
}

// TestImageStatus: with every image alive, IMAGE_STATUS says running and
// FAILED_IMAGES is empty; an image outside the job is an error. (A
// failed rank shows in Comm.Failed, which both read: the root package's
// TestProcessPeerDeath and the engine's failure tests check that.)
func TestImageStatus(t *testing.T) {
	runImages(t, 3, func(ctx context.Context, im *Images) error {
		for image := range 3 {
			st, err := im.ImageStatus(image)
			if err != nil || st != ImageRunning {
				return fmt.Errorf("ImageStatus(%d): %v, %v", image, st, err)
			}
		}
		if f := im.FailedImages(); len(f) != 0 {
			return fmt.Errorf("FailedImages: %v", f)
		}
		if _, err := im.ImageStatus(3); !errors.Is(err, narma.ErrRank) {
			return fmt.Errorf("ImageStatus(3): %v, want ErrRank", err)
		}
		if ImageFailed.String() != "failed" || ImageRunning.String() != "running" {
			return fmt.Errorf("ImageState names %q, %q", ImageFailed, ImageRunning)
		}
		return nil
	})
}
