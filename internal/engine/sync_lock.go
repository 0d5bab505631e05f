package engine

import (
	"context"
	"runtime"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// Lock kinds, as stored in Win.lockKind.
const (
	lockShared    uint8 = 1
	lockExclusive uint8 = 2
	lockNoCheck   uint8 = 4 // flag: the user asserted no conflicting lock exists
)

// Assert is a bit set of MPI assertions.
type Assert uint8

// Assertions accepted by the synchronization calls. Each is a promise by
// the caller; narma uses the ones that let it skip work and checks those it
// can check cheaply.
const (
	NoCheck   Assert = 1 << iota // Post/Start/Lock: the matching call is known to have happened; no lock conflicts
	NoStore                      // Fence/Post: no local stores to the window in the preceding epoch
	NoPut                        // Fence/Post: no puts or accumulates will target this window until the next sync
	NoPrecede                    // Fence: no RMA operations precede this fence
	NoSucceed                    // Fence: no RMA operations follow this fence
)

// Assertions each call accepts, as in MPI.
const (
	fenceAsserts = NoStore | NoPut | NoPrecede | NoSucceed
	postAsserts  = NoCheck | NoStore | NoPut
	startAsserts = NoCheck
	lockAsserts  = NoCheck
)

// checkAssert rejects assertion bits the call does not accept.
func (w *Win) checkAssert(name string, a, valid Assert) error {
	if a&^valid != 0 {
		return opErr(name, w.c.rank, ErrInvalidArgs, "assert %#x not accepted (valid: %#x)", uint8(a), uint8(valid))
	}
	return nil
}

// Lock word operands, kept in the window so that passing them to the
// transport allocates nothing.
type lockScratch struct {
	val  [1]uint64
	cmp  [1]uint64
	res  [1]uint64
	comp transport.Completion
}

// closeIdleFence lets a lock or PSCW epoch begin after a fence that opened
// an epoch nobody used, as MPI implementations commonly allow; an epoch
// with operations must be closed by a fence first.
func (w *Win) closeIdleFence(name string) error {
	if w.fenceOpen {
		if w.fenceUsed {
			return opErr(name, w.c.rank, ErrEpoch, "a fence epoch with operations is open")
		}
		w.fenceOpen = false
	}
	return nil
}

// Lock starts a passive-target epoch on target: shared (kind false) or
// exclusive. With the immediate strategy it returns once the lock is held;
// with the deferred strategy it only records the epoch, and the lock is
// taken by the first call that must complete an operation (Flush, Unlock,
// a request-based operation). NoCheck skips the lock word altogether.
func (w *Win) Lock(ctx context.Context, exclusive bool, target int, assert Assert) error {
	if err := w.check("Lock"); err != nil {
		return err
	}
	if err := w.c.checkRank("Lock", target); err != nil {
		return err
	}
	if err := w.checkAssert("Lock", assert, lockAsserts); err != nil {
		return err
	}
	if w.lockAll || w.targets[target].lockKind != 0 {
		return opErr("Lock", w.c.rank, ErrLock, "rank %d is already locked", target)
	}
	if w.accessOn {
		return opErr("Lock", w.c.rank, ErrEpoch, "a PSCW access epoch is open")
	}
	if err := w.closeIdleFence("Lock"); err != nil {
		return err
	}
	kind := lockShared
	if exclusive {
		kind = lockExclusive
	}
	if assert&NoCheck != 0 {
		kind |= lockNoCheck
	}
	if kind&lockNoCheck == 0 && w.strategy == Immediate {
		if err := w.acquire(ctx, "Lock", target, kind); err != nil {
			return err
		}
		w.targets[target].lockHeld = true
	}
	if kind&lockNoCheck != 0 {
		w.targets[target].lockHeld = true
	}
	w.targets[target].lockKind = kind
	w.nlocks++
	return nil
}

// LockAll starts a shared passive-target epoch on every rank.
func (w *Win) LockAll(ctx context.Context, assert Assert) error {
	if err := w.check("LockAll"); err != nil {
		return err
	}
	if err := w.checkAssert("LockAll", assert, lockAsserts); err != nil {
		return err
	}
	if w.lockAll || w.nlocks > 0 {
		return opErr("LockAll", w.c.rank, ErrLock, "a lock epoch is already open")
	}
	if w.accessOn {
		return opErr("LockAll", w.c.rank, ErrEpoch, "a PSCW access epoch is open")
	}
	if err := w.closeIdleFence("LockAll"); err != nil {
		return err
	}
	w.lockAll = true
	w.lockAllNoCheck = assert&NoCheck != 0
	for t := range w.targets {
		if w.lockAllNoCheck {
			w.targets[t].lockHeld = true
		} else if w.strategy == Immediate {
			if err := w.acquire(ctx, "LockAll", t, lockShared); err != nil {
				for u := 0; u < t; u++ {
					w.release(u, lockShared)
					w.targets[u].lockHeld = false
				}
				w.lockAll = false
				return err
			}
			w.targets[t].lockHeld = true
		}
	}
	return nil
}

// settle brings target t of a lock epoch to the point where operations go
// straight to the target: the lock is held and the queue is empty.
func (w *Win) settle(name string, ctx context.Context, t int) error {
	if w.targets[t].lockHeld {
		return nil
	}
	kind := w.targets[t].lockKind
	if w.lockAll {
		kind = lockShared
	}
	if err := w.acquire(ctx, name, t, kind); err != nil {
		return err
	}
	w.targets[t].lockHeld = true
	return w.replay(name, t, true)
}

// Unlock completes every operation to target and ends its lock epoch.
// With the deferred strategy and nothing queued, no lock traffic happens at
// all; with operations queued, the lock is taken, the operations run (gets
// last) and the lock is released.
//
// If the lock cannot be taken before ctx ends, Unlock returns the context
// error and changes nothing: the epoch stays open with its operations
// queued, and Unlock may be called again. If the lock cannot be taken for
// any other reason (the target failed or closed), the queued operations
// are dropped and the epoch ends with an error wrapping ErrPeer.
func (w *Win) Unlock(ctx context.Context, target int) error {
	if err := w.check("Unlock"); err != nil {
		return err
	}
	if err := w.c.checkRank("Unlock", target); err != nil {
		return err
	}
	kind := w.targets[target].lockKind
	if kind == 0 || w.lockAll {
		return opErr("Unlock", w.c.rank, ErrLock, "rank %d is not locked by Lock", target)
	}
	ended, err := w.finishTarget(ctx, "Unlock", target, kind)
	if ended {
		w.targets[target].lockKind = 0
		w.nlocks--
	}
	return err
}

// UnlockAll ends a LockAll epoch, completing every operation. On error it
// behaves as Unlock, per target: targets it could not finish stay in the
// epoch and a new UnlockAll retries them.
func (w *Win) UnlockAll(ctx context.Context) error {
	if err := w.check("UnlockAll"); err != nil {
		return err
	}
	if !w.lockAll {
		return opErr("UnlockAll", w.c.rank, ErrLock, "no LockAll epoch is open")
	}
	var first error
	kind := lockShared
	if w.lockAllNoCheck {
		kind |= lockNoCheck
	}
	all := true
	for t := range w.targets {
		ended, err := w.finishTarget(ctx, "UnlockAll", t, kind)
		if err != nil && first == nil {
			first = err
		}
		all = all && ended
	}
	if all {
		w.lockAll = false
	}
	return first
}

// finishTarget completes the operations to t and releases its lock. ended
// reports whether t's epoch is over; it is not when the lock could not be
// taken for a reason that may pass (the context ended).
func (w *Win) finishTarget(ctx context.Context, name string, t int, kind uint8) (ended bool, err error) {
	if !w.targets[t].lockHeld && len(w.queue[t]) > 0 {
		if err = w.settle(name, ctx, t); err != nil && !w.targets[t].lockHeld {
			if ctx.Err() != nil && !w.c.peerFailed(t) {
				return false, err // may pass: the epoch stays open
			}
			w.discard(t, err)
			return true, err
		}
	}
	if w.targets[t].lockHeld {
		if !w.synchronous {
			if ferr := w.c.ep.Flush(ctx, w.c.jobRank(t)); ferr != nil && err == nil {
				err = w.c.transportFailure(name, ctx, ferr, "flush rank %d", t)
			}
		}
		if kind&lockNoCheck == 0 {
			w.release(t, kind)
		}
	}
	w.targets[t].lockHeld = false
	return true, err
}

// discard drops the operations queued for t, failing their requests with
// err.
func (w *Win) discard(t int, err error) {
	q := w.queue[t]
	for i := range q {
		if q[i].comp != nil {
			q[i].comp.Done(err)
		}
	}
	clear(q)
	w.queue[t] = q[:0]
	w.queued -= len(q)
}

// Flush completes, at origin and target, every operation issued to target
// in the current lock epoch. The lock stays held.
func (w *Win) Flush(ctx context.Context, target int) error {
	return w.flushOne(ctx, "Flush", target, false)
}

// FlushLocal completes at the origin every operation issued to target:
// their origin buffers may be reused and the results of gets and fetching
// operations are in place, while the target may not have applied a put
// yet (transport.LocalFlusher). The lock stays held.
func (w *Win) FlushLocal(ctx context.Context, target int) error {
	return w.flushOne(ctx, "FlushLocal", target, true)
}

func (w *Win) flushOne(ctx context.Context, name string, target int, local bool) error {
	if err := w.check(name); err != nil {
		return err
	}
	if target == ProcNull {
		return nil // nothing was issued to it
	}
	if err := w.c.checkRank(name, target); err != nil {
		return err
	}
	if w.targets[target].lockKind == 0 && !w.lockAll {
		return opErr(name, w.c.rank, ErrEpoch, "rank %d is not locked", target)
	}
	return w.flush(ctx, name, target, local)
}

// flush completes the operations issued to t: at the origin only if
// local, else at both ends.
func (w *Win) flush(ctx context.Context, name string, t int, local bool) error {
	if !w.targets[t].lockHeld {
		if len(w.queue[t]) == 0 {
			return nil
		}
		if err := w.settle(name, ctx, t); err != nil {
			return err
		}
	}
	if w.synchronous {
		return nil
	}
	var err error
	if local {
		err = transport.FlushLocal(ctx, w.c.ep, w.c.jobRank(t))
	} else {
		err = w.c.ep.Flush(ctx, w.c.jobRank(t))
	}
	if err != nil {
		return w.c.transportFailure(name, ctx, err, "flush rank %d", t)
	}
	return nil
}

// FlushAll flushes every locked target.
func (w *Win) FlushAll(ctx context.Context) error { return w.flushAll(ctx, "FlushAll", false) }

// FlushLocalAll is FlushLocal for every locked target.
func (w *Win) FlushLocalAll(ctx context.Context) error { return w.flushAll(ctx, "FlushLocalAll", true) }

func (w *Win) flushAll(ctx context.Context, name string, local bool) error {
	if err := w.check(name); err != nil {
		return err
	}
	if w.nlocks == 0 && !w.lockAll {
		return opErr(name, w.c.rank, ErrEpoch, "no lock epoch is open")
	}
	var first error
	for t := range w.targets {
		if w.lockAll || w.targets[t].lockKind != 0 {
			if err := w.flush(ctx, name, t, local); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// Sync synchronizes the public and private copies of the local window.
// narma's windows are unified (there is one copy), so Sync is a memory
// barrier: an atomic read of the window's control word.
func (w *Win) Sync() error {
	if err := w.check("Sync"); err != nil {
		return err
	}
	mem.AtomicLoad64(w.ctl)
	return nil
}

// acquire takes the lock word at t: exclusive by compare-and-swap from 0,
// shared by fetch-and-add of 1, undone if an exclusive holder is present.
// Waiting backs off from yielding to short sleeps.
func (w *Win) acquire(ctx context.Context, name string, t int, kind uint8) error {
	var since time.Time
	for try := 0; ; try++ {
		ok, err := w.tryAcquire(ctx, name, t, kind)
		if ok || err != nil {
			return err
		}
		if err := w.heldByFailed(name, t, &since); err != nil {
			return err
		}
		if err := w.c.backoff(ctx, name, t, try); err != nil {
			return err
		}
	}
}

// heldByFailed returns ErrPeer if the lock word at t, as the last attempt
// saw it (w.lockSeen), is held by a rank that failed: exclusively by a
// failed rank, or, once some rank failed, still held by shared holders
// after stuckLockAfter (shared holders are not known by rank). since is
// when the latter condition was first seen.
func (w *Win) heldByFailed(name string, t int, since *time.Time) error {
	if !w.c.anyFailed() {
		return nil
	}
	word := w.lockSeen
	if word&lockExcl != 0 {
		if h := int(word >> lockRankShift & lockRankMask); h < w.c.size && w.c.peerFailed(h) {
			return opErr(name, w.c.rank, ErrPeer, "lock at rank %d held exclusively by rank %d, which failed", t, h)
		}
		return nil
	}
	if since.IsZero() {
		*since = time.Now()
	} else if time.Since(*since) > stuckLockAfter {
		return opErr(name, w.c.rank, ErrPeer, "lock at rank %d still held by shared holders %v after a rank failed", t, stuckLockAfter)
	}
	return nil
}

// tryAcquire makes one attempt to take the lock word at t; a failed
// attempt leaves the word it saw in w.lockSeen.
func (w *Win) tryAcquire(ctx context.Context, name string, t int, kind uint8) (bool, error) {
	excl := exclWord(w.c.rank)
	if w.lockWords != nil {
		// The transport reaches the word with one atomic instruction.
		// Same protocol as below.
		word := w.lockWords[t]
		if kind&lockExclusive != 0 {
			w.lockSeen = word.CompareSwap(0, excl)
			return w.lockSeen == 0, nil
		}
		seen := word.Add(1)
		if seen&lockExcl == 0 {
			return true, nil
		}
		word.Add(^uint64(0))
		w.lockSeen = seen
		return false, nil
	}
	reg := w.ctlRegions[t]
	s := &w.scratch
	comp := w.lockComp()
	var err error
	if kind&lockExclusive != 0 {
		s.cmp[0], s.val[0] = 0, excl
		err = reg.CompareSwap(0, mem.Uint64, mem.Bytes(s.cmp[:]), mem.Bytes(s.val[:]), mem.Bytes(s.res[:]), transport.Notice{}, comp)
	} else {
		s.val[0] = 1
		err = reg.Accumulate(0, mem.Sum, mem.Uint64, mem.Bytes(s.val[:]), mem.Bytes(s.res[:]), transport.Notice{}, comp)
	}
	if err == nil && comp != nil && !comp.Complete() {
		// Wait for this attempt even if ctx ends: abandoning it would
		// leave an update of the lock word (and of s.res) in flight. A
		// transport completes every operation, with ErrPeer if the peer
		// fails, so this wait is bounded; the caller checks ctx between
		// attempts.
		err = comp.Wait(bg)
	}
	if err != nil {
		return false, opErr(name, w.c.rank, ErrPeer, "lock at rank %d: %v", t, err)
	}
	w.lockSeen = s.res[0]
	if kind&lockExclusive != 0 {
		return s.res[0] == 0, nil
	}
	if s.res[0]&lockExcl == 0 {
		return true, nil
	}
	w.addLock(t, ^uint64(0)) // undo the attempt
	return false, nil
}

// release gives the lock word at t back.
func (w *Win) release(t int, kind uint8) {
	if kind&lockExclusive != 0 {
		w.addLock(t, -exclWord(w.c.rank))
	} else {
		w.addLock(t, ^uint64(0))
	}
}

func (w *Win) addLock(t int, delta uint64) {
	if w.lockWords != nil {
		w.lockWords[t].Add(delta)
		return
	}
	s := &w.scratch
	s.val[0] = delta
	comp := &s.comp
	if w.synchronous {
		comp = nil // complete on return: nothing to track
	}
	w.ctlRegions[t].Accumulate(0, mem.Sum, mem.Uint64, mem.Bytes(s.val[:]), nil, transport.Notice{}, comp)
}

// lockComp returns the completion of an attempt on a lock word: nil on a
// Synchronous transport, where the attempt is complete on return, else
// the scratch completion, once earlier releases and undos in flight on it
// have finished and their outcome is forgotten, so that the attempt's
// error is its own.
func (w *Win) lockComp() *transport.Completion {
	if w.synchronous {
		return nil
	}
	s := &w.scratch
	if !s.comp.Complete() {
		s.comp.Wait(bg)
	}
	s.comp.Reset()
	return &s.comp
}

// backoff waits before retry number try of a contended operation on rank
// t: it yields for the first tries, then sleeps for growing intervals up to
// 100µs, and gives up when ctx is done, the job aborts or t failed.
func (c *Comm) backoff(ctx context.Context, name string, t, try int) error {
	if c.peerFailed(t) {
		return opErr(name, c.rank, ErrPeer, "rank %d failed", t)
	}
	select {
	case <-ctx.Done():
		return c.ctxErr(name, c.stopErr(ctx))
	case <-c.abort:
		return c.ctxErr(name, c.abortError())
	default:
	}
	if try < 64 {
		runtime.Gosched()
		return nil
	}
	d := time.Microsecond << min(try-64, 7)
	t0 := time.NewTimer(d)
	defer t0.Stop()
	select {
	case <-t0.C:
	case <-ctx.Done():
		return c.ctxErr(name, c.stopErr(ctx))
	case <-c.abort:
		return c.ctxErr(name, c.abortError())
	}
	return nil
}
