package narma_test

// Collectives over 1..7 ranks: Bcast from every root, Allreduce (Sum, Max,
// Min over integer and float types, identical on every rank), Allgather,
// ReduceScatter, and their argument errors.

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/narma-rma/narma"
)

const maxCollRanks = 7

func forSizes(t *testing.T, f func(t *testing.T, n int)) {
	for n := 1; n <= maxCollRanks; n++ {
		t.Run(fmt.Sprintf("n%d", n), func(t *testing.T) { f(t, n) })
	}
}

// TestBcastEveryRoot: Bcast from every root delivers the root's buffer to
// every rank, for integer and float elements.
func TestBcastEveryRoot(t *testing.T) {
	forSizes(t, func(t *testing.T, n int) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			for root := 0; root < n; root++ {
				ib := make([]int32, 5)
				fb := make([]float64, 3)
				for i := range ib {
					ib[i] = int32(-1 - me)
				}
				if me == root {
					for i := range ib {
						ib[i] = int32(root*100 + i)
					}
					fb = []float64{float64(root) + 0.5, math.Pi * float64(root), -1e300}
				}
				if err := narma.Bcast(ctx, c, ib, root); err != nil {
					return err
				}
				if err := narma.Bcast(ctx, c, fb, root); err != nil {
					return err
				}
				for i, v := range ib {
					if v != int32(root*100+i) {
						return fmt.Errorf("Bcast from %d: int32 buffer %v", root, ib)
					}
				}
				if want := []float64{float64(root) + 0.5, math.Pi * float64(root), -1e300}; !slices.Equal(fb, want) {
					return fmt.Errorf("Bcast from %d: float64 buffer %v, want %v", root, fb, want)
				}
			}
			return nil
		})
	})
}

// allreduceCheck runs Allreduce of op over T with element i of rank r
// equal to gen(r, i), compares with the sequential result (exactly for
// integers and for floats whose sum is exact, within tol otherwise), and
// checks that every rank has the same bits.
func allreduceCheck[T narma.Elem](c *narma.Comm, name string, op narma.Op, gen func(r, i int) T, tol float64) error {
	const m = 4
	n, me := c.Size(), c.Rank()
	send := make([]T, m)
	for i := range send {
		send[i] = gen(me, i)
	}
	sendCopy := slices.Clone(send)
	recv := make([]T, m)
	if err := narma.Allreduce(c.Context(), c, send, recv, op); err != nil {
		return fmt.Errorf("%s %v: %w", name, op, err)
	}
	if !slices.Equal(send, sendCopy) {
		return fmt.Errorf("%s %v: Allreduce changed the send buffer: %v", name, op, send)
	}
	for i := 0; i < m; i++ {
		want := gen(0, i)
		for r := 1; r < n; r++ {
			v := gen(r, i)
			switch op {
			case narma.Sum:
				want += v
			case narma.Max:
				want = max(want, v)
			case narma.Min:
				want = min(want, v)
			}
		}
		if d := math.Abs(float64(recv[i]) - float64(want)); d > tol {
			return fmt.Errorf("%s %v: element %d = %v, want %v", name, op, i, recv[i], want)
		}
	}
	all := make([]T, n*m)
	if err := narma.Allgather(c.Context(), c, recv, all); err != nil {
		return err
	}
	for r := 0; r < n; r++ {
		for i := 0; i < m; i++ {
			a, b := all[r*m+i], recv[i]
			if a != b {
				return fmt.Errorf("%s %v: rank %d has %v at %d, rank %d has %v", name, op, r, a, i, me, b)
			}
		}
	}
	return nil
}

// TestAllreduce: Sum, Max and Min over int64, int32, uint8, int8, float32
// and float64; the result is the sequential one and identical on every
// rank (also for float sums that depend on the order).
func TestAllreduce(t *testing.T) {
	forSizes(t, func(t *testing.T, n int) {
		run(t, n, func(c *narma.Comm) error {
			for _, op := range []narma.Op{narma.Sum, narma.Max, narma.Min} {
				errs := []error{
					allreduceCheck(c, "int64", op, func(r, i int) int64 { return int64((r*7919+i*104729)%1000) - 500 + int64(i)<<40 }, 0),
					allreduceCheck(c, "int32", op, func(r, i int) int32 { return int32((r*31+i*17)%97) - 48 }, 0),
					allreduceCheck(c, "uint8", op, func(r, i int) uint8 { return uint8(r*13 + i*7 + 1) }, 0),
					allreduceCheck(c, "int8", op, func(r, i int) int8 { return int8(r*3 - i*5) }, 0),
					allreduceCheck(c, "float32", op, func(r, i int) float32 { return float32(r)*0.5 - float32(i)*1.25 }, 0),
					allreduceCheck(c, "float64 exact", op, func(r, i int) float64 { return float64(r*r)*0.25 - float64(i) }, 0),
					allreduceCheck(c, "float64 inexact", op, func(r, i int) float64 { return 1/float64(r+3) + math.Sqrt(float64(i+r)) }, 1e-9),
				}
				for _, err := range errs {
					if err != nil {
						return err
					}
				}
			}
			return nil
		})
	})
}

// TestAllgather: every rank receives every rank's block in rank order.
func TestAllgather(t *testing.T) {
	forSizes(t, func(t *testing.T, n int) {
		run(t, n, func(c *narma.Comm) error {
			me := c.Rank()
			for _, m := range []int{0, 1, 3} {
				send := make([]uint16, m)
				for i := range send {
					send[i] = uint16(me*100 + i)
				}
				recv := make([]uint16, n*m)
				for i := range recv {
					recv[i] = 0xffff
				}
				if err := narma.Allgather(c.Context(), c, send, recv); err != nil {
					return err
				}
				for r := 0; r < n; r++ {
					for i := 0; i < m; i++ {
						if got := recv[r*m+i]; got != uint16(r*100+i) {
							return fmt.Errorf("block size %d: recv[%d] = %d, want %d (recv %v)", m, r*m+i, got, r*100+i, recv)
						}
					}
				}
			}
			return nil
		})
	})
}

// TestReduceScatter: rank r receives block r of the element-wise
// combination of every rank's send buffer.
func TestReduceScatter(t *testing.T) {
	forSizes(t, func(t *testing.T, n int) {
		run(t, n, func(c *narma.Comm) error {
			me := c.Rank()
			const b = 3
			val := func(r, blk, i int) int64 { return int64(r*1000+blk*10+i) * int64(1-2*(r%2)) }
			send := make([]int64, n*b)
			for blk := 0; blk < n; blk++ {
				for i := 0; i < b; i++ {
					send[blk*b+i] = val(me, blk, i)
				}
			}
			for _, op := range []narma.Op{narma.Sum, narma.Max, narma.Min} {
				recv := make([]int64, b)
				if err := narma.ReduceScatter(c.Context(), c, send, recv, op); err != nil {
					return err
				}
				for i := 0; i < b; i++ {
					want := val(0, me, i)
					for r := 1; r < n; r++ {
						switch op {
						case narma.Sum:
							want += val(r, me, i)
						case narma.Max:
							want = max(want, val(r, me, i))
						case narma.Min:
							want = min(want, val(r, me, i))
						}
					}
					if recv[i] != want {
						return fmt.Errorf("ReduceScatter %v: recv[%d] = %d, want %d", op, i, recv[i], want)
					}
				}
			}
			fsend := make([]float64, n)
			for i := range fsend {
				fsend[i] = float64(me+i) * 0.5
			}
			frecv := make([]float64, 1)
			if err := narma.ReduceScatter(c.Context(), c, fsend, frecv, narma.Sum); err != nil {
				return err
			}
			want := 0.0
			for r := 0; r < n; r++ {
				want += float64(r+me) * 0.5
			}
			if frecv[0] != want {
				return fmt.Errorf("float ReduceScatter: %v, want %v", frecv[0], want)
			}
			return nil
		})
	})
}

// TestCollectiveErrors: bad arguments given by every rank are refused
// before any message is sent; a length mismatch between root and receivers
// is reported as ErrCollective.
func TestCollectiveErrors(t *testing.T) {
	const n = 3
	run(t, n, func(c *narma.Comm) error {
		ctx := c.Context()
		me := c.Rank()
		k := newChecks(c)
		k.isIn("Bcast from rank n", narma.Bcast(ctx, c, []int64{1}, n), narma.ErrRank, "Bcast", fmt.Sprint(n))
		k.is("Bcast from rank -1", narma.Bcast(ctx, c, []int64{1}, -1), narma.ErrRank, "Bcast")
		k.is("Allreduce Band on float64", narma.Allreduce(ctx, c, []float64{1}, []float64{0}, narma.Band), narma.ErrOp, "Allreduce")
		k.is("Allreduce with NoOp", narma.Allreduce(ctx, c, []int64{1}, []int64{0}, narma.NoOp), narma.ErrOp, "Allreduce")
		k.is("Allreduce with Op(0)", narma.Allreduce(ctx, c, []int64{1}, []int64{0}, narma.Op(0)), narma.ErrOp, "Allreduce")
		recv := []int64{-1}
		k.is("Allreduce recv shorter than send", narma.Allreduce(ctx, c, []int64{1, 2}, recv, narma.Sum), narma.ErrLayout, "Allreduce")
		if recv[0] != -1 {
			k.errorf("refused Allreduce wrote recv: %v", recv)
		}
		k.is("Allgather recv of the wrong length", narma.Allgather(ctx, c, []int64{1}, make([]int64, n+1)), narma.ErrLayout, "Allgather")
		k.is("ReduceScatter send of the wrong length", narma.ReduceScatter(ctx, c, make([]int64, n), make([]int64, 2), narma.Sum), narma.ErrLayout, "ReduceScatter")
		k.is("ReduceScatter Bxor on float32", narma.ReduceScatter(ctx, c, make([]float32, n), make([]float32, 1), narma.Bxor), narma.ErrOp, "ReduceScatter")
		// The refused calls sent nothing: a valid collective still works.
		sum := []int64{0}
		if err := narma.Allreduce(ctx, c, []int64{int64(me + 1)}, sum, narma.Sum); err != nil {
			return err
		}
		if sum[0] != n*(n+1)/2 {
			k.errorf("Allreduce after refused collectives: %d, want %d", sum[0], n*(n+1)/2)
		}
		// Root 0 sends two elements, the others expect one: every direct
		// child of the root (all of them, with 3 ranks) reports it.
		buf := make([]int64, 1)
		if me == 0 {
			buf = []int64{7, 8}
		}
		err := narma.Bcast(ctx, c, buf, 0)
		if me == 0 {
			k.ok("Bcast at the root", err)
		} else {
			k.is("Bcast with a longer root buffer", err, narma.ErrCollective, "Bcast")
		}
		return k.err()
	})
}
