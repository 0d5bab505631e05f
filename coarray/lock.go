package coarray

import (
	"context"
	"runtime"
	"time"

	"github.com/narma-rma/narma"
)

// Lock is a coarray of lock variables, Fortran's type(lock_type) ::
// l[*]: one lock on every image, taken and released from any image by
// LOCK(l[p]) and UNLOCK(l[p]). Each lock is an int64 word in the image's
// symmetric heap that holds 0 (unlocked) or the holder's image number
// plus one, changed by compare-and-swap; a waiting image polls, yielding
// and then sleeping up to 50µs between tries. Taking a lock makes what
// its previous holder did before releasing it visible (both run
// SyncMemory), as Fortran orders the segments of successive holders. Not
// fair; an image that holds a lock and takes it again gets an error.
type Lock struct {
	a *Array[int64]
}

// NewLock makes a lock on every image, collectively; every lock starts
// unlocked.
func NewLock(ctx context.Context, im *Images) (*Lock, error) {
	a, err := New[int64](ctx, im, 1)
	if err != nil {
		return nil, err
	}
	return &Lock{a: a}, nil
}

// Lock waits until this image holds the lock on image: LOCK(l[image+1]).
func (l *Lock) Lock(ctx context.Context, image int) error {
	const op = "coarray.Lock.Lock"
	for try := 0; ; try++ {
		ok, err := l.try(op, image)
		if err != nil {
			return err
		}
		if ok {
			return l.acquired(ctx, op, image)
		}
		if err := ctx.Err(); err != nil {
			return l.a.obj.im.errorf(op, err, "waiting for the lock on image %d", image)
		}
		if try < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(min(time.Microsecond<<min(try-64, 6), 50*time.Microsecond))
		}
	}
}

// TryLock takes the lock on image if it is free and reports whether it
// did: LOCK(l[image+1], ACQUIRED_LOCK=ok).
func (l *Lock) TryLock(ctx context.Context, image int) (bool, error) {
	const op = "coarray.Lock.TryLock"
	ok, err := l.try(op, image)
	if err != nil || !ok {
		return false, err
	}
	if err := l.acquired(ctx, op, image); err != nil {
		return false, err
	}
	return true, nil
}

// acquired completes taking the lock on image: this image's view of
// memory catches up (SyncMemory, which ctx's end does not interrupt: the
// lock is taken). If that fails, the lock is given back, so that an
// error never leaves it held.
func (l *Lock) acquired(ctx context.Context, op string, image int) error {
	im := l.a.obj.im
	err := im.SyncMemory(context.WithoutCancel(ctx))
	if err == nil {
		return nil
	}
	me := int64(im.ThisImage() + 1)
	_, _ = AtomicCAS(l.a, image, 0, me, 0)
	return im.errorf(op, err, "taking the lock on image %d", image)
}

func (l *Lock) try(op string, image int) (bool, error) {
	if l == nil || l.a == nil {
		return false, nilError(op, "Lock")
	}
	if err := l.a.check(op, image, 0, 1); err != nil {
		return false, err
	}
	im := l.a.obj.im
	me := int64(im.ThisImage() + 1)
	old, err := AtomicCAS(l.a, image, 0, 0, me)
	if err != nil {
		return false, err
	}
	if old == me {
		return false, im.errorf(op, narma.ErrInvalid, "image %d holds the lock on image %d already (Fortran's STAT_LOCKED)", me-1, image)
	}
	return old == 0, nil
}

// Unlock completes this image's puts (SyncMemory) and releases the lock
// on image, which it must hold: UNLOCK(l[image+1]). Releasing a lock
// that is free or that another image holds is an error (Fortran's
// STAT_UNLOCKED and STAT_LOCKED_OTHER_IMAGE) and changes nothing.
func (l *Lock) Unlock(ctx context.Context, image int) error {
	const op = "coarray.Lock.Unlock"
	if l == nil || l.a == nil {
		return nilError(op, "Lock")
	}
	if err := l.a.check(op, image, 0, 1); err != nil {
		return err
	}
	im := l.a.obj.im
	if err := im.SyncMemory(ctx); err != nil {
		return err
	}
	me := int64(im.ThisImage() + 1)
	old, err := AtomicCAS(l.a, image, 0, me, 0)
	if err != nil {
		return err
	}
	switch {
	case old == 0:
		return im.errorf(op, narma.ErrInvalid, "the lock on image %d is not locked (STAT_UNLOCKED)", image)
	case old != me:
		return im.errorf(op, narma.ErrInvalid, "image %d holds the lock on image %d (STAT_LOCKED_OTHER_IMAGE)", old-1, image)
	}
	return nil
}

// Free releases the locks on every image, collectively.
func (l *Lock) Free(ctx context.Context) error {
	if l == nil || l.a == nil {
		return nilError("coarray.Lock.Free", "Lock")
	}
	return l.a.Free(ctx)
}

// Critical is a CRITICAL construct: Do runs its function on one image at
// a time, each run's segment ordered after the one before (a lock on
// image 0 taken and released around it).
type Critical struct {
	l *Lock
}

// NewCritical makes a critical construct, collectively.
func NewCritical(ctx context.Context, im *Images) (*Critical, error) {
	l, err := NewLock(ctx, im)
	if err != nil {
		return nil, err
	}
	return &Critical{l: l}, nil
}

// Do runs f inside the construct: CRITICAL; f(); END CRITICAL. f's error
// is returned once the construct is left.
func (c *Critical) Do(ctx context.Context, f func() error) error {
	if c == nil || f == nil {
		return nilError("coarray.Critical.Do", "Critical or function")
	}
	if err := c.l.Lock(ctx, 0); err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			_ = c.l.Unlock(ctx, 0) // the others may go on
			panic(p)
		}
	}()
	ferr := f()
	if err := c.l.Unlock(ctx, 0); err != nil {
		return err
	}
	return ferr
}

// Free releases the construct, collectively.
func (c *Critical) Free(ctx context.Context) error {
	if c == nil {
		return nilError("coarray.Critical.Free", "Critical")
	}
	return c.l.Free(ctx)
}
