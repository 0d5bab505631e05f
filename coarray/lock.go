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
// symmetric heap that holds 0 (unlocked) or the holder's image number in
// the initial team plus one, changed by compare-and-swap; a waiting image
// polls, yielding and then sleeping up to 50µs between tries. Taking a
// lock makes what its previous holder did before releasing it visible
// (both run SyncMemory), as Fortran orders the segments of successive
// holders. Not fair; an image that holds a lock and takes it again gets
// an error. Inside ChangeTeam, images are numbered in the team; a lock
// taken in one team is held in every other.
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

// Lock waits until this image holds the lock on image (a number in the
// current team): LOCK(l[image+1]).
func (l *Lock) Lock(ctx context.Context, image int) error {
	const op = "coarray.Lock.Lock"
	target, err := l.target(op, image)
	if err != nil {
		return err
	}
	return l.lock(ctx, op, target)
}

// lock waits until this image holds the lock on initial image target.
func (l *Lock) lock(ctx context.Context, op string, target int) error {
	for try := 0; ; try++ {
		ok, err := l.try(op, target)
		if err != nil {
			return err
		}
		if ok {
			return l.acquired(ctx, op, target)
		}
		if err := ctx.Err(); err != nil {
			im := l.a.obj.im
			return im.errorf(op, err, "waiting for the lock on %s", im.describe(target))
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
	target, err := l.target(op, image)
	if err != nil {
		return false, err
	}
	ok, err := l.try(op, target)
	if err != nil || !ok {
		return false, err
	}
	if err := l.acquired(ctx, op, target); err != nil {
		return false, err
	}
	return true, nil
}

// acquired completes taking the lock on initial image target: this
// image's view of memory catches up (SyncMemory, which ctx's end does not
// interrupt: the lock is taken). If that fails, the lock is given back,
// so that an error never leaves it held.
func (l *Lock) acquired(ctx context.Context, op string, target int) error {
	im := l.a.obj.im
	err := im.SyncMemory(context.WithoutCancel(ctx))
	if err == nil {
		return nil
	}
	_, _ = l.a.cas(target, 0, l.holder(), 0)
	return im.errorf(op, err, "taking the lock on %s", im.describe(target))
}

// target checks l and image, a number in the current team, and returns
// the initial image it is.
func (l *Lock) target(op string, image int) (int, error) {
	if l == nil || l.a == nil {
		return 0, nilError(op, "Lock")
	}
	return l.a.check(op, image, 0, 1)
}

// holder is the value of a lock word that this image holds: its number
// in the initial team plus one, whatever the current team, so that a lock
// taken in one team is known as this image's in another.
func (l *Lock) holder() int64 { return int64(l.a.obj.im.c.Rank() + 1) }

// try makes one attempt at the lock on initial image target.
func (l *Lock) try(op string, target int) (bool, error) {
	if err := l.a.obj.check(op); err != nil {
		return false, err
	}
	im := l.a.obj.im
	me := l.holder()
	old, err := l.a.cas(target, 0, 0, me)
	if err != nil {
		return false, err
	}
	if old == me {
		return false, im.errorf(op, narma.ErrInvalid, "image %d holds the lock on %s already (Fortran's STAT_LOCKED)", im.ThisImage(), im.describe(target))
	}
	return old == 0, nil
}

// Unlock completes this image's puts (SyncMemory) and releases the lock
// on image, which it must hold: UNLOCK(l[image+1]). Releasing a lock
// that is free or that another image holds is an error (Fortran's
// STAT_UNLOCKED and STAT_LOCKED_OTHER_IMAGE) and changes nothing.
func (l *Lock) Unlock(ctx context.Context, image int) error {
	const op = "coarray.Lock.Unlock"
	target, err := l.target(op, image)
	if err != nil {
		return err
	}
	return l.unlock(ctx, op, target)
}

// unlock releases the lock on initial image target.
func (l *Lock) unlock(ctx context.Context, op string, target int) error {
	if err := l.a.obj.check(op); err != nil {
		return err
	}
	im := l.a.obj.im
	if err := im.SyncMemory(ctx); err != nil {
		return err
	}
	me := l.holder()
	old, err := l.a.cas(target, 0, me, 0)
	if err != nil {
		return err
	}
	switch {
	case old == 0:
		return im.errorf(op, narma.ErrInvalid, "the lock on %s is not locked (STAT_UNLOCKED)", im.describe(target))
	case old != me:
		return im.errorf(op, narma.ErrInvalid, "%s holds the lock on %s (STAT_LOCKED_OTHER_IMAGE)", im.describe(int(old-1)), im.describe(target))
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
// image 0 of the initial team taken and released around it). Inside
// ChangeTeam it still excludes every other image of the job, not only
// those of the team.
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
	const op = "coarray.Critical.Do"
	if c == nil || c.l == nil || c.l.a == nil || f == nil {
		return nilError(op, "Critical or function")
	}
	if err := c.l.lock(ctx, op, 0); err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			_ = c.l.unlock(ctx, op, 0) // the others may go on
			panic(p)
		}
	}()
	ferr := f()
	if err := c.l.unlock(ctx, op, 0); err != nil {
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
