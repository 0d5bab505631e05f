package shmem

import (
	"context"
	"fmt"
	"testing"
)

// The programs of Dinan et al., each checked: the all-to-all exchange
// synchronized by a barrier (their Listing 1.1), by a fence and atomic
// decrements of a flag (Listing 1.5) and by counting puts (Listing 1.4),
// and the pipelined stencil Sync_p2p with counting puts (Listing 1.6).

const (
	a2aBlock = 13 // elements per (source, target) block
	a2aIters = 6
)

// a2aValue is element k of the block that src sends to dst in iteration
// it: distinct for every (source, target, iteration, element).
func a2aValue(src, dst, it, k, n int) int64 {
	return int64(((it*n+src)*n+dst)*a2aBlock + k + 1)
}

// a2aSend fills send with this PE's blocks of iteration it, block pe
// going to PE pe.
func a2aSend(w *World, send []int64, it int) {
	for pe := 0; pe < w.NPEs(); pe++ {
		for k := 0; k < a2aBlock; k++ {
			send[pe*a2aBlock+k] = a2aValue(w.MyPE(), pe, it, k, w.NPEs())
		}
	}
}

// a2aCheck checks the blocks this PE received in iteration it.
func a2aCheck(w *World, recv []int64, it int) error {
	for src := 0; src < w.NPEs(); src++ {
		for k := 0; k < a2aBlock; k++ {
			if got, want := recv[src*a2aBlock+k], a2aValue(src, w.MyPE(), it, k, w.NPEs()); got != want {
				return fmt.Errorf("PE %d, iteration %d: element %d from PE %d is %d, want %d", w.MyPE(), it, k, src, got, want)
			}
		}
	}
	return nil
}

// a2a runs the exchange with the given synchronization: PE me puts block
// pe of its send buffer into block me of recv on PE pe, staggered (PE me
// starts with itself, as in Listing 1.5); the receive buffers alternate
// between iterations, as the paper's flags and counters do.
func a2a(t *testing.T, n int, setup func(ctx context.Context, w *World) (put func(it int, dst Sym[int64], src []int64, pe int) error, sync func(it int) error)) {
	run(t, n, func(ctx context.Context, w *World) error {
		recv := [2]Sym[int64]{alloc[int64](ctx, w, n*a2aBlock), alloc[int64](ctx, w, n*a2aBlock)}
		send := make([]int64, n*a2aBlock)
		put, sync := setup(ctx, w)
		me := w.MyPE()
		for it := 0; it < a2aIters; it++ {
			a2aSend(w, send, it)
			for k := 0; k < n; k++ {
				pe := (me + k) % n
				dst := recv[it%2].Slice(me*a2aBlock, (me+1)*a2aBlock)
				if err := put(it, dst, send[pe*a2aBlock:(pe+1)*a2aBlock], pe); err != nil {
					return err
				}
			}
			if err := sync(it); err != nil {
				return err
			}
			if err := a2aCheck(w, recv[it%2].Local(w), it); err != nil {
				return err
			}
		}
		return nil
	})
}

// Listing 1.1: nonblocking puts, then shmem_barrier_all.
func TestAllToAllBarrier(t *testing.T) {
	for _, n := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(n, "PEs"), func(t *testing.T) {
			a2a(t, n, func(ctx context.Context, w *World) (func(int, Sym[int64], []int64, int) error, func(int) error) {
				put := func(_ int, dst Sym[int64], src []int64, pe int) error { return PutNBI(w, dst, src, pe) }
				// The send buffer is refilled after the barrier, which
				// completed the puts from it.
				return put, func(int) error { return w.BarrierAll(ctx) }
			})
		})
	}
}

// Listing 1.5: puts, a fence, a decrement of the flag on every PE, and a
// wait for the own flag to reach zero. Two flags alternate; each starts at
// NPEs and is reset by its owner after use.
func TestAllToAllFlags(t *testing.T) {
	for _, n := range []int{1, 3, 4} {
		t.Run(fmt.Sprint(n, "PEs"), func(t *testing.T) {
			a2a(t, n, func(ctx context.Context, w *World) (func(int, Sym[int64], []int64, int) error, func(int) error) {
				flags := alloc[int32](ctx, w, 2)
				for k := range 2 {
					must(AtomicSet(ctx, w, flags.At(k), int32(n), w.MyPE()))
				}
				must(w.BarrierAll(ctx)) // every flag is set before anyone decrements
				put := func(_ int, dst Sym[int64], src []int64, pe int) error { return Put(ctx, w, dst, src, pe) }
				sync := func(it int) error {
					flag := flags.At(it % 2)
					if err := w.Fence(ctx); err != nil {
						return err
					}
					for k := 0; k < n; k++ {
						if err := AtomicAdd(ctx, w, flag, -1, (w.MyPE()+k)%n); err != nil {
							return err
						}
					}
					if err := WaitUntil(ctx, w, flag, CmpEQ, 0); err != nil {
						return err
					}
					// Nobody decrements this flag again before this PE's
					// next round of decrements, which follows the reset.
					return AtomicSet(ctx, w, flag, int32(n), w.MyPE())
				}
				return put, sync
			})
		})
	}
}

// Listing 1.4: counting puts, then a wait for NPEs counts. Two CTs
// alternate; each is reset by its owner after use.
func TestAllToAllCountingPuts(t *testing.T) {
	for _, n := range []int{1, 3, 4} {
		t.Run(fmt.Sprint(n, "PEs"), func(t *testing.T) {
			a2a(t, n, func(ctx context.Context, w *World) (func(int, Sym[int64], []int64, int) error, func(int) error) {
				var cts [2]*CT
				for k := range cts {
					ct, err := CTCreate(ctx, w)
					must(err)
					cts[k] = ct
				}
				put := func(it int, dst Sym[int64], src []int64, pe int) error {
					return PutCT(ctx, cts[it%2], dst, src, pe)
				}
				sync := func(it int) error {
					ct := cts[it%2]
					if err := ct.Wait(ctx, uint64(n)); err != nil {
						return err
					}
					if got, err := ct.Get(); err != nil || got != uint64(n) {
						return fmt.Errorf("PE %d, iteration %d: count %d (%v), want %d", w.MyPE(), it, got, err, n)
					}
					// As with the flags: the next counting put to this CT
					// comes after this PE's puts of the next iteration.
					return ct.Set(0)
				}
				return put, sync
			})
		})
	}
}

// TestSyncP2P is the Parallel Research Kernels' Sync_p2p with counting
// puts (Listing 1.6): the m x n grid A, with A(0,j) = j and A(i,0) = i,
// is swept by A(i,j) = A(i-1,j) + A(i,j-1) - A(i-1,j-1); its columns
// 1..n-1 are split in blocks over the PEs (PE 0 also holds the boundary
// column 0, so that it computes A(1,1), the one point that reads A(0,0)),
// and each PE, row after row, waits for the
// value of its left neighbour's last column (a counting put), computes its
// part of the row and sends its own last column's value to the right.
// After each iteration the last PE sends the corner value, negated, to
// A(0,0) on PE 0 (a second CT), as the PRK does, which makes the
// iterations depend on each other: with A(0,0) = c the sweep gives
// A(i,j) = i + j - c, so the corner after iteration k is
// (k+1)(m+n-2). Every PE checks its columns against a serial sweep.
func TestSyncP2P(t *testing.T) {
	for _, tc := range []struct{ pes, m, n, iters int }{
		{1, 9, 7, 3},
		{2, 33, 8, 4},
		{4, 50, 23, 5},
		{4, 17, 5, 3}, // one column per PE
	} {
		t.Run(fmt.Sprintf("%dPEs/%dx%d", tc.pes, tc.m, tc.n), func(t *testing.T) {
			syncP2P(t, tc.pes, tc.m, tc.n, tc.iters)
		})
	}
}

func syncP2P(t *testing.T, pes, m, n, iters int) {
	want := serialP2P(m, n, iters)
	if corner := want[m-1][n-1]; corner != float64(iters*(m+n-2)) {
		t.Fatalf("serial sweep: corner %v, want %d", corner, iters*(m+n-2))
	}
	run(t, pes, func(ctx context.Context, w *World) error {
		me, last := w.MyPE(), w.NPEs()-1
		// My columns are [start, end), after a halo column start-1: the
		// left neighbour's last column, or on PE 0 the boundary column.
		start, end := 1+me*(n-1)/pes, 1+(me+1)*(n-1)/pes
		width := end - start + 1
		grid := make([]float64, m*width)
		a := func(i, j int) *float64 { return &grid[i*width+j-start+1] }
		for j := start - 1; j < end; j++ {
			*a(0, j) = float64(j)
		}
		if me == 0 {
			for i := 0; i < m; i++ {
				*a(i, 0) = float64(i)
			}
		}
		halo := alloc[float64](ctx, w, m)   // halo.At(i): A(i, start-1), from the left
		corner := alloc[float64](ctx, w, 1) // on PE 0: the last PE's corner
		ct, err := CTCreate(ctx, w)
		must(err)
		cornerCT, err := CTCreate(ctx, w)
		must(err)
		one := make([]float64, 1)
		for it := 0; it < iters; it++ {
			if me == 0 && it > 0 {
				if pes > 1 {
					if err := cornerCT.Wait(ctx, uint64(it)); err != nil {
						return err
					}
				}
				*a(0, 0) = -corner.Local(w)[0]
			}
			for i := 1; i < m; i++ {
				if me > 0 {
					if err := ct.Wait(ctx, uint64(it*(m-1)+i)); err != nil {
						return err
					}
					*a(i, start-1) = halo.Local(w)[i]
				}
				for j := start; j < end; j++ {
					*a(i, j) = *a(i-1, j) + *a(i, j-1) - *a(i-1, j-1)
				}
				if me < last {
					one[0] = *a(i, end-1)
					if err := PutCT(ctx, ct, halo.At(i), one, me+1); err != nil {
						return err
					}
				}
			}
			if me == last {
				one[0] = *a(m-1, n-1)
				if pes == 1 {
					corner.Local(w)[0] = one[0]
				} else if err := PutCT(ctx, cornerCT, corner, one, 0); err != nil {
					return err
				}
			}
		}
		first := start
		if me == 0 {
			first = 0
		}
		for i := 0; i < m; i++ {
			for j := first; j < end; j++ {
				if got := *a(i, j); got != want[i][j] {
					return fmt.Errorf("PE %d: A(%d,%d) = %v, want %v", me, i, j, got, want[i][j])
				}
			}
		}
		if me == last {
			if got, wantC := *a(m-1, n-1), float64(iters*(m+n-2)); got != wantC {
				return fmt.Errorf("corner %v, want %v", got, wantC)
			}
		}
		if got, err := ct.Get(); err != nil || (me > 0 && got != uint64(iters*(m-1))) || (me == 0 && got != 0) {
			return fmt.Errorf("PE %d: count %d (%v)", me, got, err)
		}
		return nil
	})
}

// serialP2P sweeps the grid iters times on one PE, with the PRK's corner
// feedback, and returns it.
func serialP2P(m, n, iters int) [][]float64 {
	a := make([][]float64, m)
	for i := range a {
		a[i] = make([]float64, n)
		a[i][0] = float64(i)
	}
	for j := 0; j < n; j++ {
		a[0][j] = float64(j)
	}
	for it := 0; it < iters; it++ {
		if it > 0 {
			a[0][0] = -a[m-1][n-1]
		}
		for i := 1; i < m; i++ {
			for j := 1; j < n; j++ {
				a[i][j] = a[i-1][j] + a[i][j-1] - a[i-1][j-1]
			}
		}
	}
	return a
}
