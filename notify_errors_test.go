package narma_test

// Bad input to Notified Access returns the right sentinel error and writes
// nothing (DESIGN.md rule 6); blocking target-side calls honour their
// context (rule 7).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/narma-rma/narma"
)

// tagAboveMax returns MaxTag+1 (wrapping to a negative int where int has
// 32 bits, still not a valid tag).
func tagAboveMax() int {
	t := narma.MaxTag
	t++
	return t
}

// badNotice is an erroneous notified call of TestNotifyBadNotices, issued
// by rank 2 to rank tgt's int64 window (16 words) or byte window bw (64
// bytes, displacement unit 1).
type badNotice struct {
	name     string
	sentinel error
	do       func(w *narma.Win[int64], bw *narma.Win[byte], out []int64, res *int64) error
}

// Rank 0 has 2 counters, rank 1 none, rank 2 (the origin) 4.
func badNotices() []badNotice {
	one := []int64{-1}
	var calls []badNotice
	// Every notified call with each bad notice.
	type call struct {
		name string
		do   func(w *narma.Win[int64], n narma.Notice, out []int64, res *int64) error
	}
	callsOf := []call{
		{"PutNotify", func(w *narma.Win[int64], n narma.Notice, _ []int64, _ *int64) error {
			return w.PutNotify(one, 0, 1, n)
		}},
		{"PutNotify(nil)", func(w *narma.Win[int64], n narma.Notice, _ []int64, _ *int64) error {
			return w.PutNotify(nil, 0, 0, n)
		}},
		{"PutStridedNotify", func(w *narma.Win[int64], n narma.Notice, _ []int64, _ *int64) error {
			return w.PutStridedNotify([]int64{-1, 0, -1}, narma.Vector(2, 1, 2), 0, 2, narma.Contiguous, n)
		}},
		{"GetNotify", func(w *narma.Win[int64], n narma.Notice, out []int64, _ *int64) error {
			return w.GetNotify(out[:2], 0, 1, n)
		}},
		{"GetStridedNotify", func(w *narma.Win[int64], n narma.Notice, out []int64, _ *int64) error {
			return w.GetStridedNotify(out[:2], narma.Contiguous, 0, 1, narma.Vector(2, 1, 3), n)
		}},
		{"AccumulateNotify", func(w *narma.Win[int64], n narma.Notice, _ []int64, _ *int64) error {
			return w.AccumulateNotify(one, 0, 3, narma.Sum, n)
		}},
		{"AccumulateStridedNotify", func(w *narma.Win[int64], n narma.Notice, _ []int64, _ *int64) error {
			return w.AccumulateStridedNotify([]int64{1, 1}, narma.Contiguous, 0, 3, narma.Vector(2, 1, 2), narma.Sum, n)
		}},
		{"GetAccumulateNotify", func(w *narma.Win[int64], n narma.Notice, out []int64, _ *int64) error {
			return w.GetAccumulateNotify(one, out[:1], 0, 4, narma.Replace, n)
		}},
		{"FetchAndOpNotify", func(w *narma.Win[int64], n narma.Notice, _ []int64, res *int64) error {
			return w.FetchAndOpNotify(5, res, 0, 5, narma.Sum, n)
		}},
		{"CompareAndSwapNotify", func(w *narma.Win[int64], n narma.Notice, _ []int64, res *int64) error {
			return w.CompareAndSwapNotify(6, -1, res, 0, 5, n)
		}},
		{"RputNotify", func(w *narma.Win[int64], n narma.Notice, _ []int64, _ *int64) error {
			_, err := w.RputNotify(one, 0, 6, n)
			return err
		}},
		{"RgetNotify", func(w *narma.Win[int64], n narma.Notice, out []int64, _ *int64) error {
			_, err := w.RgetNotify(out[:1], 0, 6, n)
			return err
		}},
		{"RaccumulateNotify", func(w *narma.Win[int64], n narma.Notice, _ []int64, _ *int64) error {
			_, err := w.RaccumulateNotify(one, 0, 6, narma.Sum, n)
			return err
		}},
		{"RgetAccumulateNotify", func(w *narma.Win[int64], n narma.Notice, out []int64, _ *int64) error {
			_, err := w.RgetAccumulateNotify(one, out[:1], 0, 6, narma.Sum, n)
			return err
		}},
	}
	notices := []struct {
		name     string
		n        narma.Notice
		sentinel error
	}{
		{"Tag(-1)", narma.Tag(-1), narma.ErrTag},
		{"Tag(MaxTag+1)", narma.Tag(tagAboveMax()), narma.ErrTag},
		{"Counter(-1)", narma.Counter(-1), narma.ErrInvalidNotification},
		{"Counter(2) of 2", narma.Counter(2), narma.ErrInvalidNotification},
		{"Counter(3), valid at the origin only", narma.Counter(3), narma.ErrInvalidNotification},
		{"Signal(-1)", narma.Signal(-1, 1, narma.SignalAdd), narma.ErrBounds},
		{"Signal(16) past the end", narma.Signal(16, 1, narma.SignalSet), narma.ErrBounds},
		{"Signal(MaxInt)", narma.Signal(math.MaxInt, 1, narma.SignalAdd), narma.ErrBounds},
		{"Counter(MaxInt)", narma.Counter(math.MaxInt), narma.ErrInvalidNotification},
		{"Signal op 9", narma.Signal(0, 1, narma.SignalOp(9)), narma.ErrInvalidNotification},
		{"Signal op 0x81", narma.Signal(0, 1, narma.SignalOp(0x81)), narma.ErrInvalidNotification},
		{"Tag(MinInt)", narma.Tag(math.MinInt), narma.ErrTag},
		{"Counter(MinInt)", narma.Counter(math.MinInt), narma.ErrInvalidNotification},
		{"Signal(MinInt)", narma.Signal(math.MinInt, 1, narma.SignalSet), narma.ErrBounds},
	}
	for _, c := range callsOf {
		for _, nt := range notices {
			c, nt := c, nt
			calls = append(calls, badNotice{
				name:     c.name + " " + nt.name,
				sentinel: nt.sentinel,
				do: func(w *narma.Win[int64], _ *narma.Win[byte], out []int64, res *int64) error {
					return c.do(w, nt.n, out, res)
				},
			})
		}
	}
	// Rank 1 has no counters at all.
	calls = append(calls,
		badNotice{"PutNotify Counter(0) to a rank without counters", narma.ErrInvalidNotification,
			func(w *narma.Win[int64], _ *narma.Win[byte], _ []int64, _ *int64) error {
				return w.PutNotify(one, 1, 0, narma.Counter(0))
			}},
		badNotice{"GetNotify Counter(0) to a rank without counters", narma.ErrInvalidNotification,
			func(w *narma.Win[int64], _ *narma.Win[byte], out []int64, _ *int64) error {
				return w.GetNotify(out[:1], 1, 0, narma.Counter(0))
			}},
		// Byte window, displacement unit 1.
		badNotice{"byte window Signal(3) misaligned", narma.ErrAlign,
			func(_ *narma.Win[int64], bw *narma.Win[byte], _ []int64, _ *int64) error {
				return bw.PutNotify([]byte{0xFF}, 0, 0, narma.Signal(3, 1, narma.SignalSet))
			}},
		badNotice{"byte window Signal(60) straddling the end", narma.ErrBounds,
			func(_ *narma.Win[int64], bw *narma.Win[byte], _ []int64, _ *int64) error {
				return bw.PutNotify(nil, 0, 0, narma.Signal(60, 1, narma.SignalAdd))
			}},
		badNotice{"byte window Signal(57) straddling the end", narma.ErrBounds,
			func(_ *narma.Win[int64], bw *narma.Win[byte], _ []int64, _ *int64) error {
				return bw.PutNotify(nil, 0, 0, narma.Signal(57, 1, narma.SignalAdd))
			}},
		badNotice{"byte window Signal(64) past the end", narma.ErrBounds,
			func(_ *narma.Win[int64], bw *narma.Win[byte], _ []int64, _ *int64) error {
				return bw.AccumulateNotify([]byte{1}, 0, 0, narma.Sum, narma.Signal(64, 1, narma.SignalAdd))
			}},
	)
	return calls
}

// TestNotifyBadNotices: a notified call with a bad notice (tag, counter
// index or counters not enabled at the target, signal word outside the
// window or misaligned, unknown signal operation) returns the right
// sentinel at the origin and writes nothing: not the target window, not
// its counters or signal words, not the origin's buffers, and queues no
// notice.
func TestNotifyBadNotices(t *testing.T) {
	for _, m := range []mode{modeLockAll, modeFence} {
		for _, st := range strategies {
			t.Run(fmt.Sprintf("%v/%v", m, st), func(t *testing.T) {
				run(t, 3, func(c *narma.Comm) error {
					ctx := c.Context()
					k := newChecks(c)
					me := c.Rank()
					w, err := narma.Allocate[int64](ctx, c, 16, narma.WithStrategy(st))
					if err != nil {
						return err
					}
					bw, err := narma.Allocate[byte](ctx, c, 64, narma.WithStrategy(st), narma.WithDispUnit(1))
					if err != nil {
						return err
					}
					if err := w.SetCounters(ctx, []int{2, 0, 4}[me]); err != nil {
						return err
					}
					fillPattern(w.Local(), me)
					fillBytes(bw.Local(), me)
					if err := c.Barrier(ctx); err != nil {
						return err
					}
					open := func() error {
						if m == modeFence {
							if err := w.Fence(ctx, 0); err != nil {
								return err
							}
							return bw.Fence(ctx, 0)
						}
						if err := w.LockAll(ctx, 0); err != nil {
							return err
						}
						return bw.LockAll(ctx, 0)
					}
					closeEp := func() error {
						if m == modeFence {
							if err := w.Fence(ctx, narma.NoSucceed); err != nil {
								return err
							}
							return bw.Fence(ctx, narma.NoSucceed)
						}
						if err := w.UnlockAll(ctx); err != nil {
							return err
						}
						return bw.UnlockAll(ctx)
					}
					out := make([]int64, 4)
					fillPattern(out, 7)
					res := int64(-77)
					if me == 2 {
						// Outside every epoch: ErrNotInEpoch, with good notices.
						k.is("PutNotify outside an epoch", w.PutNotify([]int64{-1}, 0, 0, narma.Tag(1)), narma.ErrNotInEpoch, "PutNotify")
						k.is("GetNotify outside an epoch", w.GetNotify(out[:1], 0, 0, narma.Counter(0)), narma.ErrNotInEpoch, "GetNotify")
						k.is("AccumulateNotify outside an epoch", w.AccumulateNotify([]int64{1}, 0, 0, narma.Sum, narma.Signal(15, 1, narma.SignalAdd)), narma.ErrNotInEpoch, "AccumulateNotify")
						k.is("FetchAndOpNotify outside an epoch", w.FetchAndOpNotify(1, &res, 0, 0, narma.Sum, narma.Tag(1)), narma.ErrNotInEpoch, "FetchAndOpNotify")
					}
					if err := open(); err != nil {
						return err
					}
					if me == 2 {
						for _, b := range badNotices() {
							if m != modeLockAll && b.name[0] == 'R' {
								continue // request-based: lock epochs only
							}
							k.is(b.name, b.do(w, bw, out, &res), b.sentinel, "")
						}
						if err := checkPattern(out, 7); err != nil {
							k.errorf("origin buffer written: %v", err)
						}
						if res != -77 {
							k.errorf("origin result written: %d", res)
						}
					}
					if err := closeEp(); err != nil {
						return err
					}
					if err := c.Barrier(ctx); err != nil {
						return err
					}
					if err := checkPattern(w.Local(), me); err != nil {
						k.errorf("after bad notified calls: %v", err)
					}
					want := make([]byte, 64)
					fillBytes(want, me)
					if string(bw.Local()) != string(want) {
						k.errorf("byte window changed by bad notified calls")
					}
					for i := 0; i < []int{2, 0, 4}[me]; i++ {
						if v, err := w.Counter(i); err != nil || v != 0 {
							k.errorf("counter %d = %d, %v after bad notified calls", i, v, err)
						}
					}
					for _, win := range []func() (*narma.Request, error){
						func() (*narma.Request, error) { return w.NotifyInit(narma.AnySource, narma.AnyTag, 1) },
						func() (*narma.Request, error) { return bw.NotifyInit(narma.AnySource, narma.AnyTag, 1) },
					} {
						r, err := win()
						if err != nil {
							return err
						}
						k.ok("Start", r.Start())
						if st, done, err := r.Test(); done || err != nil {
							k.errorf("a bad notified call queued a notice %+v (%v)", st, err)
						}
					}
					if err := c.Barrier(ctx); err != nil {
						return err
					}
					if err := bw.Free(ctx); err != nil {
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
}

// TestNotifyBadNoticeNamesValue: the error of a notified call with a bad
// Tag, Counter or Signal names the value the program passed, not what the
// notice made of it (a negative tag, counter -1, a displacement wrapped to
// 2^64-1 or cut to 2^48-1), whatever the call and the strategy.
func TestNotifyBadNoticeNamesValue(t *testing.T) {
	type bad struct {
		name     string
		n        narma.Notice
		sentinel error
		value    string // what the message must contain
	}
	bads := []bad{
		{"Tag(-5)", narma.Tag(-5), narma.ErrTag, "notice tag -5 not in [0,2147483647]"},
		{"Tag(MaxTag+1)", narma.Tag(tagAboveMax()), narma.ErrTag, fmt.Sprintf("notice tag %d not in", tagAboveMax())},
		{"Tag(MinInt)", narma.Tag(math.MinInt), narma.ErrTag, fmt.Sprintf("notice tag %d not in", math.MinInt)},
		{"Counter(-2)", narma.Counter(-2), narma.ErrInvalidNotification, "counter -2, rank 1 has 2"},
		{"Counter(2)", narma.Counter(2), narma.ErrInvalidNotification, "counter 2, rank 1 has 2"},
		{"Counter(MaxInt)", narma.Counter(math.MaxInt), narma.ErrInvalidNotification, fmt.Sprintf("counter %d, rank 1 has 2", math.MaxInt)},
		{"Signal(-8)", narma.Signal(-8, 1, narma.SignalAdd), narma.ErrBounds, "signal displacement -8 outside window of 64 bytes at rank 1"},
		{"Signal(8)", narma.Signal(8, 1, narma.SignalAdd), narma.ErrBounds, "signal displacement 8 (byte 64) outside window of 64 bytes at rank 1"},
		{"Signal(MaxInt)", narma.Signal(math.MaxInt, 1, narma.SignalSet), narma.ErrBounds, fmt.Sprintf("signal displacement %d outside", math.MaxInt)},
		{"Signal op 9", narma.Signal(0, 1, narma.SignalOp(9)), narma.ErrInvalidNotification, "signal operation 9"},
		{"Signal op 0x81", narma.Signal(0, 1, narma.SignalOp(0x81)), narma.ErrInvalidNotification, "signal operation 129"},
	}
	if strconv.IntSize == 64 {
		big := int(int64(1) << 40) // a compile error as a constant where int has 32 bits
		bads = append(bads,
			bad{"Tag(1<<40)", narma.Tag(big), narma.ErrTag, "notice tag 1099511627776 not in"},
			bad{"Counter(1<<40)", narma.Counter(big), narma.ErrInvalidNotification, "counter 1099511627776, rank 1 has 2"},
			bad{"Signal(1<<50)", narma.Signal(big<<10, 1, narma.SignalSet), narma.ErrBounds, "signal displacement 1125899906842624 outside"},
		)
	}
	for _, st := range strategies {
		t.Run(st.String(), func(t *testing.T) {
			run(t, 2, func(c *narma.Comm) error {
				ctx := c.Context()
				k := newChecks(c)
				w, err := narma.Allocate[int64](ctx, c, 8, narma.WithStrategy(st))
				if err != nil {
					return err
				}
				if err := w.SetCounters(ctx, 2); err != nil {
					return err
				}
				if c.Rank() == 0 {
					if err := w.LockAll(ctx, 0); err != nil {
						return err
					}
					out := make([]int64, 2)
					var res int64
					for _, b := range bads {
						k.isIn("PutNotify "+b.name, w.PutNotify(out[:1], 1, 0, b.n), b.sentinel, "PutNotify", b.value)
						k.isIn("GetStridedNotify "+b.name, w.GetStridedNotify(out, narma.Contiguous, 1, 0, narma.Vector(2, 1, 2), b.n), b.sentinel, "GetNotify", b.value)
						k.isIn("CompareAndSwapNotify "+b.name, w.CompareAndSwapNotify(0, 1, &res, 1, 0, b.n), b.sentinel, "", b.value)
						_, err := w.RputNotify(nil, 1, 0, b.n)
						k.isIn("RputNotify "+b.name, err, b.sentinel, "RputNotify", b.value)
					}
					if err := w.UnlockAll(ctx); err != nil {
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
}

// TestNotifyTargetSideErrors: bad arguments to NotifyInit, the counter
// calls and the signal calls return the right sentinel.
func TestNotifyTargetSideErrors(t *testing.T) {
	run(t, 3, func(c *narma.Comm) error {
		ctx := c.Context()
		k := newChecks(c)
		w, err := narma.Allocate[int64](ctx, c, 4)
		if err != nil {
			return err
		}
		bw, err := narma.Allocate[byte](ctx, c, 32, narma.WithDispUnit(1))
		if err != nil {
			return err
		}
		// Counters not enabled.
		_, err = w.Counter(0)
		k.is("Counter without counters", err, narma.ErrInvalidNotification, "Counter")
		k.is("SetCounter without counters", w.SetCounter(0, 1), narma.ErrInvalidNotification, "SetCounter")
		k.is("WaitCounter without counters", w.WaitCounter(ctx, 0, 0), narma.ErrInvalidNotification, "WaitCounter")
		_, err = w.CounterThreshold(0, 1)
		k.is("CounterThreshold without counters", err, narma.ErrInvalidNotification, "CounterThreshold")
		k.is("SetCounters(-1)", w.SetCounters(ctx, -1), narma.ErrInvalid, "SetCounters")
		if err := w.SetCounters(ctx, 3); err != nil {
			return err
		}
		for _, i := range []int{-1, 3, math.MaxInt} {
			_, err := w.Counter(i)
			k.is(fmt.Sprintf("Counter(%d)", i), err, narma.ErrInvalidNotification, "Counter")
			k.is(fmt.Sprintf("SetCounter(%d)", i), w.SetCounter(i, 1), narma.ErrInvalidNotification, "SetCounter")
			k.is(fmt.Sprintf("WaitCounter(%d)", i), w.WaitCounter(ctx, i, 0), narma.ErrInvalidNotification, "WaitCounter")
			_, err = w.CounterThreshold(i, 1)
			k.is(fmt.Sprintf("CounterThreshold(%d)", i), err, narma.ErrInvalidNotification, "CounterThreshold")
		}
		for i := 0; i < 3; i++ {
			if v, err := w.Counter(i); err != nil || v != 0 {
				k.errorf("counter %d = %d, %v after refused calls", i, v, err)
			}
		}
		// A threshold on a counter that a shrink removes fails.
		th, err := w.CounterThreshold(2, 1)
		if err != nil {
			return err
		}
		if err := w.SetCounters(ctx, 2); err != nil {
			return err
		}
		_, _, err = th.Test()
		k.is("threshold on a removed counter", err, narma.ErrInvalidNotification, "")

		// NotifyInit.
		for _, n := range []int{0, -1} {
			_, err := w.NotifyInit(narma.AnySource, narma.AnyTag, n)
			k.is(fmt.Sprintf("NotifyInit count %d", n), err, narma.ErrInvalid, "NotifyInit")
		}
		for _, src := range []int{3, -2, 1 << 30} {
			_, err := w.NotifyInit(src, 0, 1)
			k.is(fmt.Sprintf("NotifyInit source %d", src), err, narma.ErrRank, "NotifyInit")
		}
		for _, tag := range []int{-2, tagAboveMax()} {
			_, err := w.NotifyInit(0, tag, 1)
			k.is(fmt.Sprintf("NotifyInit tag %d", tag), err, narma.ErrTag, "NotifyInit")
		}
		if r, err := w.NotifyInit(2, narma.MaxTag, 1); err != nil || r == nil {
			k.errorf("NotifyInit with tag MaxTag: %v", err)
		}

		// Signals at the target: displacement checks and comparisons.
		fillBytes(bw.Local(), 5)
		_, err = bw.Signal(3)
		k.is("Signal(3) on a byte window", err, narma.ErrAlign, "Signal")
		_, err = bw.WaitSignal(ctx, 3, narma.CmpEQ, 0)
		k.is("WaitSignal(3) on a byte window", err, narma.ErrAlign, "WaitSignal")
		for _, d := range []int{-1, 25, 32, math.MaxInt} {
			_, err := bw.Signal(d)
			k.is(fmt.Sprintf("Signal(%d)", d), err, narma.ErrBounds, "Signal")
			_, err = bw.WaitSignal(ctx, d, narma.CmpEQ, 0)
			k.is(fmt.Sprintf("WaitSignal(%d)", d), err, narma.ErrBounds, "WaitSignal")
		}
		for _, d := range []int{-1, 4, math.MaxInt} {
			_, err := w.Signal(d)
			k.is(fmt.Sprintf("int64 window Signal(%d)", d), err, narma.ErrBounds, "Signal")
		}
		if v, err := w.Signal(3); err != nil || v != 0 {
			k.errorf("Signal(3), the last word: %d, %v", v, err)
		}
		if v, err := bw.Signal(24); err != nil || v == 0 {
			k.errorf("Signal(24), the last word of the byte window: %d, %v", v, err)
		}
		for _, cmp := range []narma.Cmp{0, 7, 255} {
			_, err := w.WaitSignal(ctx, 0, cmp, 0)
			k.is(fmt.Sprintf("WaitSignal cmp %d", cmp), err, narma.ErrInvalid, "WaitSignal")
		}
		want := make([]byte, 32)
		fillBytes(want, 5)
		if string(bw.Local()) != string(want) {
			k.errorf("signal calls wrote the window")
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if err := bw.Free(ctx); err != nil {
			return err
		}
		if err := w.Free(ctx); err != nil {
			return err
		}
		return k.err()
	})
}

// TestNotifyFreedRequest: Start, Test, Wait and Free of a freed
// notification or threshold request return ErrFreed.
func TestNotifyFreedRequest(t *testing.T) {
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
		nr, err := w.NotifyInit(0, 1, 1)
		if err != nil {
			return err
		}
		k.ok("Start", nr.Start())
		th, err := w.CounterThreshold(0, 1)
		if err != nil {
			return err
		}
		for name, r := range map[string]*narma.Request{"notification": nr, "threshold": th} {
			k.ok("Free", r.Free())
			k.is(name+" Start after Free", r.Start(), narma.ErrFreed, "Start")
			_, _, err := r.Test()
			k.is(name+" Test after Free", err, narma.ErrFreed, "Test")
			short, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err = r.Wait(short)
			cancel()
			k.is(name+" Wait after Free", err, narma.ErrFreed, "Wait")
			k.is(name+" Free after Free", r.Free(), narma.ErrFreed, "Free")
		}
		// A freed request leaves the notice for others.
		if err := w.LockAll(ctx, 0); err != nil {
			return err
		}
		if err := w.PutNotify(nil, 0, 0, narma.Tag(1)); err != nil {
			return err
		}
		if err := w.UnlockAll(ctx); err != nil {
			return err
		}
		r, err := w.NotifyInit(0, 1, 1)
		if err != nil {
			return err
		}
		k.ok("Start", r.Start())
		if _, done, err := r.Test(); !done || err != nil {
			k.errorf("the notice was taken by a freed request (done %v, %v)", done, err)
		}
		// Start is refused with a clear error (not a silent re-arm) on a
		// threshold request: it is not persistent.
		th2, err := w.CounterThreshold(0, 1)
		if err != nil {
			return err
		}
		if err := th2.Start(); err == nil {
			k.errorf("Start of a threshold request succeeded")
		}
		if err := w.Free(ctx); err != nil {
			return err
		}
		return k.err()
	})
}

// TestNotifyRequestOfFreedWindow: once the window is freed, its
// notification and threshold requests, and every target-side call, return
// ErrFreed, promptly (Wait does not block until its context ends).
func TestNotifyRequestOfFreedWindow(t *testing.T) {
	run(t, 2, func(c *narma.Comm) error {
		ctx := c.Context()
		k := newChecks(c)
		w, err := narma.Allocate[int64](ctx, c, 2)
		if err != nil {
			return err
		}
		if err := w.SetCounters(ctx, 1); err != nil {
			return err
		}
		nr, err := w.NotifyInit(narma.AnySource, narma.AnyTag, 1)
		if err != nil {
			return err
		}
		k.ok("Start", nr.Start())
		idle, err := w.NotifyInit(narma.AnySource, narma.AnyTag, 1)
		if err != nil {
			return err
		}
		th, err := w.CounterThreshold(0, 5)
		if err != nil {
			return err
		}
		if err := w.Free(ctx); err != nil {
			return err
		}
		for name, r := range map[string]*narma.Request{"started notification": nr, "threshold": th} {
			_, done, err := r.Test()
			k.is(name+" request Test after its window was freed", err, narma.ErrFreed, "Test")
			if done {
				k.errorf("%s request Test after its window was freed reports done", name)
			}
			short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			start := time.Now()
			_, err = r.Wait(short)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				k.errorf("%s request Wait after its window was freed blocked for %v until its deadline, want ErrFreed at once", name, time.Since(start).Round(time.Millisecond))
			} else {
				k.is(name+" request Wait after its window was freed", err, narma.ErrFreed, "Wait")
			}
		}
		k.is("Start of a request of a freed window", idle.Start(), narma.ErrFreed, "Start")
		_, err = w.NotifyInit(0, 0, 1)
		k.is("NotifyInit on a freed window", err, narma.ErrFreed, "NotifyInit")
		_, err = w.Counter(0)
		k.is("Counter on a freed window", err, narma.ErrFreed, "Counter")
		k.is("SetCounter on a freed window", w.SetCounter(0, 1), narma.ErrFreed, "SetCounter")
		k.is("WaitCounter on a freed window", w.WaitCounter(ctx, 0, 0), narma.ErrFreed, "WaitCounter")
		_, err = w.CounterThreshold(0, 1)
		k.is("CounterThreshold on a freed window", err, narma.ErrFreed, "CounterThreshold")
		k.is("SetCounters on a freed window", w.SetCounters(ctx, 1), narma.ErrFreed, "SetCounters")
		_, err = w.Signal(0)
		k.is("Signal on a freed window", err, narma.ErrFreed, "Signal")
		_, err = w.WaitSignal(ctx, 0, narma.CmpEQ, 0)
		k.is("WaitSignal on a freed window", err, narma.ErrFreed, "WaitSignal")
		k.is("PutNotify on a freed window", w.PutNotify(nil, 1-c.Rank(), 0, narma.Tag(0)), narma.ErrFreed, "PutNotify")
		return k.err()
	})
}

// TestNotifyWaitsHonourContext: WaitCounter, WaitSignal, Wait of a
// notification or threshold request, WaitAny and WaitAll return the
// context's error at its deadline or cancellation, and the requests still
// work afterwards.
func TestNotifyWaitsHonourContext(t *testing.T) {
	run(t, 2, func(c *narma.Comm) error {
		ctx := c.Context()
		k := newChecks(c)
		w, err := narma.Allocate[int64](ctx, c, 2)
		if err != nil {
			return err
		}
		if err := w.SetCounters(ctx, 1); err != nil {
			return err
		}
		if c.Rank() == 0 {
			nr, err := w.NotifyInit(1, 5, 1)
			if err != nil {
				return err
			}
			k.ok("Start", nr.Start())
			th, err := w.CounterThreshold(0, 1)
			if err != nil {
				return err
			}
			calls := []struct {
				name string
				f    func(ctx context.Context) error
			}{
				{"WaitCounter", func(ctx context.Context) error { return w.WaitCounter(ctx, 0, 1) }},
				{"WaitSignal", func(ctx context.Context) error {
					_, err := w.WaitSignal(ctx, 1, narma.CmpEQ, 42)
					return err
				}},
				{"notification Wait", func(ctx context.Context) error {
					_, err := nr.Wait(ctx)
					return err
				}},
				{"threshold Wait", func(ctx context.Context) error {
					_, err := th.Wait(ctx)
					return err
				}},
				{"WaitAny", func(ctx context.Context) error {
					i, _, err := narma.WaitAny(ctx, []*narma.Request{nil, nr, th})
					if err != nil && i != -1 {
						return fmt.Errorf("index %d with error %w", i, err)
					}
					return err
				}},
				{"WaitAll", func(ctx context.Context) error {
					return narma.WaitAll(ctx, []*narma.Request{nr, th}, nil)
				}},
			}
			for _, call := range calls {
				short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
				start := time.Now()
				err := call.f(short)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					k.errorf("%s at its deadline: %v, want context.DeadlineExceeded", call.name, err)
				}
				if d := time.Since(start); d > 5*time.Second {
					k.errorf("%s returned %v after its deadline of 20ms", call.name, d)
				}
				cctx, cancel := context.WithCancel(ctx)
				time.AfterFunc(5*time.Millisecond, cancel)
				if err := call.f(cctx); !errors.Is(err, context.Canceled) {
					k.errorf("%s cancelled: %v, want context.Canceled", call.name, err)
				}
				cancel()
			}
			// The requests survive the timeouts.
			if err := commandAck(ctx, c, 1, 0); err != nil {
				return err
			}
			if st, err := nr.Wait(ctx); err != nil {
				k.errorf("notification Wait after the timeouts: %v", err)
			} else {
				k.status("after the timeouts", st, 1, 5)
			}
			if _, err := th.Wait(ctx); err != nil {
				k.errorf("threshold Wait after the timeouts: %v", err)
			}
			k.ok("WaitCounter", w.WaitCounter(ctx, 0, 1))
			if v, err := w.WaitSignal(ctx, 1, narma.CmpEQ, 42); err != nil || v != 42 {
				k.errorf("WaitSignal after the timeouts: %d, %v", v, err)
			}
			if err := stopServing(ctx, c, 1); err != nil {
				return err
			}
		} else {
			if err := w.LockAll(ctx, 0); err != nil {
				return err
			}
			err := serve(ctx, c, func([]int64) error {
				if err := w.PutNotify(nil, 0, 0, narma.Tag(5)); err != nil {
					return err
				}
				if err := w.PutNotify(nil, 0, 0, narma.Counter(0)); err != nil {
					return err
				}
				if err := w.PutNotify(nil, 0, 0, narma.Signal(1, 42, narma.SignalSet)); err != nil {
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
