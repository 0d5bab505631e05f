package narma_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/narma-rma/narma"
)

// locRef is MinLoc (min true) or MaxLoc of the pairs, computed directly.
func locRef[T narma.Elem](pairs []narma.Loc[T], min bool) narma.Loc[T] {
	best := pairs[0]
	for _, p := range pairs[1:] {
		if (min && p.Value < best.Value) || (!min && p.Value > best.Value) || (p.Value == best.Value && p.Index < best.Index) {
			best = p
		}
	}
	return best
}

// TestReduceLoc: MinLoc and MaxLoc over values with ties between ranks
// give the extreme value and the least index holding it, for integers and
// floats, to every root and to all; other operations are refused.
func TestReduceLoc(t *testing.T) {
	forSizes(t, func(t *testing.T, n int) {
		run(t, n, func(c *narma.Comm) error {
			ctx, me := c.Context(), c.Rank()
			// Element i of rank r: value (r*7+i)%3 (ties among ranks),
			// index n-1-r, so that the least index is the highest rank.
			const k = 4
			mk := func(r int) []narma.Loc[int32] {
				s := make([]narma.Loc[int32], k)
				for i := range s {
					s[i] = narma.Loc[int32]{Value: int32((r*7 + i) % 3), Index: n - 1 - r}
				}
				return s
			}
			fmk := func(r int) []narma.Loc[float64] {
				s := make([]narma.Loc[float64], k)
				for i := range s {
					s[i] = narma.Loc[float64]{Value: float64((r*5+i)%4) / 2, Index: r}
				}
				return s
			}
			for _, op := range []narma.Op{narma.MinLoc, narma.MaxLoc} {
				want := make([]narma.Loc[int32], k)
				fwant := make([]narma.Loc[float64], k)
				for i := range k {
					var col []narma.Loc[int32]
					var fcol []narma.Loc[float64]
					for r := range n {
						col = append(col, mk(r)[i])
						fcol = append(fcol, fmk(r)[i])
					}
					want[i] = locRef(col, op == narma.MinLoc)
					fwant[i] = locRef(fcol, op == narma.MinLoc)
				}
				got := make([]narma.Loc[int32], k)
				if err := narma.AllreduceLoc(ctx, c, mk(me), got, op); err != nil {
					return err
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					return fmt.Errorf("AllreduceLoc %v: %v, want %v", op, got, want)
				}
				for root := range n {
					fgot := make([]narma.Loc[float64], k)
					if err := narma.ReduceLoc(ctx, c, fmk(me), fgot, op, root); err != nil {
						return err
					}
					if me == root && fmt.Sprint(fgot) != fmt.Sprint(fwant) {
						return fmt.Errorf("ReduceLoc %v to %d: %v, want %v", op, root, fgot, fwant)
					}
					if me != root && fmt.Sprint(fgot) != fmt.Sprint(make([]narma.Loc[float64], k)) {
						return fmt.Errorf("ReduceLoc %v to %d wrote rank %d's recv: %v", op, root, me, fgot)
					}
				}
			}
			if narma.MinLoc.String() != "MINLOC" || narma.MaxLoc.String() != "MAXLOC" {
				return fmt.Errorf("names %v, %v", narma.MinLoc, narma.MaxLoc)
			}
			// Refusals, on every rank alike, before any message.
			if err := narma.AllreduceLoc(ctx, c, mk(me), make([]narma.Loc[int32], k), narma.Sum); !errors.Is(err, narma.ErrOp) {
				return fmt.Errorf("AllreduceLoc with Sum: %v, want ErrOp", err)
			}
			if err := narma.Allreduce(ctx, c, []int64{1}, []int64{0}, narma.MinLoc); !errors.Is(err, narma.ErrOp) {
				return fmt.Errorf("Allreduce with MinLoc: %v, want ErrOp", err)
			}
			if err := narma.AllreduceLoc(ctx, c, mk(me), make([]narma.Loc[int32], k-1), narma.MinLoc); !errors.Is(err, narma.ErrLayout) {
				return fmt.Errorf("AllreduceLoc into a short recv: %v, want ErrLayout", err)
			}
			return c.Barrier(ctx)
		})
	})
}
