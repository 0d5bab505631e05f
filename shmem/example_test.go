package shmem_test

import (
	"fmt"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/shmem"
)

// Every PE puts its number into the next PE's copy of a symmetric array,
// and reads its own copy after a barrier.
func ExampleAlloc() {
	got := make([][]int64, 4)
	err := narma.Run(4, func(c *narma.Comm) error {
		ctx := c.Context()
		w, err := shmem.Init(ctx, c, shmem.WithHeapSize(1<<20))
		if err != nil {
			return err
		}
		from, err := shmem.Alloc[int64](ctx, w, 2) // the same address on every PE
		if err != nil {
			return err
		}
		me, next := w.MyPE(), (w.MyPE()+1)%w.NPEs()
		if err := shmem.Put(ctx, w, from, []int64{int64(me), int64(10 * me)}, next); err != nil {
			return err
		}
		if err := w.BarrierAll(ctx); err != nil { // every put is now in place
			return err
		}
		got[me] = append([]int64(nil), from.Local(w)...)
		return w.Finalize(ctx)
	})
	fmt.Println(got, err)
	// Output: [[3 30] [0 0] [1 10] [2 20]] <nil>
}

// All-to-all with counting puts (Dinan et al., Listing 1.4): each PE puts
// a block into every PE and waits until its counter says that NPEs blocks
// have arrived; no barrier, no flags.
func ExamplePutCT() {
	got := make([][]int32, 3)
	err := narma.Run(3, func(c *narma.Comm) error {
		ctx := c.Context()
		w, err := shmem.Init(ctx, c, shmem.WithHeapSize(1<<20))
		if err != nil {
			return err
		}
		me, n := w.MyPE(), w.NPEs()
		recv, err := shmem.Alloc[int32](ctx, w, n)
		if err != nil {
			return err
		}
		ct, err := shmem.CTCreate(ctx, w)
		if err != nil {
			return err
		}
		for pe := 0; pe < n; pe++ {
			block := []int32{int32(10*me + pe)} // from me, for pe
			if err := shmem.PutCT(ctx, ct, recv.At(me), block, pe); err != nil {
				return err
			}
		}
		if err := ct.Wait(ctx, uint64(n)); err != nil {
			return err
		}
		got[me] = append([]int32(nil), recv.Local(w)...)
		return w.Finalize(ctx)
	})
	fmt.Println(got, err)
	// Output: [[0 10 20] [1 11 21] [2 12 22]] <nil>
}

// A producer streams messages to a consumer with put-with-signal: the
// signal word counts the messages whose data has landed.
func ExamplePutSignal() {
	var got []float64
	err := narma.Run(2, func(c *narma.Comm) error {
		ctx := c.Context()
		w, err := shmem.Init(ctx, c, shmem.WithHeapSize(1<<20))
		if err != nil {
			return err
		}
		const msgs = 4
		data, err := shmem.Alloc[float64](ctx, w, msgs)
		if err != nil {
			return err
		}
		sig, err := shmem.Alloc[uint64](ctx, w, 1)
		if err != nil {
			return err
		}
		if w.MyPE() == 0 {
			for i := 0; i < msgs; i++ {
				msg := []float64{float64(i) / 2}
				if err := shmem.PutSignal(ctx, w, data.At(i), msg, sig, 1, shmem.SignalAdd, 1); err != nil {
					return err
				}
			}
		} else {
			if _, err := shmem.SignalWaitUntil(ctx, w, sig, shmem.CmpEQ, msgs); err != nil {
				return err
			}
			got = append(got, data.Local(w)...)
		}
		return w.Finalize(ctx)
	})
	fmt.Println(got, err)
	// Output: [0 0.5 1 1.5] <nil>
}

// Six PEs as a grid of 2 rows of 3 (Split2D): each row and each column
// sums its PEs' numbers with a reduction over its team, and each column
// broadcasts from its PE 1, the one in the second row: roots are team
// PEs.
func ExampleTeam_Split2D() {
	type result struct{ x, y, rowSum, colSum, fromRow1 int64 }
	got := make([]result, 6)
	err := narma.Run(6, func(c *narma.Comm) error {
		ctx := c.Context()
		w, err := shmem.Init(ctx, c, shmem.WithHeapSize(1<<20))
		if err != nil {
			return err
		}
		row, col, err := w.TeamWorld().Split2D(ctx, 3) // rows {0,1,2} {3,4,5}
		if err != nil {
			return err
		}
		v, err := shmem.Alloc[int64](ctx, w, 4)
		if err != nil {
			return err
		}
		me := w.MyPE()
		v.Local(w)[0] = int64(me)
		if err := shmem.TeamSumReduce(ctx, row, v.At(1), v.At(0), 1); err != nil {
			return err
		}
		if err := shmem.TeamSumReduce(ctx, col, v.At(2), v.At(0), 1); err != nil {
			return err
		}
		if err := shmem.TeamBroadcast(ctx, col, v.At(3), v.At(0), 1, 1); err != nil {
			return err
		}
		l := v.Local(w)
		got[me] = result{int64(row.MyPE()), int64(col.MyPE()), l[1], l[2], l[3]}
		return w.Finalize(ctx)
	})
	for pe, r := range got {
		fmt.Printf("PE %d at x=%d y=%d: row sum %d, column sum %d, column's PE 1 is PE %d\n", pe, r.x, r.y, r.rowSum, r.colSum, r.fromRow1)
	}
	fmt.Println(err)
	// Output:
	// PE 0 at x=0 y=0: row sum 3, column sum 3, column's PE 1 is PE 3
	// PE 1 at x=1 y=0: row sum 3, column sum 5, column's PE 1 is PE 4
	// PE 2 at x=2 y=0: row sum 3, column sum 7, column's PE 1 is PE 5
	// PE 3 at x=0 y=1: row sum 12, column sum 3, column's PE 1 is PE 3
	// PE 4 at x=1 y=1: row sum 12, column sum 5, column's PE 1 is PE 4
	// PE 5 at x=2 y=1: row sum 12, column sum 7, column's PE 1 is PE 5
	// <nil>
}
