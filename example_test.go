package narma_test

import (
	"fmt"
	"sort"

	"github.com/narma-rma/narma"
)

// Each rank puts its number into its right neighbour's window between two
// fences.
func ExampleWin_Fence() {
	var got [4]int64
	err := narma.Run(4, func(c *narma.Comm) error {
		ctx := c.Context()
		w, err := narma.Allocate[int64](ctx, c, 1)
		if err != nil {
			return err
		}
		if err := w.Fence(ctx, narma.NoPrecede); err != nil {
			return err
		}
		if err := w.Put([]int64{int64(c.Rank())}, (c.Rank()+1)%c.Size(), 0); err != nil {
			return err
		}
		if err := w.Fence(ctx, narma.NoSucceed); err != nil {
			return err
		}
		got[c.Rank()] = w.Local()[0]
		return w.Free(ctx)
	})
	fmt.Println(got, err)
	// Output: [3 0 1 2] <nil>
}

// FetchAndOp under a shared lock hands out unique tickets from a counter
// on rank 0; the target takes no part.
func ExampleWin_FetchAndOp() {
	tickets := make([]int64, 4)
	err := narma.Run(4, func(c *narma.Comm) error {
		ctx := c.Context()
		w, err := narma.Allocate[int64](ctx, c, 1)
		if err != nil {
			return err
		}
		if err := w.Lock(ctx, narma.Shared, 0, 0); err != nil {
			return err
		}
		if err := w.FetchAndOp(1, &tickets[c.Rank()], 0, 0, narma.Sum); err != nil {
			return err
		}
		if err := w.Unlock(ctx, 0); err != nil {
			return err
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		return w.Free(ctx)
	})
	sort.Slice(tickets, func(i, j int) bool { return tickets[i] < tickets[j] })
	fmt.Println(tickets, err)
	// Output: [0 1 2 3] <nil>
}

// A column of a row-major matrix travels as a strided layout: one block of
// one element per row, a row length apart.
func ExampleWin_PutStrided() {
	const rows, cols = 3, 4
	var col []float64
	err := narma.Run(2, func(c *narma.Comm) error {
		ctx := c.Context()
		w, err := narma.Allocate[float64](ctx, c, rows*cols)
		if err != nil {
			return err
		}
		if err := w.Fence(ctx, 0); err != nil {
			return err
		}
		if c.Rank() == 0 {
			// Rank 0 writes 1, 2, 3 into column 2 of rank 1's matrix.
			src := []float64{1, 2, 3}
			if err := w.PutStrided(src, narma.Contiguous, 1, 2, narma.Vector(rows, 1, cols)); err != nil {
				return err
			}
		}
		if err := w.Fence(ctx, 0); err != nil {
			return err
		}
		if c.Rank() == 1 {
			col = append([]float64(nil), w.Local()...)
		}
		return w.Free(ctx)
	})
	fmt.Println(col, err)
	// Output: [0 0 1 0 0 0 2 0 0 0 3 0] <nil>
}

// Two-sided messages with wildcards.
func ExampleComm_Recv() {
	err := narma.Run(3, func(c *narma.Comm) error {
		ctx := c.Context()
		if c.Rank() != 0 {
			return c.Send(ctx, []byte{byte(c.Rank())}, 0, 7)
		}
		sum := 0
		for i := 0; i < 2; i++ {
			buf := make([]byte, 1)
			st, err := c.Recv(ctx, buf, narma.AnySource, narma.AnyTag)
			if err != nil {
				return err
			}
			sum += int(buf[0]) * st.Tag
		}
		fmt.Println("sum", sum)
		return nil
	})
	fmt.Println(err)
	// Output:
	// sum 21
	// <nil>
}

// Rooted collectives: each rank's block gathered at rank 0, and an
// exclusive prefix sum giving each rank the offset of its block.
func ExampleGatherv() {
	err := narma.Run(3, func(c *narma.Comm) error {
		ctx, me := c.Context(), c.Rank()
		mine := make([]int32, me+1) // rank r has r+1 elements
		for i := range mine {
			mine[i] = int32(10*me + i)
		}
		offset := make([]int64, 1)
		if err := narma.Exscan(ctx, c, []int64{int64(len(mine))}, offset, narma.Sum); err != nil {
			return err
		}
		var all []int32
		if me == 0 {
			all = make([]int32, 6)
		}
		if err := narma.Gatherv(ctx, c, mine, all, []int{1, 2, 3}, nil, 0); err != nil {
			return err
		}
		if me == 2 {
			fmt.Println("rank 2's block starts at", offset[0])
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if me == 0 {
			fmt.Println(all)
		}
		return nil
	})
	fmt.Println(err)
	// Output:
	// rank 2's block starts at 3
	// [0 10 11 20 21 22]
	// <nil>
}

// A 2 x 3 process grid: row and column communicators made by Split, a
// sum along each row, and a broadcast down each column from row 0.
func ExampleComm_Split() {
	const rows, cols = 2, 3
	err := narma.Run(rows*cols, func(c *narma.Comm) error {
		ctx, me := c.Context(), c.Rank()
		row, err := c.Split(ctx, me/cols, me%cols) // ranks of one row, by column
		if err != nil {
			return err
		}
		col, err := c.Split(ctx, me%cols, me/cols) // ranks of one column, by row
		if err != nil {
			return err
		}
		sum := []int64{0}
		if err := narma.Allreduce(ctx, row, []int64{int64(me)}, sum, narma.Sum); err != nil {
			return err
		}
		top := []int64{sum[0]}
		if err := narma.Bcast(ctx, col, top, 0); err != nil {
			return err
		}
		if me == cols*rows-1 {
			fmt.Printf("rank %d: %d of %d in its row, %d of %d in its column; row sum %d, row 0's %d\n",
				me, row.Rank(), row.Size(), col.Rank(), col.Size(), sum[0], top[0])
		}
		return nil
	})
	fmt.Println(err)
	// Output:
	// rank 5: 2 of 3 in its row, 1 of 2 in its column; row sum 12, row 0's 3
	// <nil>
}
