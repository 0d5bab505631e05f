package shmem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/narma-rma/narma"
)

// TestBroadcastReduce: Broadcast from every root, root included, and the
// seven reductions over integers (and sum, min, max over floats), with
// dest and source the same object or not.
func TestBroadcastReduce(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			run(t, n, func(ctx context.Context, w *World) error {
				me := w.MyPE()
				src, err := Alloc[int64](ctx, w, 3)
				if err != nil {
					return err
				}
				dst, err := Alloc[int64](ctx, w, 4)
				if err != nil {
					return err
				}
				for root := range n {
					copy(src.Local(w), []int64{int64(me), int64(me * 10), -1})
					copy(dst.Local(w), []int64{-9, -9, -9, -9})
					if err := Broadcast(ctx, w, dst, src, 2, root); err != nil {
						return err
					}
					if got, want := dst.Local(w), []int64{int64(root), int64(root * 10), -9, -9}; !slices.Equal(got, want) {
						return fmt.Errorf("Broadcast from %d: %v, want %v", root, got, want)
					}
				}
				copy(src.Local(w), []int64{int64(me + 1), int64(1 << me), int64(me%2 + 2)})
				type red struct {
					name   string
					f      func(context.Context, *World, Sym[int64], Sym[int64], int) error
					source Sym[int64]
					want   []int64
				}
				or, sum, prod, xor := int64(0), int64(0), int64(1), int64(0)
				for pe := range n {
					or |= 1 << pe
					sum += int64(pe + 1)
					prod *= int64(pe%2 + 2)
					xor ^= int64(pe + 1)
				}
				and := int64(2)
				if n > 1 {
					and = 2 & 3
				}
				for _, r := range []red{
					{"SumReduce", SumReduce[int64], src, []int64{sum}},
					{"MinReduce", MinReduce[int64], src, []int64{1, 1}},
					{"MaxReduce", MaxReduce[int64], src, []int64{int64(n), 1 << (n - 1)}},
					{"OrReduce", OrReduce[int64], src.Slice(1, 3), []int64{or}},
					{"XorReduce", XorReduce[int64], src, []int64{xor}},
				} {
					if err := r.f(ctx, w, dst, r.source, len(r.want)); err != nil {
						return err
					}
					if got := dst.Local(w)[:len(r.want)]; !slices.Equal(got, r.want) {
						return fmt.Errorf("%s: %v, want %v", r.name, got, r.want)
					}
				}
				// In place: source is dest.
				inplace := src.Slice(2, 3)
				if err := ProdReduce(ctx, w, inplace, inplace, 1); err != nil {
					return err
				}
				if got := inplace.Local(w)[0]; got != prod {
					return fmt.Errorf("ProdReduce in place: %d, want %d", got, prod)
				}
				inplace.Local(w)[0] = int64(me%2 + 2)
				if err := AndReduce(ctx, w, dst, inplace, 1); err != nil {
					return err
				}
				if got := dst.Local(w)[0]; got != and {
					return fmt.Errorf("AndReduce: %d, want %d", got, and)
				}
				f, err := Alloc[float64](ctx, w, 2)
				if err != nil {
					return err
				}
				copy(f.Local(w), []float64{float64(me) + 0.25, -float64(me)})
				if err := MinReduce(ctx, w, f, f, 2); err != nil {
					return err
				}
				if got := f.Local(w); !slices.Equal(got, []float64{0.25, -float64(n - 1)}) {
					return fmt.Errorf("MinReduce float64: %v", got)
				}
				return nil
			})
		})
	}
}

// TestAlltoallCollect: Alltoall and strided Alltoalls put block j of PE
// i at block i of PE j; Fcollect and Collect (with lengths that differ
// between PEs) concatenate in PE order, leaving the rest of dest alone.
func TestAlltoallCollect(t *testing.T) {
	for _, n := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			run(t, n, func(ctx context.Context, w *World) error {
				me := w.MyPE()
				src, err := Alloc[int32](ctx, w, 4*n)
				if err != nil {
					return err
				}
				dst, err := Alloc[int32](ctx, w, 4*n+1)
				if err != nil {
					return err
				}
				s := src.Local(w)
				for i := range s {
					s[i] = int32(me*1000 + i)
				}
				if err := Alltoall(ctx, w, dst, src, 2); err != nil {
					return err
				}
				d := dst.Local(w)
				for i := range n {
					for k := range 2 {
						if want := int32(i*1000 + me*2 + k); d[i*2+k] != want {
							return fmt.Errorf("Alltoall: block %d element %d: %d, want %d", i, k, d[i*2+k], want)
						}
					}
				}
				clear(d)
				// Stride 2 on both sides: every other element, one per PE.
				if err := Alltoalls(ctx, w, dst, src, 2, 2, 1); err != nil {
					return err
				}
				for i := range n {
					if want := int32(i*1000 + me*2); d[2*i] != want || d[2*i+1] != 0 {
						return fmt.Errorf("Alltoalls: from PE %d: %d then %d, want %d then 0", i, d[2*i], d[2*i+1], want)
					}
				}
				for i := range d {
					d[i] = -1
				}
				if err := Fcollect(ctx, w, dst, src, 2); err != nil {
					return err
				}
				for i := range n {
					if d[2*i] != int32(i*1000) || d[2*i+1] != int32(i*1000+1) {
						return fmt.Errorf("Fcollect: %v", d)
					}
				}
				for i := range d {
					d[i] = -1
				}
				// PE i contributes i+1 elements.
				if err := Collect(ctx, w, dst, src, me+1); err != nil {
					return err
				}
				at := 0
				for i := range n {
					for k := range i + 1 {
						if d[at] != int32(i*1000+k) {
							return fmt.Errorf("Collect: element %d of PE %d: %d", k, i, d[at])
						}
						at++
					}
				}
				if d[at] != -1 {
					return fmt.Errorf("Collect wrote past the %d collected elements: %v", at, d)
				}
				return nil
			})
		})
	}
}

// TestCollectiveErrors: arguments this PE gets wrong (not symmetric, too
// short, negative, a float with a bitwise reduction) are refused on every
// PE, which go on afterwards; a PE whose Collect arguments are wrong
// tells the others, which report narma.ErrCollective instead of waiting.
func TestCollectiveErrors(t *testing.T) {
	run(t, 2, func(ctx context.Context, w *World) error {
		a, err := Alloc[int64](ctx, w, 4)
		if err != nil {
			return err
		}
		f, err := Alloc[float32](ctx, w, 2)
		if err != nil {
			return err
		}
		errs := []error{
			wantErr("Broadcast into an out-of-range Slice", Broadcast(ctx, w, a.Slice(3, 9), a, 1, 0), ErrNotSymmetric),
			wantErr("Broadcast of more than source holds", Broadcast(ctx, w, a, a.Slice(0, 1), 2, 0), narma.ErrBounds),
			wantErr("Broadcast of -1 elements", Broadcast(ctx, w, a, a, -1, 0), narma.ErrInvalid),
			wantErr("Broadcast from PE 2", Broadcast(ctx, w, a, a, 1, 2), narma.ErrRank),
			wantErr("SumReduce into a short dest", SumReduce(ctx, w, a.Slice(0, 1), a, 2), narma.ErrBounds),
			wantErr("XorReduce on float32", XorReduce(ctx, w, f, f, 2), narma.ErrOp),
			wantErr("Alltoalls with stride 0", Alltoalls(ctx, w, a, a, 0, 1, 1), narma.ErrInvalid),
			wantErr("Alltoall past dest", Alltoall(ctx, w, a.Slice(0, 3), a, 2), narma.ErrBounds),
			wantErr("Fcollect past dest", Fcollect(ctx, w, a.Slice(0, 1), a, 1), narma.ErrBounds),
		}
		err = Collect(ctx, w, a, a, 5-w.MyPE()) // PE 0 asks for 5 of 4
		if w.MyPE() == 0 {
			errs = append(errs, wantErr("Collect of more than source holds", err, narma.ErrBounds))
		} else {
			errs = append(errs, wantErr("Collect with a PE that refused", err, narma.ErrCollective))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		copy(a.Local(w), []int64{int64(w.MyPE() + 1)})
		if err := SumReduce(ctx, w, a, a, 1); err != nil {
			return err
		}
		if a.Local(w)[0] != 3 {
			return fmt.Errorf("SumReduce after refused calls: %d, want 3", a.Local(w)[0])
		}
		return nil
	})
}
