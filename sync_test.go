package narma_test

// Misuse of the synchronization calls returns the right sentinel (ErrLock,
// ErrEpoch, ErrGroup, ErrAssert) without changing the state, and every
// blocking call honours its context.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/narma-rma/narma"
)

// TestLockMisuse: Unlock without Lock, a second Lock on the same target,
// LockAll inside Lock and the reverse, UnlockAll without LockAll, Flush
// outside a lock epoch, and synchronization calls of other modes inside a
// lock epoch.
func TestLockMisuse(t *testing.T) {
	const n = 3
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			right, left := (me+1)%n, (me+n-1)%n
			k := newChecks(c)
			w, err := allocPattern(c, 2, st)
			if err != nil {
				return err
			}
			k.is("Unlock without Lock", w.Unlock(ctx, right), narma.ErrLock, "Unlock")
			k.is("UnlockAll without LockAll", w.UnlockAll(ctx), narma.ErrLock, "UnlockAll")
			k.is("Flush without a lock epoch", w.Flush(ctx, right), narma.ErrEpoch, "Flush")
			k.is("FlushAll without a lock epoch", w.FlushAll(ctx), narma.ErrEpoch, "FlushAll")
			k.is("FlushLocal without a lock epoch", w.FlushLocal(ctx, right), narma.ErrEpoch, "")

			if err := w.Lock(ctx, narma.Shared, right, 0); err != nil {
				return err
			}
			k.is("Lock twice on one target", w.Lock(ctx, narma.Shared, right, 0), narma.ErrLock, "Lock")
			k.is("Lock(Exclusive) over Lock(Shared)", w.Lock(ctx, narma.Exclusive, right, 0), narma.ErrLock, "Lock")
			k.is("LockAll inside Lock", w.LockAll(ctx, 0), narma.ErrLock, "LockAll")
			k.is("Unlock of a target not locked", w.Unlock(ctx, left), narma.ErrLock, "Unlock")
			k.is("Flush of a target not locked", w.Flush(ctx, left), narma.ErrEpoch, "Flush")
			k.is("Fence inside a lock epoch", w.Fence(ctx, 0), narma.ErrEpoch, "Fence")
			k.is("Start inside a lock epoch", w.Start(ctx, []int{right}, 0), narma.ErrEpoch, "Start")
			k.is("Free inside a lock epoch", w.Free(ctx), narma.ErrEpoch, "Free")
			// The epoch survived the misuse.
			k.ok("Put after the misuse", w.Put([]int64{int64(-me - 1)}, right, 0))
			k.ok("Flush", w.Flush(ctx, right))
			k.ok("FlushAll", w.FlushAll(ctx))
			k.ok("Unlock", w.Unlock(ctx, right))
			k.is("Unlock twice", w.Unlock(ctx, right), narma.ErrLock, "Unlock")

			if err := w.LockAll(ctx, 0); err != nil {
				return err
			}
			k.is("LockAll twice", w.LockAll(ctx, 0), narma.ErrLock, "LockAll")
			k.is("Lock inside LockAll", w.Lock(ctx, narma.Exclusive, right, 0), narma.ErrLock, "Lock")
			k.is("Unlock inside LockAll", w.Unlock(ctx, right), narma.ErrLock, "Unlock")
			k.is("Fence inside LockAll", w.Fence(ctx, 0), narma.ErrEpoch, "Fence")
			k.is("Start inside LockAll", w.Start(ctx, []int{right}, 0), narma.ErrEpoch, "Start")
			k.is("Free inside LockAll", w.Free(ctx), narma.ErrEpoch, "Free")
			k.ok("Accumulate after the misuse", w.Accumulate([]int64{10}, right, 1, narma.Sum))
			k.ok("UnlockAll", w.UnlockAll(ctx))
			k.is("UnlockAll twice", w.UnlockAll(ctx), narma.ErrLock, "UnlockAll")

			err = barrierThen(c, func() error {
				want := []int64{int64(-left - 1), pattern(me, 1) + 10}
				if !slices.Equal(w.Local(), want) {
					return fmt.Errorf("window %v, want %v", w.Local(), want)
				}
				return nil
			})
			if err != nil {
				k.errorf("%v", err)
			}
			if err := k.err(); err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

// TestPSCWMisuse: Complete without Start, Wait and Test without Post,
// invalid groups (duplicates, ranks out of range), a second Post or Start
// while one is open, and calls of other modes inside PSCW epochs.
func TestPSCWMisuse(t *testing.T) {
	const n = 3
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			right, left := (me+1)%n, (me+n-1)%n
			k := newChecks(c)
			w, err := allocPattern(c, 2, st)
			if err != nil {
				return err
			}
			k.is("Complete without Start", w.Complete(ctx), narma.ErrEpoch, "Complete")
			k.is("Wait without Post", w.Wait(ctx), narma.ErrEpoch, "Wait")
			_, terr := w.Test()
			k.is("Test without Post", terr, narma.ErrEpoch, "Test")
			k.isIn("Post with a duplicate rank", w.Post([]int{left, left}, 0), narma.ErrGroup, "Post", fmt.Sprint(left))
			k.isIn("Start with a duplicate rank", w.Start(ctx, []int{right, me, right}, 0), narma.ErrGroup, "Start", fmt.Sprint(right))
			k.isIn("Post with rank n", w.Post([]int{n}, 0), narma.ErrGroup, "Post", fmt.Sprint(n))
			k.isIn("Start with rank -1", w.Start(ctx, []int{-1}, 0), narma.ErrGroup, "Start", "-1")
			// None of the refused calls opened an epoch.
			k.is("Complete after refused Starts", w.Complete(ctx), narma.ErrEpoch, "Complete")
			k.is("Wait after refused Posts", w.Wait(ctx), narma.ErrEpoch, "Wait")
			k.is("Put after refused Starts", w.Put([]int64{-1}, right, 0), narma.ErrNotInEpoch, "Put")

			if err := w.Post([]int{left}, 0); err != nil {
				return err
			}
			k.is("Post twice", w.Post([]int{left}, 0), narma.ErrEpoch, "Post")
			k.is("Fence inside an exposure epoch", w.Fence(ctx, 0), narma.ErrEpoch, "Fence")
			k.is("Free inside an exposure epoch", w.Free(ctx), narma.ErrEpoch, "Free")
			if err := w.Start(ctx, []int{right}, 0); err != nil {
				return err
			}
			k.is("Start twice", w.Start(ctx, []int{right}, 0), narma.ErrEpoch, "Start")
			k.is("Lock inside an access epoch", w.Lock(ctx, narma.Shared, right, 0), narma.ErrEpoch, "Lock")
			k.is("LockAll inside an access epoch", w.LockAll(ctx, 0), narma.ErrEpoch, "LockAll")
			k.is("Fence inside an access epoch", w.Fence(ctx, 0), narma.ErrEpoch, "Fence")
			k.ok("Put after the misuse", w.Put([]int64{int64(-me - 1)}, right, 0))
			k.ok("Complete", w.Complete(ctx))
			k.is("Complete twice", w.Complete(ctx), narma.ErrEpoch, "Complete")
			k.ok("Wait", w.Wait(ctx))
			k.is("Wait twice", w.Wait(ctx), narma.ErrEpoch, "Wait")
			if got := w.Local()[0]; got != int64(-left-1) {
				k.errorf("after Wait: [0] = %d, want %d", got, -left-1)
			}
			if got := w.Local()[1]; got != pattern(me, 1) {
				k.errorf("after Wait: [1] = %d, want untouched %d", got, pattern(me, 1))
			}
			if err := k.err(); err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

// TestFenceMisuse: Fence(NoPrecede) after operations were issued is
// refused with ErrAssert, and a Lock, LockAll, Post, Start or Free while a
// fence epoch with operations is open with ErrEpoch; the next Fence then
// completes the operations as usual.
func TestFenceMisuse(t *testing.T) {
	const n = 3
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			right, left := (me+1)%n, (me+n-1)%n
			k := newChecks(c)
			w, err := allocPattern(c, 2, st)
			if err != nil {
				return err
			}
			if err := w.Fence(ctx, 0); err != nil {
				return err
			}
			if err := w.Put([]int64{int64(-me - 1)}, right, 0); err != nil {
				return err
			}
			k.is("Fence(NoPrecede) after a Put", w.Fence(ctx, narma.NoPrecede), narma.ErrAssert, "Fence")
			k.is("Fence(NoPrecede|NoSucceed) after a Put", w.Fence(ctx, narma.NoPrecede|narma.NoSucceed), narma.ErrAssert, "Fence")
			k.is("Lock in a fence epoch with operations", w.Lock(ctx, narma.Exclusive, right, 0), narma.ErrEpoch, "Lock")
			k.is("LockAll in a fence epoch with operations", w.LockAll(ctx, 0), narma.ErrEpoch, "LockAll")
			k.is("Post in a fence epoch with operations", w.Post([]int{left}, 0), narma.ErrEpoch, "Post")
			k.is("Start in a fence epoch with operations", w.Start(ctx, []int{right}, 0), narma.ErrEpoch, "Start")
			k.is("Free in a fence epoch with operations", w.Free(ctx), narma.ErrEpoch, "Free")
			k.ok("Accumulate after the misuse", w.Accumulate([]int64{3}, right, 1, narma.Sum))
			if err := w.Fence(ctx, narma.NoSucceed); err != nil {
				return err
			}
			want := []int64{int64(-left - 1), pattern(me, 1) + 3}
			if !slices.Equal(w.Local(), want) {
				k.errorf("after the closing fence: window %v, want %v", w.Local(), want)
			}
			// A lock epoch may follow an idle fence epoch.
			if err := w.Fence(ctx, narma.NoPrecede); err != nil {
				return err
			}
			k.ok("Lock after an idle fence", w.Lock(ctx, narma.Shared, right, 0))
			k.ok("Unlock", w.Unlock(ctx, right))
			if err := k.err(); err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

// ctxCase is a blocking call made by rank 0 that can never complete
// because its peers do not take part; setup runs on every rank before it
// and may leave the peers holding resources.
type ctxCase struct {
	name  string
	setup func(c *narma.Comm, w *narma.Win[int64]) error
	call  func(ctx context.Context, c *narma.Comm, w *narma.Win[int64]) error
}

func ctxCases() []ctxCase {
	none := func(*narma.Comm, *narma.Win[int64]) error { return nil }
	return []ctxCase{
		{"Recv", none, func(ctx context.Context, c *narma.Comm, _ *narma.Win[int64]) error {
			_, err := c.Recv(ctx, make([]byte, 4), 1, 5)
			return err
		}},
		{"Recv(AnySource,AnyTag)", none, func(ctx context.Context, c *narma.Comm, _ *narma.Win[int64]) error {
			_, err := c.Recv(ctx, make([]byte, 4), narma.AnySource, narma.AnyTag)
			return err
		}},
		{"Probe", none, func(ctx context.Context, c *narma.Comm, _ *narma.Win[int64]) error {
			_, err := c.Probe(ctx, narma.AnySource, 5)
			return err
		}},
		{"Irecv+Wait", none, func(ctx context.Context, c *narma.Comm, _ *narma.Win[int64]) error {
			r, err := c.Irecv(make([]byte, 4), 1, 5)
			if err != nil {
				return fmt.Errorf("Irecv: %v (not the blocking call)", err)
			}
			_, err = r.Wait(ctx)
			return err
		}},
		{"Barrier", none, func(ctx context.Context, c *narma.Comm, _ *narma.Win[int64]) error {
			return c.Barrier(ctx)
		}},
		{"Bcast", none, func(ctx context.Context, c *narma.Comm, _ *narma.Win[int64]) error {
			return narma.Bcast(ctx, c, []int32{1, 2}, 1)
		}},
		{"Allreduce", none, func(ctx context.Context, c *narma.Comm, _ *narma.Win[int64]) error {
			return narma.Allreduce(ctx, c, []int64{1}, []int64{0}, narma.Sum)
		}},
		{"Fence", none, func(ctx context.Context, _ *narma.Comm, w *narma.Win[int64]) error {
			if err := w.Fence(ctx, 0); err != nil {
				return err
			}
			// Each fence is collective in both strategies (a barrier, or a
			// reduce-scatter of target counts); whichever blocks first must
			// give up.
			if err := w.Put([]int64{1}, 1, 0); err != nil {
				return fmt.Errorf("Put: %v (not the blocking call)", err)
			}
			return w.Fence(ctx, 0)
		}},
		{"Start without Post", none, func(ctx context.Context, _ *narma.Comm, w *narma.Win[int64]) error {
			// Immediate: Start waits for the post; Deferred: Complete does.
			if err := w.Start(ctx, []int{1}, 0); err != nil {
				return err
			}
			if err := w.Put([]int64{1}, 1, 0); err != nil {
				return fmt.Errorf("Put: %v (not the blocking call)", err)
			}
			return w.Complete(ctx)
		}},
		{"Wait without Complete", none, func(ctx context.Context, _ *narma.Comm, w *narma.Win[int64]) error {
			if err := w.Post([]int{1}, 0); err != nil {
				return fmt.Errorf("Post: %v (not the blocking call)", err)
			}
			return w.Wait(ctx)
		}},
		{"Lock(Exclusive) held elsewhere", func(c *narma.Comm, w *narma.Win[int64]) error {
			// Rank 1 takes the exclusive lock on rank 0 and never unlocks.
			if c.Rank() != 1 {
				return nil
			}
			ctx := c.Context()
			if err := w.Lock(ctx, narma.Exclusive, 0, 0); err != nil {
				return err
			}
			if err := w.Put([]int64{1}, 0, 1); err != nil {
				return err
			}
			return w.Flush(ctx, 0) // the deferred strategy locks here
		}, func(ctx context.Context, _ *narma.Comm, w *narma.Win[int64]) error {
			// Immediate: Lock waits; Deferred: the Flush does.
			if err := w.Lock(ctx, narma.Exclusive, 0, 0); err != nil {
				return err
			}
			if err := w.Put([]int64{2}, 0, 0); err != nil {
				return fmt.Errorf("Put: %v (not the blocking call)", err)
			}
			return w.Flush(ctx, 0)
		}},
		{"Lock(Shared) against an exclusive holder", func(c *narma.Comm, w *narma.Win[int64]) error {
			if c.Rank() != 1 {
				return nil
			}
			ctx := c.Context()
			if err := w.Lock(ctx, narma.Exclusive, 0, 0); err != nil {
				return err
			}
			if err := w.Put([]int64{1}, 0, 1); err != nil {
				return err
			}
			return w.Flush(ctx, 0)
		}, func(ctx context.Context, _ *narma.Comm, w *narma.Win[int64]) error {
			if err := w.Lock(ctx, narma.Shared, 0, 0); err != nil {
				return err
			}
			got := []int64{-1}
			if err := w.Get(got, 0, 0); err != nil {
				return fmt.Errorf("Get: %v (not the blocking call)", err)
			}
			return w.Unlock(ctx, 0)
		}},
		{"LockAll against an exclusive holder", func(c *narma.Comm, w *narma.Win[int64]) error {
			if c.Rank() != 1 {
				return nil
			}
			ctx := c.Context()
			if err := w.Lock(ctx, narma.Exclusive, 1, 0); err != nil {
				return err
			}
			if err := w.Put([]int64{1}, 1, 1); err != nil {
				return err
			}
			return w.Flush(ctx, 1)
		}, func(ctx context.Context, _ *narma.Comm, w *narma.Win[int64]) error {
			if err := w.LockAll(ctx, 0); err != nil {
				return err
			}
			if err := w.Accumulate([]int64{1}, 1, 0, narma.Sum); err != nil {
				return fmt.Errorf("Accumulate: %v (not the blocking call)", err)
			}
			return w.FlushAll(ctx)
		}},
	}
}

// TestBlockingCallsHonourContext: a blocking call that cannot complete
// returns the context's error (errors.Is DeadlineExceeded, or Canceled for
// a cancelled context) well before a generous deadline, in both
// strategies; the peers take no part and wait for rank 0 to finish.
func TestBlockingCallsHonourContext(t *testing.T) {
	const n = 2
	for _, st := range strategies {
		for _, cc := range ctxCases() {
			for _, how := range []string{"deadline", "cancel"} {
				t.Run(fmt.Sprintf("%v/%s/%s", st, cc.name, how), func(t *testing.T) {
					done := make(chan struct{})
					// Goroutine ranks only: the peers wait on done, closed
					// by rank 0, which processes do not share.
					runLocal(t, n, func(c *narma.Comm) error {
						w, err := narma.Allocate[int64](c.Context(), c, 2, narma.WithStrategy(st))
						if err != nil {
							return err
						}
						if err := cc.setup(c, w); err != nil {
							return fmt.Errorf("setup: %w", err)
						}
						if err := c.Barrier(c.Context()); err != nil {
							return err
						}
						if c.Rank() != 0 {
							return await(c, done)
						}
						defer close(done)
						var ctx context.Context
						var cancel context.CancelFunc
						want := context.DeadlineExceeded
						if how == "deadline" {
							ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
						} else {
							ctx, cancel = context.WithCancel(context.Background())
							time.AfterFunc(100*time.Millisecond, cancel)
							want = context.Canceled
						}
						defer cancel()
						start := time.Now()
						err = cc.call(ctx, c, w)
						el := time.Since(start)
						if !errors.Is(err, want) {
							return fmt.Errorf("%s: got %v, want an error wrapping %v", cc.name, err, want)
						}
						if el > 10*time.Second {
							return fmt.Errorf("%s: returned %v after the context ended", cc.name, el)
						}
						return nil
					})
				})
			}
		}
	}
}

// TestCancelledContextFailsFast: a blocking call given an already
// cancelled context returns its error without blocking.
func TestCancelledContextFailsFast(t *testing.T) {
	run(t, 2, func(c *narma.Comm) error {
		k := newChecks(c)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if c.Rank() == 0 {
			_, err := c.Recv(ctx, nil, 1, 0)
			k.is("Recv", err, context.Canceled, "Recv")
			_, err = c.Probe(ctx, 1, 0)
			k.is("Probe", err, context.Canceled, "Probe")
			k.is("Send", c.Send(ctx, nil, 1, 0), context.Canceled, "Send")
			_, err = c.Isend(ctx, nil, 1, 0)
			k.is("Isend", err, context.Canceled, "Isend")
		}
		if err := k.err(); err != nil {
			return err
		}
		// Nothing was sent by the cancelled Send.
		if err := c.Barrier(c.Context()); err != nil {
			return err
		}
		if c.Rank() == 1 {
			if _, found, err := c.Iprobe(narma.AnySource, narma.AnyTag); err != nil || found {
				return fmt.Errorf("Iprobe after a cancelled Send: found=%v, err=%v; want false, nil", found, err)
			}
		}
		return nil
	})
}
