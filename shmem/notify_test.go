package shmem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/narma-rma/narma"
)

// Counting puts: a PE's count says how many counting puts have landed
// there, and their data is visible when CT.Wait returns; counting puts
// from every PE at once are all counted; NBI ones count when they land;
// Get and Set read and reset the own count; a freed CT refuses every call
// and its counter comes back at zero.
func TestCountingPuts(t *testing.T) {
	run(t, 4, func(ctx context.Context, w *World) error {
		me, n := w.MyPE(), w.NPEs()
		const per = 50 // counting puts from each PE to each PE
		buf := alloc[int64](ctx, w, n*per)
		ct, err := CTCreate(ctx, w)
		if err != nil {
			return err
		}
		if v, err := ct.Get(); v != 0 || err != nil {
			return fmt.Errorf("fresh CT: %d, %v", v, err)
		}
		must(w.BarrierAll(ctx)) // counting puts may start as soon as CTCreate returns
		for k := 0; k < per; k++ {
			for d := 0; d < n; d++ {
				pe := (me + d) % n
				src := []int64{int64(1000*me + k)}
				dst := buf.At(me*per + k)
				if k%2 == 0 {
					must(PutCT(ctx, ct, dst, src, pe))
				} else {
					must(PutCTNBI(ct, dst, src, pe))
				}
			}
		}
		must(w.Quiet(ctx))
		must(ct.Wait(ctx, uint64(n*per)))
		for src := 0; src < n; src++ {
			for k := 0; k < per; k++ {
				if got := buf.At(src*per + k).Local(w)[0]; got != int64(1000*src+k) {
					return fmt.Errorf("PE %d: put %d from PE %d holds %d", me, k, src, got)
				}
			}
		}
		if v, err := ct.Get(); v != uint64(n*per) || err != nil {
			return fmt.Errorf("count %d, %v; want %d", v, err, n*per)
		}
		must(w.BarrierAll(ctx)) // every count is in before the reset
		must(ct.Set(0))
		must(w.BarrierAll(ctx))
		// A pure count (no data) from the left neighbour, late enough for
		// this PE to sleep in Wait.
		if me > 0 {
			time.Sleep(time.Millisecond)
		}
		must(PutCT(ctx, ct, buf.Slice(0, 0), nil, (me+1)%n))
		must(ct.Wait(ctx, 1))
		if v, err := ct.Get(); v != 1 || err != nil {
			return fmt.Errorf("count after a pure count: %d, %v", v, err)
		}
		// A wait that nothing satisfies ends with ctx.
		tctx, cancel := context.WithTimeout(ctx, 2*time.Millisecond)
		defer cancel()
		if err := ct.Wait(tctx, 2); !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("Wait past the deadline: %v", err)
		}
		must(ct.Free(ctx))
		for _, err := range []error{
			ct.Set(1), ct.Wait(ctx, 0), PutCT(ctx, ct, buf, nil, 0), PutCTNBI(ct, buf, nil, 0), ct.Free(ctx),
			func() error { _, err := ct.Get(); return err }(),
		} {
			if !errors.Is(err, narma.ErrFreed) {
				return fmt.Errorf("call on a freed CT: %v", err)
			}
		}
		ct2, err := CTCreate(ctx, w) // reuses the counter, at zero
		if err != nil {
			return err
		}
		if v, err := ct2.Get(); v != 0 || err != nil || ct2.i != ct.i {
			return fmt.Errorf("CT after free: index %d (was %d), count %d, %v", ct2.i, ct.i, v, err)
		}
		return ct2.Free(ctx)
	})
}

// Put with signal: the signal word is updated (set or added to) after
// the data has landed, SignalWaitUntil returns its value then, and adds
// from every PE are all applied.
func TestPutSignal(t *testing.T) {
	run(t, 4, func(ctx context.Context, w *World) error {
		me, n := w.MyPE(), w.NPEs()
		const msgs = 40
		data := alloc[float64](ctx, w, n*msgs)
		sigs := alloc[uint64](ctx, w, n) // sigs.At(pe): set by PE pe
		total := alloc[uint64](ctx, w, 1)
		next, prev := (me+1)%n, (me+n-1)%n
		for i := 0; i < msgs; i++ {
			src := []float64{float64(me) + float64(i)/100}
			dst := data.At(me*msgs + i)
			if i%2 == 0 {
				must(PutSignal(ctx, w, dst, src, sigs.At(me), uint64(i+1), SignalSet, next))
			} else {
				must(PutSignalNBI(w, dst, src, sigs.At(me), uint64(i+1), SignalSet, next))
				must(w.Quiet(ctx))
			}
			must(PutSignal(ctx, w, data.Slice(0, 0), nil, total, uint64(me+1), SignalAdd, 0))
			// The stream from the left neighbour: when its signal says i+1,
			// message i (and every earlier one) is in place.
			v, err := SignalWaitUntil(ctx, w, sigs.At(prev), CmpGE, uint64(i+1))
			if err != nil || v < uint64(i+1) {
				return fmt.Errorf("SignalWaitUntil: %d, %v", v, err)
			}
			for k := 0; k < int(v); k++ {
				if got, want := data.At(prev*msgs + k).Local(w)[0], float64(prev)+float64(k)/100; got != want {
					return fmt.Errorf("PE %d: message %d from %d is %v, want %v (signal %d)", me, k, prev, got, want, v)
				}
			}
		}
		if me == 0 {
			want := uint64(0)
			for pe := 0; pe < n; pe++ {
				want += uint64(pe+1) * msgs
			}
			v, err := SignalWaitUntil(ctx, w, total, CmpEQ, want)
			if v != want || err != nil {
				return fmt.Errorf("sum of signal adds: %d, %v; want %d", v, err, want)
			}
			if v, err := SignalFetch(w, total); v != want || err != nil {
				return fmt.Errorf("SignalFetch: %d, %v", v, err)
			}
			for _, c := range []struct {
				cmp Cmp
				v   uint64
			}{{CmpNE, want + 1}, {CmpGT, want - 1}, {CmpLT, want + 1}, {CmpLE, want}} {
				if v, err := SignalWaitUntil(ctx, w, total, c.cmp, c.v); v != want || err != nil {
					return fmt.Errorf("SignalWaitUntil(%d, %d): %d, %v", c.cmp, c.v, v, err)
				}
			}
			tctx, cancel := context.WithTimeout(ctx, 2*time.Millisecond)
			defer cancel()
			if _, err := SignalWaitUntil(tctx, w, total, CmpGT, want); !errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("SignalWaitUntil past the deadline: %v", err)
			}
		}
		if v, err := SignalFetch(w, sigs.At(prev)); v != msgs || err != nil {
			return fmt.Errorf("last signal from %d: %d, %v", prev, v, err)
		}
		// The signal word is a word of the heap like any other.
		if got := sigs.Local(w); !slices.Equal(got[prev:prev+1], []uint64{msgs}) {
			return fmt.Errorf("signal words %v", got)
		}
		return nil
	})
}
