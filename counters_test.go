package narma_test

// Notification counters and signal words: updated atomically after the
// data (DESIGN.md rules 1 and 4), every concurrent notice counted,
// thresholds complete exactly when reached, and resizing the counters
// loses nothing.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/narma-rma/narma"
)

// counterNotices is the number of counter notices rank r sends to counter
// i of each target in TestCounterTotalsFromManyOrigins.
func counterNotices(r, i int) int { return (i+1)*5 + r }

// TestCounterTotalsFromManyOrigins: every rank sends counter notices to
// every rank, on puts, gets, accumulates and zero-byte puts; each counter
// ends with the exact number sent to it.
func TestCounterTotalsFromManyOrigins(t *testing.T) {
	const n, ncnt = 4, 3
	forModes(t, func(t *testing.T, m mode, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			k := newChecks(c)
			w, err := narma.Allocate[int64](ctx, c, 2*n, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			if err := w.SetCounters(ctx, ncnt); err != nil {
				return err
			}
			me := c.Rank()
			ep := allToAll(c, w, m)
			if err := ep.begin(); err != nil {
				return err
			}
			one := []int64{1}
			// One get buffer per target: gets from different targets may
			// land at once (on transports that complete them on their own
			// goroutines), and only those from one target are ordered.
			got := make([]int64, n)
			accs := make([]int, n) // accumulates sent to each target
			for tgt := 0; tgt < n; tgt++ {
				for i := 0; i < ncnt; i++ {
					for j := 0; j < counterNotices(me, i); j++ {
						var err error
						switch j % 4 {
						case 0:
							err = w.AccumulateNotify(one, tgt, me, narma.Sum, narma.Counter(i))
							accs[tgt]++
						case 1:
							err = w.PutNotify(nil, tgt, 0, narma.Counter(i))
						case 2:
							err = w.PutNotify([]int64{int64(me)}, tgt, n+me, narma.Counter(i))
						case 3:
							err = w.GetNotify(got[tgt:tgt+1], tgt, n+me, narma.Counter(i))
						}
						if err != nil {
							return err
						}
					}
				}
			}
			if err := ep.end(); err != nil {
				return err
			}
			if err := ep.finish(); err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			for i := 0; i < ncnt; i++ {
				want := 0
				for r := 0; r < n; r++ {
					want += counterNotices(r, i)
				}
				v, err := w.Counter(i)
				if err != nil || v != uint64(want) {
					k.errorf("counter %d = %d, %v; want %d", i, v, err, want)
				} else {
					// Reached: WaitCounter returns at once.
					k.ok("WaitCounter", w.WaitCounter(ctx, i, uint64(want)))
				}
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			// Each origin's accumulates all landed.
			for r := 0; r < n; r++ {
				want := 0
				for i := 0; i < ncnt; i++ {
					want += (counterNotices(r, i) + 3) / 4
				}
				if got := w.Local()[r]; got != int64(want) {
					k.errorf("accumulated %d from rank %d, want %d", got, r, want)
				}
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			return k.err()
		})
	})
}

// TestCounterAndSignalAfterData: when WaitCounter or WaitSignal returns,
// the data of the puts that carried the notices is visible.
func TestCounterAndSignalAfterData(t *testing.T) {
	const nput = 16
	forModes(t, func(t *testing.T, m mode, st narma.Strategy) {
		run(t, 2, func(c *narma.Comm) error {
			ctx := c.Context()
			k := newChecks(c)
			// Words 0..nput-1 take counter-notified puts, nput..2nput-1
			// signal-notified ones; word 2nput is the signal.
			w, err := narma.Allocate[int64](ctx, c, 2*nput+1, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			if err := w.SetCounters(ctx, 1); err != nil {
				return err
			}
			ep := allToOne(c, w, m, 0)
			check := func() {
				for j := 1; j <= nput; j++ {
					if err := w.WaitCounter(ctx, 0, uint64(j)); err != nil {
						k.errorf("WaitCounter %d: %v", j, err)
						return
					}
					for i := 0; i < j; i++ {
						if got := w.Local()[i]; got != int64(100+i) {
							k.errorf("counter reached %d but put %d not visible: word %d = %d", j, i, i, got)
						}
					}
				}
				for j := 1; j <= nput; j++ {
					v, err := w.WaitSignal(ctx, 2*nput, narma.CmpGE, uint64(j))
					if err != nil {
						k.errorf("WaitSignal %d: %v", j, err)
						return
					}
					if v < uint64(j) || v > nput {
						k.errorf("WaitSignal(GE %d) returned %d", j, v)
						return
					}
					for i := 0; i < int(v); i++ {
						if got := w.Local()[nput+i]; got != int64(200+i) {
							k.errorf("signal is %d but put %d not visible: word %d = %d", v, i, nput+i, got)
						}
					}
				}
			}
			if err := ep.begin(); err != nil {
				return err
			}
			if c.Rank() == 1 {
				for i := 0; i < nput; i++ {
					if err := w.PutNotify([]int64{int64(100 + i)}, 0, i, narma.Counter(0)); err != nil {
						return err
					}
					if err := w.PutNotify([]int64{int64(200 + i)}, 0, nput+i, narma.Signal(2*nput, uint64(i+1), narma.SignalSet)); err != nil {
						return err
					}
				}
			} else if waitInside(m, st) {
				check()
			}
			if err := ep.end(); err != nil {
				return err
			}
			if c.Rank() == 0 && !waitInside(m, st) {
				check()
			}
			if err := ep.finish(); err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			return k.err()
		})
	})
}

// TestCounterThresholds: threshold requests complete exactly when their
// counter reaches the value (Test is false at v-1), several thresholds may
// watch one counter, WaitCounter blocks until reached, and SetCounter sets
// the value that later notices add to.
func TestCounterThresholds(t *testing.T) {
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, 3, func(c *narma.Comm) error {
			ctx := c.Context()
			k := newChecks(c)
			w, err := narma.Allocate[int64](ctx, c, 4, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			if err := w.SetCounters(ctx, 2); err != nil {
				return err
			}
			if c.Rank() != 0 {
				// Servers: each command is (counter, how many notices).
				if err := w.LockAll(ctx, 0); err != nil {
					return err
				}
				err := serve(ctx, c, func(v []int64) error {
					for j := int64(0); j < v[1]; j++ {
						if err := w.PutNotify(nil, 0, 0, narma.Counter(int(v[0]))); err != nil {
							return err
						}
					}
					return w.Flush(ctx, 0)
				})
				if err != nil {
					return err
				}
				if err := w.UnlockAll(ctx); err != nil {
					return err
				}
			} else {
				thresholds := []uint64{3, 5, 5, 8, 1}
				reqs := make([]*narma.Request, len(thresholds))
				for i, v := range thresholds {
					if reqs[i], err = w.CounterThreshold(0, v); err != nil {
						return err
					}
				}
				other, err := w.CounterThreshold(1, 1)
				if err != nil {
					return err
				}
				for v := uint64(1); v <= 8; v++ {
					for i, th := range thresholds {
						_, done, err := reqs[i].Test()
						k.ok("Test", err)
						if want := v-1 >= th; done != want {
							k.errorf("counter at %d: threshold %d done %v, want %v", v-1, th, done, want)
						}
					}
					// One more notice, from ranks 1 and 2 in turn.
					if err := commandAck(ctx, c, 1+int(v%2), 0, 1); err != nil {
						return err
					}
					if got, err := w.Counter(0); err != nil || got != v {
						k.errorf("counter after %d notices: %d, %v", v, got, err)
					}
				}
				for i := range reqs {
					if _, done, err := reqs[i].Test(); !done || err != nil {
						k.errorf("threshold %d at 8: done %v, %v", thresholds[i], done, err)
					}
				}
				if _, done, err := other.Test(); done || err != nil {
					k.errorf("threshold on counter 1 completed by notices to counter 0 (%v, %v)", done, err)
				}
				if v, err := w.Counter(1); err != nil || v != 0 {
					k.errorf("counter 1 = %d, %v; want 0", v, err)
				}
				// WaitCounter: not before, then blocking until reached.
				short, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
				err = w.WaitCounter(short, 0, 9)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					k.errorf("WaitCounter(9) at 8: %v, want a deadline error", err)
				}
				if err := command(ctx, c, 1, 0, 3); err != nil {
					return err
				}
				k.ok("WaitCounter(11)", w.WaitCounter(ctx, 0, 11))
				if err := awaitAck(ctx, c, 1); err != nil {
					return err
				}
				if v, err := w.Counter(0); err != nil || v != 11 {
					k.errorf("counter = %d, %v after 11 notices", v, err)
				}
				// A threshold request waits while notices arrive.
				r12, err := w.CounterThreshold(0, 13)
				if err != nil {
					return err
				}
				if err := command(ctx, c, 2, 0, 2); err != nil {
					return err
				}
				if _, err := r12.Wait(ctx); err != nil {
					k.errorf("Wait for threshold 13: %v", err)
				}
				if err := awaitAck(ctx, c, 2); err != nil {
					return err
				}
				// SetCounter: later notices add to the value set.
				k.ok("SetCounter", w.SetCounter(0, 100))
				if v, err := w.Counter(0); err != nil || v != 100 {
					k.errorf("Counter after SetCounter(100): %d, %v", v, err)
				}
				r101, err := w.CounterThreshold(0, 102)
				if err != nil {
					return err
				}
				if _, done, _ := r101.Test(); done {
					k.errorf("threshold 102 done at 100")
				}
				if err := commandAck(ctx, c, 1, 0, 1); err != nil {
					return err
				}
				if _, done, _ := r101.Test(); done {
					k.errorf("threshold 102 done at 101")
				}
				if err := commandAck(ctx, c, 2, 0, 1); err != nil {
					return err
				}
				if _, done, err := r101.Test(); !done || err != nil {
					k.errorf("threshold 102 at 102: done %v, %v", done, err)
				}
				k.ok("SetCounter(1, 7)", w.SetCounter(1, 7))
				if err := commandAck(ctx, c, 2, 1, 2); err != nil {
					return err
				}
				if v, err := w.Counter(1); err != nil || v != 9 {
					k.errorf("counter 1 = %d, %v after SetCounter(7) and 2 notices, want 9", v, err)
				}
				if v, err := w.Counter(0); err != nil || v != 102 {
					k.errorf("counter 0 = %d, %v, want 102", v, err)
				}
				if err := stopServing(ctx, c, 1, 2); err != nil {
					return err
				}
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			return k.err()
		})
	})
}

// TestCounterThresholdStaysComplete: a threshold request that has reported
// completion stays complete ("once Test reports true, the status and error
// are final"), even if the counter is set below the threshold afterwards.
func TestCounterThresholdStaysComplete(t *testing.T) {
	run(t, 1, func(c *narma.Comm) error {
		ctx := c.Context()
		k := newChecks(c)
		w, err := narma.Allocate[int64](ctx, c, 1)
		if err != nil {
			return err
		}
		if err := w.SetCounters(ctx, 1); err != nil {
			return err
		}
		r, err := w.CounterThreshold(0, 2)
		if err != nil {
			return err
		}
		if err := w.LockAll(ctx, 0); err != nil {
			return err
		}
		for i := 0; i < 2; i++ {
			if err := w.PutNotify(nil, 0, 0, narma.Counter(0)); err != nil {
				return err
			}
		}
		if err := w.UnlockAll(ctx); err != nil {
			return err
		}
		if _, done, err := r.Test(); !done || err != nil {
			k.errorf("threshold 2 at 2: done %v, %v", done, err)
		}
		k.ok("SetCounter", w.SetCounter(0, 0))
		if _, done, err := r.Test(); !done || err != nil {
			k.errorf("threshold request reported complete, then after SetCounter(0, 0) Test says done %v, err %v", done, err)
		}
		if err := w.Free(ctx); err != nil {
			return err
		}
		return k.err()
	})
}

// resizeCounts runs the SetCounters scenario of the resize tests: with
// counters 0..3 at rank 0, ranks 1..3 send counter notices inside an open
// LockAll epoch, then everybody calls SetCounters to grow rank 0 to 8
// counters, more notices follow, then SetCounters shrinks it to 2. at is
// called at rank 0 right after each SetCounters with the counts every
// notice issued before it makes; the epoch is closed at the end and the
// final counts checked.
func resizeCounts(t *testing.T, st narma.Strategy, at func(k *checks, w *narma.Win[int64], phase string, want []uint64)) {
	const n = 4
	run(t, n, func(c *narma.Comm) error {
		ctx := c.Context()
		k := newChecks(c)
		w, err := narma.Allocate[int64](ctx, c, 4, narma.WithStrategy(st))
		if err != nil {
			return err
		}
		if err := w.SetCounters(ctx, 4); err != nil {
			return err
		}
		me := c.Rank()
		send := func(i, times int) error {
			for j := 0; j < times; j++ {
				var err error
				if j%2 == 0 {
					err = w.PutNotify(nil, 0, 0, narma.Counter(i))
				} else {
					err = w.PutNotify([]int64{int64(j)}, 0, me, narma.Counter(i))
				}
				if err != nil {
					return err
				}
			}
			return nil
		}
		if me != 0 {
			if err := w.LockAll(ctx, 0); err != nil {
				return err
			}
			for i := 0; i < 4; i++ {
				if err := send(i, 10*(i+1)); err != nil {
					return err
				}
			}
		}
		// Grow, with the notices above issued and the epoch open.
		grow := 2
		if me == 0 {
			grow = 8
		}
		if err := w.SetCounters(ctx, grow); err != nil {
			return err
		}
		want := []uint64{30, 60, 90, 120, 0, 0, 0, 0}
		if me == 0 {
			at(k, w, "after growing", want)
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if me != 0 {
			// Counters 4..7 exist now.
			for i := 0; i < 8; i++ {
				if err := send(i, 3); err != nil {
					return err
				}
			}
		}
		for i := range want {
			want[i] += 9
		}
		if err := w.SetCounters(ctx, 2); err != nil {
			return err
		}
		if me == 0 {
			at(k, w, "after shrinking", want[:2])
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if me != 0 {
			err := w.PutNotify(nil, 0, 0, narma.Counter(2))
			if !errors.Is(err, narma.ErrInvalidNotification) {
				k.errorf("counter 2 of rank 0 after the shrink: %v, want ErrInvalidNotification", err)
			}
			if err := send(1, 5); err != nil {
				return err
			}
			if err := w.UnlockAll(ctx); err != nil {
				return err
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if me == 0 {
			want[1] += 15
			for i := 0; i < 2; i++ {
				if v, err := w.Counter(i); err != nil || v != want[i] {
					k.errorf("final counter %d = %d, %v; want %d", i, v, err, want[i])
				}
			}
			if _, err := w.Counter(2); !errors.Is(err, narma.ErrInvalidNotification) {
				k.errorf("Counter(2) after shrinking to 2: %v, want ErrInvalidNotification", err)
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if err := w.Free(ctx); err != nil {
			return err
		}
		return k.err()
	})
}

// TestSetCountersResizeKeepsCounts: counter notices issued before a
// SetCounters that grows, then shrinks, rank 0's counters, while their
// epoch is still open, are all counted: the counters that remain end with
// the exact totals, and the new counters start at zero.
func TestSetCountersResizeKeepsCounts(t *testing.T) {
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		resizeCounts(t, st, func(k *checks, w *narma.Win[int64], phase string, want []uint64) {
			for i := range want {
				if _, err := w.Counter(i); err != nil {
					k.errorf("%s: Counter(%d): %v", phase, i, err)
				}
			}
			if phase == "after growing" {
				for i := 4; i < 8; i++ {
					// New counters start at zero (the notices to 0..3
					// may still be queued at the origins).
					if v, err := w.Counter(i); err != nil || v != 0 {
						k.errorf("%s: new counter %d = %d, %v; want 0", phase, i, v, err)
					}
				}
			}
		})
	})
}

// TestSetCountersCompletesPendingNotices: SetCounters "completes the
// operations issued before it first": when it returns, the counter notices
// issued before it, in a still open epoch, have been counted.
func TestSetCountersCompletesPendingNotices(t *testing.T) {
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		resizeCounts(t, st, func(k *checks, w *narma.Win[int64], phase string, want []uint64) {
			for i := range want {
				if v, err := w.Counter(i); err != nil || v != want[i] {
					k.errorf("%s: counter %d = %d, %v when SetCounters returned; the notices issued before it make %d", phase, i, v, err, want[i])
				}
			}
		})
	})
}

// TestSignalAddFromManyOrigins: SignalAdd notices from every rank to
// every rank, on several kinds of operation, sum exactly.
func TestSignalAddFromManyOrigins(t *testing.T) {
	const n, per = 4, 30
	forModes(t, func(t *testing.T, m mode, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			k := newChecks(c)
			// Words 0..n-1 are accumulated into, word n is the signal.
			w, err := narma.Allocate[int64](ctx, c, n+1, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			me := c.Rank()
			ep := allToAll(c, w, m)
			if err := ep.begin(); err != nil {
				return err
			}
			// One result per target: fetches from different targets may
			// land at once on transports that complete them on their own
			// goroutines.
			olds := make([]int64, n)
			for tgt := 0; tgt < n; tgt++ {
				sig := narma.Signal(n, uint64(me+1), narma.SignalAdd)
				for j := 0; j < per; j++ {
					var err error
					switch j % 3 {
					case 0:
						err = w.PutNotify(nil, tgt, 0, sig)
					case 1:
						err = w.AccumulateNotify([]int64{1}, tgt, me, narma.Sum, sig)
					case 2:
						err = w.FetchAndOpNotify(1, &olds[tgt], tgt, me, narma.Sum, sig)
					}
					if err != nil {
						return err
					}
				}
			}
			if err := ep.end(); err != nil {
				return err
			}
			if err := ep.finish(); err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			want := uint64(per * n * (n + 1) / 2)
			if v, err := w.Signal(n); err != nil || v != want {
				k.errorf("signal = %d, %v; want %d", v, err, want)
			} else if v, err := w.WaitSignal(ctx, n, narma.CmpEQ, want); err != nil || v != want {
				k.errorf("WaitSignal(EQ %d) = %d, %v", want, v, err)
			}
			for r := 0; r < n; r++ {
				if got, want := w.Local()[r], int64(2*per/3); got != want {
					k.errorf("word %d = %d, want %d", r, got, want)
				}
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			return k.err()
		})
	})
}

// TestSignalSetAndCompare: SignalSet stores its value after the data;
// WaitSignal with each comparison does not return while the comparison is
// false and returns the value once a notice makes it true; Signal reads
// the word.
func TestSignalSetAndCompare(t *testing.T) {
	cases := []struct {
		cmp    narma.Cmp
		name   string
		v      uint64
		false_ uint64
		true_  uint64
	}{
		{narma.CmpEQ, "EQ", 5, 4, 5},
		{narma.CmpNE, "NE", 6, 6, 7},
		{narma.CmpGT, "GT", 10, 10, 11},
		{narma.CmpGE, "GE", 20, 19, 20},
		{narma.CmpLT, "LT", 3, 3, 2},
		{narma.CmpLE, "LE", 3, 4, 3},
	}
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, 2, func(c *narma.Comm) error {
			ctx := c.Context()
			k := newChecks(c)
			// Word 0 is the signal, word 1 the data.
			w, err := narma.Allocate[int64](ctx, c, 2, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			if c.Rank() == 1 {
				if err := w.LockAll(ctx, 0); err != nil {
					return err
				}
				err := serve(ctx, c, func(v []int64) error {
					if err := w.PutNotify([]int64{10 * v[0]}, 0, 1, narma.Signal(0, uint64(v[0]), narma.SignalSet)); err != nil {
						return err
					}
					return w.Flush(ctx, 0)
				})
				if err != nil {
					return err
				}
				if err := w.UnlockAll(ctx); err != nil {
					return err
				}
			} else {
				for _, tc := range cases {
					if err := commandAck(ctx, c, 1, int64(tc.false_)); err != nil {
						return err
					}
					if v, err := w.Signal(0); err != nil || v != tc.false_ {
						k.errorf("%s: Signal after SignalSet(%d) = %d, %v", tc.name, tc.false_, v, err)
					}
					short, cancel := context.WithTimeout(ctx, 3*time.Millisecond)
					v, err := w.WaitSignal(short, 0, tc.cmp, tc.v)
					cancel()
					if !errors.Is(err, context.DeadlineExceeded) {
						k.errorf("%s %d with word %d: WaitSignal returned %d, %v; want a deadline error", tc.name, tc.v, tc.false_, v, err)
					}
					if err := command(ctx, c, 1, int64(tc.true_)); err != nil {
						return err
					}
					v, err = w.WaitSignal(ctx, 0, tc.cmp, tc.v)
					if err != nil || v != tc.true_ {
						k.errorf("%s %d: WaitSignal = %d, %v; want %d", tc.name, tc.v, v, err, tc.true_)
					}
					if got := w.Local()[1]; got != int64(10*tc.true_) {
						k.errorf("%s: signal %d seen before its data: word 1 = %d", tc.name, v, got)
					}
					if err := awaitAck(ctx, c, 1); err != nil {
						return err
					}
				}
				if err := stopServing(ctx, c, 1); err != nil {
					return err
				}
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			return k.err()
		})
	})
}

// TestSignalOnByteWindow: signal words are addressed in the target's
// displacement units: on a byte window with unit 1 the word at byte 8 is
// displacement 8, at unit 4 it is displacement 2.
func TestSignalOnByteWindow(t *testing.T) {
	for _, unit := range []int{1, 4} {
		t.Run(fmt.Sprintf("unit%d", unit), func(t *testing.T) {
			run(t, 2, func(c *narma.Comm) error {
				ctx := c.Context()
				k := newChecks(c)
				w, err := narma.Allocate[byte](ctx, c, 24, narma.WithDispUnit(unit))
				if err != nil {
					return err
				}
				if c.Rank() == 1 {
					if err := w.LockAll(ctx, 0); err != nil {
						return err
					}
					k.ok("PutNotify", w.PutNotify([]byte{9}, 0, 0, narma.Signal(8/unit, 0x0102, narma.SignalSet)))
					k.ok("PutNotify", w.PutNotify(nil, 0, 0, narma.Signal(16/unit, 5, narma.SignalAdd)))
					if err := w.UnlockAll(ctx); err != nil {
						return err
					}
				}
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				if c.Rank() == 0 {
					if v, err := w.Signal(8 / unit); err != nil || v != 0x0102 {
						k.errorf("Signal(%d) = %#x, %v", 8/unit, v, err)
					}
					if v, err := w.Signal(16 / unit); err != nil || v != 5 {
						k.errorf("Signal(%d) = %d, %v", 16/unit, v, err)
					}
					if got := w.Local()[8]; got != 0x02 {
						k.errorf("byte 8 = %#x, want the low byte of the little-endian word 0x0102", got)
					}
					if got := w.Local()[0]; got != 9 {
						k.errorf("byte 0 = %d", got)
					}
				}
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				if err := w.Free(ctx); err != nil {
					return err
				}
				return k.err()
			})
		})
	}
}
