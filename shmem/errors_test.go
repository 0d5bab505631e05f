package shmem

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/narma-rma/narma"
)

// Misuse returns errors wrapping the right sentinel, and writes nothing.
func TestMisuse(t *testing.T) {
	run(t, 2, func(ctx context.Context, w *World) error {
		me, n := w.MyPE(), w.NPEs()
		x := alloc[int64](ctx, w, 4)
		sig := alloc[uint64](ctx, w, 2)
		freed := alloc[int64](ctx, w, 4)
		must(Free(ctx, w, freed))
		ct, err := CTCreate(ctx, w)
		must(err)
		forged := Sym[int64]{off: w.HeapSize() - 8, n: 2} // past the heap's end
		beyond := Sym[int64]{off: x.off, n: 9}            // past x's end
		between := Sym[int64]{off: x.off + 32, n: 1}      // in x's padding
		one := []int64{7}
		checks := []struct {
			what   string
			err    error
			target error
		}{
			// Addresses that are not inside a live symmetric object.
			{"Put into a freed object", Put(ctx, w, freed, one, 0), ErrNotSymmetric},
			{"PutNBI into a freed object", PutNBI(w, freed.At(0), one, 0), ErrNotSymmetric},
			{"Get from a freed object", Get(ctx, w, []int64{0}, freed, 0), ErrNotSymmetric},
			{"GetNBI from a forged address", GetNBI(w, []int64{0}, forged, 0), ErrNotSymmetric},
			{"P past the heap", P(ctx, w, forged.At(1), 1, 0), ErrNotSymmetric},
			{"G from a freed object", func() error { _, err := G(ctx, w, freed.At(0), 0); return err }(), ErrNotSymmetric},
			{"Put past an object", Put(ctx, w, beyond, make([]int64, 9), 0), ErrNotSymmetric},
			{"Put into padding", Put(ctx, w, between, one, 0), ErrNotSymmetric},
			{"Put into an out-of-range Slice", Put(ctx, w, x.Slice(2, 5), one, 0), ErrNotSymmetric},
			{"AtomicAdd on a freed object", AtomicAdd(ctx, w, freed.At(1), 1, 0), ErrNotSymmetric},
			{"AtomicFetch on an out-of-range At", func() error { _, err := AtomicFetch(ctx, w, x.At(4), 0); return err }(), ErrNotSymmetric},
			{"WaitUntil on a freed object", WaitUntil(ctx, w, freed.At(0), CmpEQ, 0), ErrNotSymmetric},
			{"TestAll on a freed object", func() error { _, err := TestAll(w, freed, nil, CmpEQ, 0); return err }(), ErrNotSymmetric},
			{"PutCT into a freed object", PutCT(ctx, ct, freed, one, 0), ErrNotSymmetric},
			{"PutSignal to a forged signal", PutSignal(ctx, w, x, one, Sym[uint64]{off: w.HeapSize() - 8, n: 1}, 1, SignalSet, 0), ErrNotSymmetric},
			{"Free of a freed object", Free(ctx, w, freed), ErrNotSymmetric},
			{"Free of an out-of-range Slice", Free(ctx, w, x.Slice(3, 1)), ErrNotSymmetric},
			// PEs out of range.
			{"Put to PE -1", Put(ctx, w, x, one, -1), narma.ErrRank},
			{"Get from PE n", Get(ctx, w, []int64{0}, x, n), narma.ErrRank},
			{"P to PE n", P(ctx, w, x.At(0), 1, n), narma.ErrRank},
			{"AtomicFetchAdd on PE n", func() error { _, err := AtomicFetchAdd(ctx, w, x.At(0), 1, n); return err }(), narma.ErrRank},
			{"AtomicCompareSwap on PE -1", func() error { _, err := AtomicCompareSwap(ctx, w, x.At(0), 0, 1, -1); return err }(), narma.ErrRank},
			{"PutCT to PE n", PutCT(ctx, ct, x, one, n), narma.ErrRank},
			{"PutSignal to PE n", PutSignal(ctx, w, x, one, sig.At(0), 1, SignalAdd, n), narma.ErrRank},
			// narma's null rank is no PE.
			{"PutNBI to narma.ProcNull", PutNBI(w, x, one, narma.ProcNull), narma.ErrRank},
			{"PutCTNBI to narma.ProcNull", PutCTNBI(ct, x, one, narma.ProcNull), narma.ErrRank},
			{"AtomicAdd on narma.ProcNull", AtomicAdd(ctx, w, x.At(0), 1, narma.ProcNull), narma.ErrRank},
			{"IGet from narma.ProcNull", IGet(ctx, w, []int64{0}, x, 1, 1, 1, narma.ProcNull), narma.ErrRank},
			{"Barrier with PE n", w.Barrier(ctx, []int{me, n}), narma.ErrRank},
			// Transfers longer than their symmetric object.
			{"Put of 5 into 4", Put(ctx, w, x, make([]int64, 5), 0), narma.ErrBounds},
			{"Get of 3 from 2", Get(ctx, w, make([]int64, 3), x.Slice(0, 2), 0), narma.ErrBounds},
			{"PutCT of 2 into 1", PutCT(ctx, ct, x.At(0), make([]int64, 2), 0), narma.ErrBounds},
			{"PutSignal of 5 into 4", PutSignal(ctx, w, x, make([]int64, 5), sig.At(0), 1, SignalSet, 0), narma.ErrBounds},
			// Element operations on more or less than one element.
			{"AtomicInc on 4 elements", AtomicInc(ctx, w, x, 0), narma.ErrInvalid},
			{"AtomicSwap on 0 elements", func() error { _, err := AtomicSwap(ctx, w, x.Slice(0, 0), 1, 0); return err }(), narma.ErrInvalid},
			{"P into 2 elements", P(ctx, w, x.Slice(0, 2), 1, 0), narma.ErrInvalid},
			{"WaitUntil on 4 elements", WaitUntil(ctx, w, x, CmpEQ, 0), narma.ErrInvalid},
			{"Test on 4 elements", func() error { _, err := Test(w, x, CmpEQ, 0); return err }(), narma.ErrInvalid},
			{"PutSignal with 2 signal words", PutSignal(ctx, w, x, one, sig, 1, SignalSet, 0), narma.ErrInvalid},
			{"PutSignalNBI with no signal word", PutSignalNBI(w, x, one, sig.Slice(0, 0), 1, SignalSet, 0), narma.ErrInvalid},
			{"SignalWaitUntil on 2 words", func() error { _, err := SignalWaitUntil(ctx, w, sig, CmpEQ, 0); return err }(), narma.ErrInvalid},
			{"SignalFetch on 2 words", func() error { _, err := SignalFetch(w, sig); return err }(), narma.ErrInvalid},
			// Other bad arguments.
			{"WaitUntil with comparison 0", WaitUntil(ctx, w, x.At(0), 0, 0), narma.ErrInvalid},
			{"SignalWaitUntil with comparison 9", func() error { _, err := SignalWaitUntil(ctx, w, sig.At(0), 9, 0); return err }(), narma.ErrInvalid},
			{"TestAny with a short ignore", func() error { _, err := TestAny(w, x, []bool{true}, CmpEQ, 0); return err }(), narma.ErrInvalid},
			{"WaitUntilSome with a long ignore", func() error { _, err := WaitUntilSome(ctx, w, x, make([]bool, 5), nil, CmpEQ, 0); return err }(), narma.ErrInvalid},
			{"PutSignal with signal op 7", PutSignal(ctx, w, x, one, sig.At(0), 1, 7, 0), narma.ErrInvalidNotification},
			{"Barrier over no PE", w.Barrier(ctx, nil), narma.ErrInvalid},
			{"Barrier with a PE twice", w.Barrier(ctx, []int{me, me}), narma.ErrInvalid},
			{"Barrier without this PE", w.Barrier(ctx, []int{1 - me}), narma.ErrInvalid},
			{"Alloc of -1", func() error { _, err := Alloc[int64](ctx, w, -1); return err }(), narma.ErrInvalid},
			{"Alloc past the heap", func() error { _, err := Alloc[int64](ctx, w, w.HeapSize()); return err }(), ErrNoMemory},
		}
		for _, c := range checks {
			if err := wantErr(c.what, c.err, c.target); err != nil {
				return err
			}
		}
		// Nothing was written anywhere: x is still zero on both PEs.
		must(w.BarrierAll(ctx))
		for i, v := range x.Local(w) {
			if v != 0 {
				return fmt.Errorf("PE %d: x[%d] = %d after refused calls", me, i, v)
			}
		}
		// A collective call with different arguments on different PEs
		// fails on every PE.
		if _, err := Alloc[int64](ctx, w, 1+me); !errors.Is(err, ErrNotSymmetric) {
			return fmt.Errorf("asymmetric Alloc: %v", err)
		}
		return ct.Free(ctx)
	})
}

// Calls on a nil or finalized World, or a nil CT, return errors; none
// panics.
func TestFinalizedAndNil(t *testing.T) {
	runComm(t, 2, func(c *narma.Comm) error {
		ctx := c.Context()
		if _, err := Init(ctx, nil); !errors.Is(err, narma.ErrInvalid) {
			return fmt.Errorf("Init(nil Comm): %v", err)
		}
		if _, err := Init(ctx, c, WithHeapSize(-1)); !errors.Is(err, narma.ErrInvalid) {
			return fmt.Errorf("Init with a negative heap: %v", err)
		}
		w, err := Init(ctx, c, WithHeapSize(1024), nil)
		if err != nil {
			return err
		}
		x := alloc[int64](ctx, w, 2)
		sig := alloc[uint64](ctx, w, 1)
		ct, err := CTCreate(ctx, w)
		if err != nil {
			return err
		}
		if err := w.Finalize(ctx); err != nil {
			return err
		}
		var nilW *World
		var nilCT *CT
		if nilW.MyPE() != -1 || nilW.NPEs() != 0 || nilW.Comm() != nil || nilW.HeapSize() != 0 || x.Local(nilW) != nil || x.Local(w) != nil {
			return errors.New("accessors of a nil or finalized World")
		}
		for _, tw := range []struct {
			w      *World
			target error
		}{{w, ErrFinalized}, {nilW, narma.ErrInvalid}} {
			w := tw.w
			for i, err := range []error{
				w.Finalize(ctx), w.Quiet(ctx), w.Fence(ctx), w.BarrierAll(ctx), w.Barrier(ctx, []int{0, 1}),
				Put(ctx, w, x, nil, 0), PutNBI(w, x, nil, 0), Get(ctx, w, nil, x, 0), GetNBI(w, nil, x, 0),
				P(ctx, w, x.At(0), 1, 0), func() error { _, err := G(ctx, w, x.At(0), 0); return err }(),
				func() error { _, err := Alloc[int64](ctx, w, 1); return err }(), Free(ctx, w, x),
				AtomicSet(ctx, w, x.At(0), 1, 0), func() error { _, err := AtomicFetchXor(ctx, w, x.At(0), 1, 0); return err }(),
				func() error { _, err := AtomicCompareSwap(ctx, w, x.At(0), 1, 2, 0); return err }(),
				WaitUntil(ctx, w, x.At(0), CmpEQ, 0), WaitUntilAll(ctx, w, x, nil, CmpEQ, 0),
				func() error { _, err := WaitUntilAny(ctx, w, x, nil, CmpEQ, 0); return err }(),
				func() error { _, err := WaitUntilSome(ctx, w, x, nil, nil, CmpEQ, 0); return err }(),
				func() error { _, err := Test(w, x.At(0), CmpEQ, 0); return err }(),
				func() error { _, err := TestAll(w, x, nil, CmpEQ, 0); return err }(),
				func() error { _, err := TestAny(w, x, nil, CmpEQ, 0); return err }(),
				func() error { _, err := TestSome(w, x, nil, nil, CmpEQ, 0); return err }(),
				func() error { _, err := CTCreate(ctx, w); return err }(),
				PutSignal(ctx, w, x, nil, sig, 1, SignalSet, 0), PutSignalNBI(w, x, nil, sig, 1, SignalAdd, 0),
				func() error { _, err := SignalWaitUntil(ctx, w, sig, CmpEQ, 0); return err }(),
				func() error { _, err := SignalFetch(w, sig); return err }(),
			} {
				if !errors.Is(err, tw.target) {
					return fmt.Errorf("call %d on World %p: %v, want %v", i, w, err, tw.target)
				}
			}
		}
		for _, tc := range []struct {
			ct     *CT
			target error
		}{{ct, ErrFinalized}, {nilCT, narma.ErrInvalid}} {
			ct := tc.ct
			for i, err := range []error{
				ct.Free(ctx), ct.Set(0), ct.Wait(ctx, 0), PutCT(ctx, ct, x, nil, 0), PutCTNBI(ct, x, nil, 0),
				func() error { _, err := ct.Get(); return err }(),
			} {
				if !errors.Is(err, tc.target) {
					return fmt.Errorf("call %d on CT %p: %v, want %v", i, ct, err, tc.target)
				}
			}
		}
		return nil
	})
}
