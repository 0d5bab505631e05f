package narma_test

// Bad input to the data-movement calls returns the right sentinel error,
// with a message naming the call and the bad value, and writes nothing: not
// the target window, not the origin's result buffers, not later in the
// epoch's closing call.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/narma-rma/narma"
)

// badCall is one erroneous data-movement call. do issues it on the int64
// window w or the float64 window fw, to target t, in a job of n ranks.
type badCall struct {
	name     string
	call     string // the call the message must name
	sentinel error
	values   []string // strings the message must contain (the bad value)
	do       func(w *narma.Win[int64], fw *narma.Win[float64], n, t int, out []int64, fout []float64) error
}

// winLen is the length of the windows of TestDataMovementErrors.
const winLen = 8

func badCalls(n int) []badCall {
	N := strconv.Itoa(n)
	one := []int64{-1}
	two := []int64{-1, -1}
	three := []int64{-1, -1, -1}
	six := []int64{-1, -1, -1, -1, -1, -1}
	nine := make([]int64, 9)
	var res int64
	var fres float64
	return []badCall{
		// Ranks outside the communicator.
		{"Put to rank n", "Put", narma.ErrRank, []string{N}, func(w *narma.Win[int64], _ *narma.Win[float64], n, _ int, _ []int64, _ []float64) error {
			return w.Put(one, n, 0)
		}},
		{"Put to rank -1", "Put", narma.ErrRank, []string{"-1"}, func(w *narma.Win[int64], _ *narma.Win[float64], n, _ int, _ []int64, _ []float64) error {
			return w.Put(one, -1, 0)
		}},
		{"Get from rank n", "Get", narma.ErrRank, []string{N}, func(w *narma.Win[int64], _ *narma.Win[float64], n, _ int, out []int64, _ []float64) error {
			return w.Get(out[:2], n, 0)
		}},
		{"Accumulate to rank n+3", "Accumulate", narma.ErrRank, []string{strconv.Itoa(n + 3)}, func(w *narma.Win[int64], _ *narma.Win[float64], n, _ int, _ []int64, _ []float64) error {
			return w.Accumulate(one, n+3, 0, narma.Sum)
		}},
		{"GetAccumulate to rank -3", "GetAccumulate", narma.ErrRank, []string{"-3"}, func(w *narma.Win[int64], _ *narma.Win[float64], n, _ int, out []int64, _ []float64) error {
			return w.GetAccumulate(one, out[:1], -3, 0, narma.Replace) // (-2 is ProcNull)
		}},
		{"FetchAndOp to rank n", "FetchAndOp", narma.ErrRank, []string{N}, func(w *narma.Win[int64], _ *narma.Win[float64], n, _ int, _ []int64, _ []float64) error {
			return w.FetchAndOp(1, &res, n, 0, narma.Sum)
		}},
		{"CompareAndSwap to rank n", "CompareAndSwap", narma.ErrRank, []string{N}, func(w *narma.Win[int64], _ *narma.Win[float64], n, _ int, _ []int64, _ []float64) error {
			return w.CompareAndSwap(0, 1, &res, n, 0)
		}},
		{"PutStrided to rank n", "Put", narma.ErrRank, []string{N}, func(w *narma.Win[int64], _ *narma.Win[float64], n, _ int, _ []int64, _ []float64) error {
			return w.PutStrided(three, narma.Vector(2, 1, 2), n, 0, narma.Contiguous)
		}},

		// Displacements and lengths outside the target window.
		{"Put at disp -1", "Put", narma.ErrBounds, []string{"-1"}, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.Put(one, t, -1)
		}},
		{"Put at disp beyond the window", "Put", narma.ErrBounds, []string{"9"}, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.Put(one, t, winLen+1)
		}},
		{"Put at disp = window length", "Put", narma.ErrBounds, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.Put(one, t, winLen)
		}},
		{"Put overflowing the end", "Put", narma.ErrBounds, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.Put(three, t, winLen-2)
		}},
		{"Put of more than the window", "Put", narma.ErrBounds, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.Put(nine, t, 0)
		}},
		{"Put at a huge disp", "Put", narma.ErrBounds, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.Put(one, t, 1<<62)
		}},
		{"Get overflowing the end", "Get", narma.ErrBounds, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, out []int64, _ []float64) error {
			return w.Get(out[:2], t, winLen-1)
		}},
		{"Get at disp -3", "Get", narma.ErrBounds, []string{"-3"}, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, out []int64, _ []float64) error {
			return w.Get(out[:1], t, -3)
		}},
		{"Accumulate overflowing the end", "Accumulate", narma.ErrBounds, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.Accumulate(two, t, winLen-1, narma.Sum)
		}},
		{"GetAccumulate of more than the window", "GetAccumulate", narma.ErrBounds, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, out []int64, _ []float64) error {
			return w.GetAccumulate(nine, out[:9], t, 0, narma.Replace)
		}},
		{"GetAccumulate(NoOp) overflowing the end", "GetAccumulate", narma.ErrBounds, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, out []int64, _ []float64) error {
			return w.GetAccumulate(nil, out[:3], t, winLen-2, narma.NoOp)
		}},
		{"FetchAndOp at disp = window length", "FetchAndOp", narma.ErrBounds, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.FetchAndOp(1, &res, t, winLen, narma.Sum)
		}},
		{"CompareAndSwap at disp -1", "CompareAndSwap", narma.ErrBounds, []string{"-1"}, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.CompareAndSwap(pattern(t, 0), -1, &res, t, -1)
		}},
		{"PutStrided target layout beyond the window", "Put", narma.ErrBounds, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.PutStrided(three, narma.Contiguous, t, 0, narma.Vector(3, 1, 4)) // extent 9
		}},
		{"PutStrided target layout from a late disp", "Put", narma.ErrBounds, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.PutStrided(two, narma.Contiguous, t, 4, narma.Vector(2, 1, 4)) // bytes 4..8
		}},
		{"GetStrided source layout beyond the window", "Get", narma.ErrBounds, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, out []int64, _ []float64) error {
			return w.GetStrided(out[:2], narma.Contiguous, t, 1, narma.Vector(2, 1, 7))
		}},
		{"AccumulateStrided target layout beyond the window", "Accumulate", narma.ErrBounds, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.AccumulateStrided(three, narma.Contiguous, t, 2, narma.Vector(3, 1, 3), narma.Sum)
		}},

		{"FetchAndOp with a nil result", "FetchAndOp", narma.ErrLayout, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.FetchAndOp(1, nil, t, 0, narma.Sum)
		}},
		{"CompareAndSwap with a nil result", "CompareAndSwap", narma.ErrLayout, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.CompareAndSwap(pattern(t, 0), -1, nil, t, 0)
		}},

		// Invalid layouts.
		{"origin Stride < BlockLen", "Put", narma.ErrLayout, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.PutStrided(six, narma.Vector(3, 2, 1), t, 0, narma.Contiguous)
		}},
		{"target Stride < BlockLen", "Put", narma.ErrLayout, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.PutStrided(six, narma.Contiguous, t, 0, narma.Vector(2, 3, 2))
		}},
		{"element counts differ", "Put", narma.ErrLayout, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.PutStrided(three, narma.Vector(2, 1, 2), t, 0, narma.Vector(3, 1, 2))
		}},
		{"contiguous origin, target of more elements", "Put", narma.ErrLayout, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.PutStrided(two, narma.Contiguous, t, 0, narma.Vector(3, 1, 2))
		}},
		{"origin layout beyond the origin buffer", "Put", narma.ErrLayout, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.PutStrided(three, narma.Vector(2, 1, 4), t, 0, narma.Vector(2, 1, 1))
		}},
		{"negative block count", "Put", narma.ErrLayout, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.PutStrided(three, narma.Vector(-1, 1, 1), t, 0, narma.Vector(-1, 1, 1))
		}},
		{"negative block length", "Put", narma.ErrLayout, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.PutStrided(three, narma.Contiguous, t, 0, narma.Vector(1, -3, 1))
		}},
		{"GetStrided element counts differ", "Get", narma.ErrLayout, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, out []int64, _ []float64) error {
			return w.GetStrided(out[:4], narma.Vector(2, 1, 2), t, 0, narma.Vector(1, 3, 3))
		}},
		{"AccumulateStrided element counts differ", "Accumulate", narma.ErrLayout, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.AccumulateStrided(six, narma.Vector(3, 2, 2), t, 0, narma.Vector(2, 2, 3), narma.Sum)
		}},
		{"GetAccumulate result shorter than src", "GetAccumulate", narma.ErrLayout, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, out []int64, _ []float64) error {
			return w.GetAccumulate(three, out[:2], t, 0, narma.Sum)
		}},

		// Operations not defined on the element type, or unknown.
		{"Accumulate with Op(0)", "Accumulate", narma.ErrOp, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.Accumulate(one, t, 0, narma.Op(0))
		}},
		{"Accumulate with Op(200)", "Accumulate", narma.ErrOp, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.Accumulate(one, t, 0, narma.Op(200))
		}},
		{"FetchAndOp with Op(99)", "FetchAndOp", narma.ErrOp, nil, func(w *narma.Win[int64], _ *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return w.FetchAndOp(1, &res, t, 0, narma.Op(99))
		}},
		{"Band on float64", "Accumulate", narma.ErrOp, nil, func(_ *narma.Win[int64], fw *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return fw.Accumulate([]float64{1}, t, 0, narma.Band)
		}},
		{"Bor on float64", "Accumulate", narma.ErrOp, nil, func(_ *narma.Win[int64], fw *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return fw.Accumulate([]float64{1, 2}, t, 1, narma.Bor)
		}},
		{"Bxor on float64 (GetAccumulate)", "GetAccumulate", narma.ErrOp, nil, func(_ *narma.Win[int64], fw *narma.Win[float64], _, t int, _ []int64, fout []float64) error {
			return fw.GetAccumulate([]float64{1}, fout[:1], t, 0, narma.Bxor)
		}},
		{"Band on float64 (FetchAndOp)", "FetchAndOp", narma.ErrOp, nil, func(_ *narma.Win[int64], fw *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return fw.FetchAndOp(1, &fres, t, 0, narma.Band)
		}},
		{"Band on float64 (AccumulateStrided)", "Accumulate", narma.ErrOp, nil, func(_ *narma.Win[int64], fw *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return fw.AccumulateStrided([]float64{1, 2, 3}, narma.Vector(2, 1, 2), t, 0, narma.Vector(2, 1, 2), narma.Band)
		}},
		{"CompareAndSwap on float64", "CompareAndSwap", narma.ErrOp, nil, func(_ *narma.Win[int64], fw *narma.Win[float64], _, t int, _ []int64, _ []float64) error {
			return fw.CompareAndSwap(float64(t), -1, &fres, t, 0)
		}},
	}
}

// TestDataMovementErrors: every erroneous data-movement call, issued inside
// an open access epoch in every mode and strategy, returns its sentinel
// with a message naming the call (and the bad value where given), writes
// neither the target window nor the origin's buffers, and leaves the epoch
// usable: a valid put after the errors lands.
func TestDataMovementErrors(t *testing.T) {
	const n = 3
	forModes(t, func(t *testing.T, md mode, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			right, left := (me+1)%n, (me+n-1)%n
			k := newChecks(c)
			w, err := allocPattern(c, winLen, st)
			if err != nil {
				return err
			}
			fw, err := narma.Allocate[float64](ctx, c, winLen, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			for i := range fw.Local() {
				fw.Local()[i] = float64(pattern(me, i))
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			out := make([]int64, 16)
			fout := make([]float64, 4)
			for i := range out {
				out[i] = -77
			}
			for i := range fout {
				fout[i] = -77
			}
			targets := []int{left, right}
			slices.Sort(targets)
			targets = slices.Compact(targets)
			e, fe := newEpoch(ctx, w, md, targets, targets), newEpoch(ctx, fw, md, targets, targets)
			if err := e.begin(); err != nil {
				return err
			}
			if err := fe.begin(); err != nil {
				return err
			}
			for _, bc := range badCalls(n) {
				k.isIn(bc.name, bc.do(w, fw, n, right, out, fout), bc.sentinel, bc.call, bc.values...)
			}
			// The epoch still works after the errors.
			k.ok("valid Put after the errors", w.Put([]int64{-5}, right, winLen-1))
			if err := fe.end(); err != nil {
				return err
			}
			if err := e.end(); err != nil {
				return err
			}
			if err := fe.finish(); err != nil {
				return err
			}
			if err := e.finish(); err != nil {
				return err
			}
			for i, v := range out {
				if v != -77 {
					k.errorf("origin buffer [%d] = %d after refused gets, want -77", i, v)
				}
			}
			for i, v := range fout {
				if v != -77 {
					k.errorf("float origin buffer [%d] = %v after refused calls, want -77", i, v)
				}
			}
			err = barrierThen(c, func() error {
				want := make([]int64, winLen)
				fillPattern(want, me)
				want[winLen-1] = -5
				if !slices.Equal(w.Local(), want) {
					return fmt.Errorf("target window %v after refused calls, want %v", w.Local(), want)
				}
				for i, v := range fw.Local() {
					if v != float64(pattern(me, i)) {
						return fmt.Errorf("float target window %v changed by refused calls", fw.Local())
					}
				}
				return nil
			})
			if err != nil {
				k.errorf("%v", err)
			}
			if err := k.err(); err != nil {
				return err
			}
			if err := fw.Free(ctx); err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

// TestHugeLayoutRefused: layouts whose extent overflows int are refused
// (ErrBounds or ErrLayout) and write nothing, and do not panic: at the
// target and at the origin.
func TestHugeLayoutRefused(t *testing.T) {
	const n = 2
	type huge struct {
		name string
		do   func(w *narma.Win[int64], t int, buf []int64) error
	}
	cases := []huge{
		{"target Vector(2,1,2^62-1) from disp 1", func(w *narma.Win[int64], t int, _ []int64) error {
			return w.PutStrided([]int64{-1, -2}, narma.Contiguous, t, 1, narma.Vector(2, 1, 1<<62-1))
		}},
		{"target Vector(2,1,2^61) from disp 0", func(w *narma.Win[int64], t int, _ []int64) error {
			return w.PutStrided([]int64{-1, -2}, narma.Contiguous, t, 0, narma.Vector(2, 1, 1<<61))
		}},
		{"accumulate target Vector(3,1,2^62)", func(w *narma.Win[int64], t int, _ []int64) error {
			return w.AccumulateStrided([]int64{1, 2, 3}, narma.Contiguous, t, 0, narma.Vector(3, 1, 1<<62), narma.Sum)
		}},
		{"get with origin Vector(2,1,2^62-1)", func(w *narma.Win[int64], t int, buf []int64) error {
			return w.GetStrided(buf[:2], narma.Vector(2, 1, 1<<62-1), t, 0, narma.Contiguous)
		}},
		{"put with origin Vector(2,1,2^62-1)", func(w *narma.Win[int64], t int, buf []int64) error {
			return w.PutStrided(buf[:2], narma.Vector(2, 1, 1<<62-1), t, 0, narma.Contiguous)
		}},
		{"huge block count", func(w *narma.Win[int64], t int, _ []int64) error {
			return w.PutStrided([]int64{1}, narma.Contiguous, t, 0, narma.Vector(1<<62, 1, 4))
		}},
	}
	for _, st := range strategies {
		for _, hc := range cases {
			t.Run(st.String()+"/"+hc.name, func(t *testing.T) {
				run(t, n, func(c *narma.Comm) (err error) {
					ctx := c.Context()
					me := c.Rank()
					right := (me + 1) % n
					w, err := allocPattern(c, 4, st)
					if err != nil {
						return err
					}
					buf := []int64{-9, -9, -9, -9}
					if err := w.Fence(ctx, 0); err != nil {
						return err
					}
					callErr := func() (err error) {
						defer func() {
							if p := recover(); p != nil {
								err = fmt.Errorf("call panicked: %v", p)
							}
						}()
						return hc.do(w, right, buf)
					}()
					// Close the epoch even if the call misbehaved, so that the
					// job does not hang.
					fenceErr := func() (err error) {
						defer func() {
							if p := recover(); p != nil {
								err = fmt.Errorf("closing Fence panicked: %v", p)
							}
						}()
						return w.Fence(ctx, narma.NoSucceed)
					}()
					k := newChecks(c)
					if !errors.Is(callErr, narma.ErrBounds) && !errors.Is(callErr, narma.ErrLayout) {
						k.errorf("got %v, want an error wrapping ErrBounds or ErrLayout", callErr)
					}
					k.ok("closing Fence", fenceErr)
					if !slices.Equal(buf, []int64{-9, -9, -9, -9}) {
						k.errorf("origin buffer written: %v", buf)
					}
					if err := barrierThen(c, func() error { return checkPattern(w.Local(), me) }); err != nil {
						k.errorf("%v", err)
					}
					return k.err()
				})
			})
		}
	}
}

// TestRMAOutsideEpoch: data movement to a target outside every open access
// epoch returns ErrNotInEpoch and writes nothing: before the first fence,
// after Fence(NoSucceed), to a rank outside the Start group, with only an
// exposure epoch open, to a rank not locked, after Unlock, after
// UnlockAll, after Complete.
func TestRMAOutsideEpoch(t *testing.T) {
	const n = 3
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			right, left := (me+1)%n, (me+n-1)%n
			k := newChecks(c)
			w, err := allocPattern(c, 4, st)
			if err != nil {
				return err
			}
			out := []int64{-7, -7}
			var res int64 = -7
			refused := func(where string, t int) {
				k.isIn(where+": Put", w.Put([]int64{-1}, t, 0), narma.ErrNotInEpoch, "Put", strconv.Itoa(t))
				k.is(where+": Get", w.Get(out, t, 0), narma.ErrNotInEpoch, "Get")
				k.is(where+": Accumulate", w.Accumulate([]int64{1}, t, 1, narma.Sum), narma.ErrNotInEpoch, "Accumulate")
				k.is(where+": GetAccumulate", w.GetAccumulate([]int64{1}, out[:1], t, 1, narma.Replace), narma.ErrNotInEpoch, "GetAccumulate")
				k.is(where+": FetchAndOp", w.FetchAndOp(1, &res, t, 2, narma.Sum), narma.ErrNotInEpoch, "FetchAndOp")
				k.is(where+": CompareAndSwap", w.CompareAndSwap(pattern(t, 3), -1, &res, t, 3), narma.ErrNotInEpoch, "CompareAndSwap")
				k.is(where+": PutStrided", w.PutStrided([]int64{-1, -1}, narma.Contiguous, t, 0, narma.Vector(2, 1, 2)), narma.ErrNotInEpoch, "Put")
			}
			step := func() error { return c.Barrier(ctx) }

			refused("before the first fence", right)
			if err := w.Fence(ctx, narma.NoPrecede); err != nil {
				return err
			}
			if err := w.Fence(ctx, narma.NoSucceed); err != nil {
				return err
			}
			refused("after Fence(NoSucceed)", right)
			if err := step(); err != nil {
				return err
			}

			// PSCW: access group {right}; exposure to {left}.
			if err := w.Post([]int{left}, 0); err != nil {
				return err
			}
			refused("exposure epoch only", right)
			if err := w.Start(ctx, []int{right}, 0); err != nil {
				return err
			}
			refused("rank outside the Start group", left)
			if err := w.Complete(ctx); err != nil {
				return err
			}
			refused("after Complete", right)
			if err := w.Wait(ctx); err != nil {
				return err
			}
			if err := step(); err != nil {
				return err
			}

			// Lock on right only.
			if err := w.Lock(ctx, narma.Shared, right, 0); err != nil {
				return err
			}
			refused("rank not locked", left)
			if err := w.Unlock(ctx, right); err != nil {
				return err
			}
			refused("after Unlock", right)
			if err := w.LockAll(ctx, 0); err != nil {
				return err
			}
			if err := w.UnlockAll(ctx); err != nil {
				return err
			}
			refused("after UnlockAll", right)

			if !slices.Equal(out, []int64{-7, -7}) || res != -7 {
				k.errorf("refused calls wrote origin buffers: %v, %d", out, res)
			}
			if err := barrierThen(c, func() error { return checkPattern(w.Local(), me) }); err != nil {
				k.errorf("%v", err)
			}
			if err := k.err(); err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

// TestFreedWindow: every call on a freed window returns ErrFreed, names the
// call, and writes nothing (the memory of a created window outlives it).
func TestFreedWindow(t *testing.T) {
	const n = 2
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			right := (me + 1) % n
			k := newChecks(c)
			buf := narma.AllocMem[int64](4)
			fillPattern(buf, me)
			w, err := narma.Create(ctx, c, buf, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			if err := w.Fence(ctx, 0); err != nil {
				return err
			}
			if err := w.Fence(ctx, narma.NoSucceed); err != nil {
				return err
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			out := []int64{-7}
			var res int64 = -7
			var req *narma.Request
			calls := []struct {
				call string
				err  error
			}{
				{"Put", w.Put([]int64{-1}, right, 0)},
				{"Get", w.Get(out, right, 0)},
				{"Accumulate", w.Accumulate([]int64{1}, right, 0, narma.Sum)},
				{"GetAccumulate", w.GetAccumulate([]int64{1}, out, right, 0, narma.Sum)},
				{"FetchAndOp", w.FetchAndOp(1, &res, right, 0, narma.Sum)},
				{"CompareAndSwap", w.CompareAndSwap(pattern(right, 0), -1, &res, right, 0)},
				{"Put", w.PutStrided([]int64{-1}, narma.Contiguous, right, 0, narma.Contiguous)},
				{"Fence", w.Fence(ctx, 0)},
				{"Post", w.Post([]int{right}, 0)},
				{"Start", w.Start(ctx, []int{right}, 0)},
				{"Complete", w.Complete(ctx)},
				{"Wait", w.Wait(ctx)},
				{"Lock", w.Lock(ctx, narma.Exclusive, right, 0)},
				{"Unlock", w.Unlock(ctx, right)},
				{"LockAll", w.LockAll(ctx, 0)},
				{"UnlockAll", w.UnlockAll(ctx)},
				{"Flush", w.Flush(ctx, right)},
				{"FlushAll", w.FlushAll(ctx)},
				{"Sync", w.Sync()},
				{"Free", w.Free(ctx)},
			}
			for _, x := range calls {
				k.is(x.call+" on a freed window", x.err, narma.ErrFreed, x.call)
			}
			_, terr := w.Test()
			k.is("Test on a freed window", terr, narma.ErrFreed, "Test")
			req, rerr := w.Rput([]int64{-1}, right, 0)
			k.is("Rput on a freed window", rerr, narma.ErrFreed, "")
			if req != nil {
				k.errorf("Rput on a freed window returned a request")
			}
			_, rerr = w.Rget(out, right, 0)
			k.is("Rget on a freed window", rerr, narma.ErrFreed, "")
			if out[0] != -7 || res != -7 {
				k.errorf("calls on a freed window wrote origin buffers: %d, %d", out[0], res)
			}
			if err := barrierThen(c, func() error { return checkPattern(buf, me) }); err != nil {
				k.errorf("memory of the freed window: %v", err)
			}
			return k.err()
		})
	})
}

// TestFreedRequest: calls on a freed request return ErrFreed.
func TestFreedRequest(t *testing.T) {
	const n = 2
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			right := (me + 1) % n
			k := newChecks(c)
			w, err := allocPattern(c, 2, st)
			if err != nil {
				return err
			}
			check := func(what string, r *narma.Request) {
				k.ok(what+": Free", r.Free())
				_, err := r.Wait(ctx)
				k.is(what+": Wait after Free", err, narma.ErrFreed, "Wait")
				_, _, err = r.Test()
				k.is(what+": Test after Free", err, narma.ErrFreed, "Test")
				k.is(what+": Free after Free", r.Free(), narma.ErrFreed, "Free")
			}
			if err := w.Lock(ctx, narma.Exclusive, right, 0); err != nil {
				return err
			}
			r, err := w.Rput([]int64{-1}, right, 0)
			if err != nil {
				return err
			}
			if _, err := r.Wait(ctx); err != nil {
				return err
			}
			check("Rput", r)
			if err := w.Unlock(ctx, right); err != nil {
				return err
			}
			buf := []byte{7, 7, 7}
			r, err = c.Irecv(buf, right, 3)
			if err != nil {
				return err
			}
			check("Irecv", r)
			r, err = c.Isend(ctx, []byte{1}, right, 4)
			if err != nil {
				return err
			}
			check("Isend", r)
			// Consume the Isend's message so nothing is left over.
			if _, err := c.Recv(ctx, buf[:1], (me+n-1)%n, 4); err != nil {
				return err
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

// TestCreateNotAllocated: Create over memory that AllocMem did not return is
// refused with ErrNotAllocated on every rank (so no rank is left in the
// collective).
func TestCreateNotAllocated(t *testing.T) {
	run(t, 3, func(c *narma.Comm) error {
		k := newChecks(c)
		mine := []int64{1, 2, 3}
		w, err := narma.Create(c.Context(), c, mine)
		k.is("Create over Go memory", err, narma.ErrNotAllocated, "Create")
		if w != nil {
			k.errorf("Create over Go memory returned a window")
		}
		// A slice reaching past the length of an AllocMem block (into its
		// padding).
		blk := narma.AllocMem[int8](3)
		if cap(blk) > len(blk) {
			bw, err := narma.Create(c.Context(), c, blk[:cap(blk)])
			k.is("Create past the end of an AllocMem block", err, narma.ErrNotAllocated, "Create")
			if bw != nil {
				k.errorf("Create past the end of an AllocMem block returned a window")
			}
		}
		if !slices.Equal(mine, []int64{1, 2, 3}) {
			k.errorf("refused Create changed the buffer: %v", mine)
		}
		k.ok("FreeMem", narma.FreeMem(blk))
		// The communicator still works: a valid window can be created.
		good := narma.AllocMem[int64](1)
		gw, err := narma.Create(c.Context(), c, good)
		if err != nil {
			return err
		}
		if err := gw.Free(c.Context()); err != nil {
			return err
		}
		return k.err()
	})
}

// TestInvalidArguments: other invalid arguments return ErrInvalid (or
// ErrRank for ranks) and change nothing.
func TestInvalidArguments(t *testing.T) {
	run(t, 2, func(c *narma.Comm) error {
		ctx := c.Context()
		k := newChecks(c)
		w, err := narma.Allocate[int64](ctx, c, -1)
		k.is("Allocate of -1 elements", err, narma.ErrInvalid, "Allocate")
		if w != nil {
			k.errorf("Allocate of -1 elements returned a window")
		}
		_, err = narma.Allocate[int64](ctx, c, 2, narma.WithDispUnit(-8))
		k.is("Allocate with a negative displacement unit", err, narma.ErrInvalid, "Allocate")
		_, err = narma.Allocate[int64](ctx, c, 2, narma.WithStrategy(narma.Strategy(9)))
		k.is("Allocate with an unknown strategy", err, narma.ErrInvalid, "Allocate")
		w, err = allocPattern(c, 2, narma.Immediate)
		if err != nil {
			return err
		}
		k.is("Lock of kind 0", w.Lock(ctx, narma.LockType(0), 0, 0), narma.ErrInvalid, "Lock")
		k.is("Lock of kind 7", w.Lock(ctx, narma.LockType(7), 0, 0), narma.ErrInvalid, "Lock")
		k.isIn("Lock of rank n", w.Lock(ctx, narma.Exclusive, 2, 0), narma.ErrRank, "Lock", "2")
		k.is("Unlock of rank -1", w.Unlock(ctx, -1), narma.ErrRank, "Unlock")
		k.is("Flush of rank n", w.Flush(ctx, 2), narma.ErrRank, "Flush")
		// Assertions a call does not accept (MPI's lists).
		k.is("Fence(NoCheck)", w.Fence(ctx, narma.NoCheck), narma.ErrInvalid, "Fence")
		k.is("Post(NoPrecede)", w.Post([]int{0}, narma.NoPrecede), narma.ErrInvalid, "Post")
		k.is("Start(NoStore)", w.Start(ctx, []int{0}, narma.NoStore), narma.ErrInvalid, "Start")
		k.is("Lock(NoSucceed)", w.Lock(ctx, narma.Shared, 0, narma.NoSucceed), narma.ErrInvalid, "Lock")
		k.is("LockAll(NoPut)", w.LockAll(ctx, narma.NoPut), narma.ErrInvalid, "LockAll")
		k.is("Put after refused synchronization calls", w.Put([]int64{1}, 0, 0), narma.ErrNotInEpoch, "Put")
		// None of them opened an epoch: Free succeeds.
		if err := k.err(); err != nil {
			return err
		}
		return w.Free(ctx)
	})
}

// TestErrorMessagesNameAPICallAndRank: the OpError of a failed call carries
// the public name of the call (as a user would search for it) and the
// calling rank, as the documentation of the errors promises.
func TestErrorMessagesNameAPICallAndRank(t *testing.T) {
	const n = 2
	run(t, n, func(c *narma.Comm) error {
		ctx := c.Context()
		me := c.Rank()
		k := newChecks(c)
		w, err := allocPattern(c, 2, narma.Immediate)
		if err != nil {
			return err
		}
		cases := []struct {
			call string
			err  error
		}{}
		add := func(call string, err error) {
			cases = append(cases, struct {
				call string
				err  error
			}{call, err})
		}
		_, err = w.Rput([]int64{1}, 0, 0)
		add("Rput", err)
		_, err = w.Rget([]int64{1}, 0, 0)
		add("Rget", err)
		_, err = w.Raccumulate([]int64{1}, 0, 0, narma.Sum)
		add("Raccumulate", err)
		_, err = w.RgetAccumulate([]int64{1}, []int64{1}, 0, 0, narma.Sum)
		add("RgetAccumulate", err)
		add("Put", w.Put([]int64{1}, n, 0))
		add("FlushLocal", w.FlushLocal(ctx, 0))
		add("FlushLocalAll", w.FlushLocalAll(ctx))
		add("Unlock", w.Unlock(ctx, 0))
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if err := w.Free(ctx); err != nil {
			return err
		}
		add("Put", w.Put([]int64{1}, 0, 0))
		add("Fence", w.Fence(ctx, 0))
		r, err := c.Isend(ctx, nil, me, 0)
		if err != nil {
			return err
		}
		if _, err := c.Recv(ctx, nil, me, 0); err != nil {
			return err
		}
		k.ok("Free", r.Free())
		_, err = r.Wait(ctx)
		add("Wait", err)
		for _, x := range cases {
			var oe *narma.OpError
			switch {
			case x.err == nil:
				k.errorf("%s: no error", x.call)
			case !errors.As(x.err, &oe):
				k.errorf("%s: error %q is not an *OpError", x.call, x.err)
			default:
				if oe.Op != x.call || !strings.HasPrefix(x.err.Error(), x.call+" ") {
					k.errorf("error %q names the call %q, want %q", x.err, oe.Op, x.call)
				}
				if oe.Rank != me {
					k.errorf("%s: error %q reports rank %d, want the calling rank %d", x.call, x.err, oe.Rank, me)
				}
			}
		}
		return k.err()
	})
}

// TestOpErrorFoundByAsAndAsType: errors.As and errors.AsType find the
// *OpError of a failed call, whether the engine made it or the public
// package did, bare or wrapped by the program, with the fields its
// message shows; a nil Request fails with ErrFreed and rank -1 instead of
// crashing.
func TestOpErrorFoundByAsAndAsType(t *testing.T) {
	run(t, 2, func(c *narma.Comm) error {
		ctx := c.Context()
		k := newChecks(c)
		w, err := narma.Allocate[int64](ctx, c, 4)
		if err != nil {
			return err
		}
		_, allocErr := narma.Allocate[int64](ctx, c, -1)
		var nilReq *narma.Request
		_, waitErr := nilReq.Wait(ctx)
		cases := []struct {
			name     string
			err      error
			op       string
			rank     int
			detail   string
			sentinel error
		}{
			{"engine's", w.Put([]int64{1}, 5, 0), "Put", c.Rank(), "rank 5 not in [0,2)", narma.ErrRank},
			{"engine's, wrapped", fmt.Errorf("halo: %w", w.Put([]int64{1}, 5, 0)), "Put", c.Rank(), "rank 5 not in [0,2)", narma.ErrRank},
			{"public package's", allocErr, "Allocate", c.Rank(), "-1 elements", narma.ErrInvalid},
			{"nil request", waitErr, "Wait", -1, "nil request", narma.ErrFreed},
			{"WaitAll", narma.WaitAll(ctx, nil, make([]narma.Status, 1)), "WaitAll", -1, "1 statuses for 0 requests", narma.ErrInvalid},
		}
		for _, x := range cases {
			var oe *narma.OpError
			if !errors.As(x.err, &oe) {
				k.errorf("%s: errors.As finds no *OpError in %q", x.name, x.err)
				continue
			}
			oe2, ok := errors.AsType[*narma.OpError](x.err)
			if !ok || oe2 != oe {
				k.errorf("%s: errors.AsType found %v, %v; errors.As %v", x.name, oe2, ok, oe)
			}
			if oe.Op != x.op || oe.Rank != x.rank || oe.Detail != x.detail || !errors.Is(oe.Err, x.sentinel) {
				k.errorf("%s: OpError{%q, %d, %q, %v}, want {%q, %d, %q, %v}", x.name, oe.Op, oe.Rank, oe.Detail, oe.Err, x.op, x.rank, x.detail, x.sentinel)
			}
			if want := fmt.Sprintf("%s (rank %d): %s: %v", x.op, x.rank, x.detail, x.sentinel); oe.Error() != want || !strings.HasSuffix(x.err.Error(), want) {
				k.errorf("%s: message %q (of the OpError %q), want %q", x.name, x.err, oe.Error(), want)
			}
			if !errors.Is(x.err, x.sentinel) {
				k.errorf("%s: %q does not wrap %v", x.name, x.err, x.sentinel)
			}
		}
		if err := w.Free(ctx); err != nil {
			return err
		}
		return k.err()
	})
}

// TestFailedUnlockLeaksNothing: a deferred Unlock that gives up on a
// contended lock (its context expires) must not leave its queued put behind
// to be performed by an unrelated later epoch: either the put happens in a
// retried Unlock of the same epoch, or it never happens.
func TestFailedUnlockLeaksNothing(t *testing.T) {
	const n = 2
	held, failed, released := make(chan struct{}), make(chan struct{}), make(chan struct{})
	retriedOK := false // written by rank 1 before a barrier, read by rank 0 after it
	// Goroutine ranks only: the ranks coordinate through the channels and
	// retriedOK, which processes do not share.
	runLocal(t, n, func(c *narma.Comm) error {
		ctx := c.Context()
		me := c.Rank()
		w, err := allocPattern(c, 2, narma.Deferred)
		if err != nil {
			return err
		}
		if me == 0 {
			// Hold the exclusive lock on our own window.
			if err := w.Lock(ctx, narma.Exclusive, 0, 0); err != nil {
				return err
			}
			if err := w.Put([]int64{pattern(0, 1)}, 0, 1); err != nil {
				return err
			}
			if err := w.Flush(ctx, 0); err != nil {
				return err
			}
			close(held)
			if err := await(c, failed); err != nil {
				return err
			}
			if err := w.Unlock(ctx, 0); err != nil {
				return err
			}
			close(released)
		} else {
			if err := await(c, held); err != nil {
				return err
			}
			if err := w.Lock(ctx, narma.Exclusive, 0, 0); err != nil {
				return err
			}
			if err := w.Put([]int64{666}, 0, 0); err != nil {
				return err
			}
			tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			err := w.Unlock(tctx, 0)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("Unlock on a lock held elsewhere: got %v, want DeadlineExceeded", err)
			}
			close(failed)
			if err := await(c, released); err != nil {
				return err
			}
			retried := w.Unlock(ctx, 0)
			switch {
			case retried == nil:
				// The epoch stayed open and the retry completed it: the
				// put is legitimately done.
				retriedOK = true
			case errors.Is(retried, narma.ErrLock):
				// The epoch is closed. An empty epoch must perform nothing.
				if err := w.Lock(ctx, narma.Shared, 0, 0); err != nil {
					return err
				}
				if err := w.Unlock(ctx, 0); err != nil {
					return err
				}
			default:
				return fmt.Errorf("retried Unlock: %v", retried)
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if me == 0 {
			if got := w.Local()[0]; !retriedOK && got != pattern(0, 0) {
				return fmt.Errorf("the put of an Unlock that failed (and whose epoch was closed) was performed by a later, empty epoch: window[0] = %d", got)
			}
		}
		return nil
	})
}

// TestNilWindowAndRequest: calls on a nil *Win (the result of a failed
// Allocate) and a nil *Request return ErrFreed instead of panicking.
func TestNilWindowAndRequest(t *testing.T) {
	var w *narma.Win[int64]
	var r *narma.Request
	ctx := context.Background()
	var res int64
	calls := []struct {
		name string
		do   func() error
	}{
		{"Put", func() error { return w.Put([]int64{1}, 0, 0) }},
		{"Get", func() error { return w.Get([]int64{1}, 0, 0) }},
		{"Accumulate", func() error { return w.Accumulate([]int64{1}, 0, 0, narma.Sum) }},
		{"GetAccumulate", func() error { return w.GetAccumulate(nil, []int64{1}, 0, 0, narma.NoOp) }},
		{"FetchAndOp", func() error { return w.FetchAndOp(1, &res, 0, 0, narma.Sum) }},
		{"CompareAndSwap", func() error { return w.CompareAndSwap(0, 1, &res, 0, 0) }},
		{"Rput", func() error { _, err := w.Rput([]int64{1}, 0, 0); return err }},
		{"Fence", func() error { return w.Fence(ctx, 0) }},
		{"Post", func() error { return w.Post([]int{0}, 0) }},
		{"Start", func() error { return w.Start(ctx, []int{0}, 0) }},
		{"Complete", func() error { return w.Complete(ctx) }},
		{"Wait", func() error { return w.Wait(ctx) }},
		{"Test", func() error { _, err := w.Test(); return err }},
		{"Lock", func() error { return w.Lock(ctx, narma.Shared, 0, 0) }},
		{"Unlock", func() error { return w.Unlock(ctx, 0) }},
		{"LockAll", func() error { return w.LockAll(ctx, 0) }},
		{"UnlockAll", func() error { return w.UnlockAll(ctx) }},
		{"Flush", func() error { return w.Flush(ctx, 0) }},
		{"FlushAll", func() error { return w.FlushAll(ctx) }},
		{"Sync", func() error { return w.Sync() }},
		{"Free", func() error { return w.Free(ctx) }},
		{"Request.Wait", func() error { _, err := r.Wait(ctx); return err }},
		{"Request.Test", func() error { _, _, err := r.Test(); return err }},
		{"Request.Free", func() error { return r.Free() }},
	}
	for _, x := range calls {
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panicked: %v", p)
				}
			}()
			return x.do()
		}()
		if !errors.Is(err, narma.ErrFreed) {
			t.Errorf("%s on nil: got %v, want an error wrapping ErrFreed", x.name, err)
		}
	}
	if w.Local() != nil {
		t.Errorf("Local of a nil window: %v", w.Local())
	}
}

// TestZeroSizeWindow: a rank may expose no memory; zero-element accesses to
// it succeed and anything longer is refused with ErrBounds.
func TestZeroSizeWindow(t *testing.T) {
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, 2, func(c *narma.Comm) error {
			ctx := c.Context()
			k := newChecks(c)
			w, err := narma.Allocate[int64](ctx, c, 2*c.Rank(), narma.WithStrategy(st))
			if err != nil {
				return err
			}
			if len(w.Local()) != 2*c.Rank() {
				return fmt.Errorf("Local() has %d elements, want %d", len(w.Local()), 2*c.Rank())
			}
			if err := w.Fence(ctx, 0); err != nil {
				return err
			}
			k.ok("Put of nothing to an empty window", w.Put(nil, 0, 0))
			k.ok("Get of nothing from an empty window", w.Get(nil, 0, 0))
			k.is("Put of one element to an empty window", w.Put([]int64{1}, 0, 0), narma.ErrBounds, "Put")
			var res int64
			k.is("FetchAndOp on an empty window", w.FetchAndOp(1, &res, 0, 0, narma.Sum), narma.ErrBounds, "FetchAndOp")
			k.ok("Put to rank 1's window", w.Put([]int64{int64(-1 - c.Rank())}, 1, c.Rank()))
			if err := w.Fence(ctx, narma.NoSucceed); err != nil {
				return err
			}
			if c.Rank() == 1 && !slices.Equal(w.Local(), []int64{-1, -2}) {
				k.errorf("window of rank 1 = %v, want [-1 -2]", w.Local())
			}
			if err := k.err(); err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}
