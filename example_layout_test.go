package narma_test

import (
	"fmt"

	"github.com/narma-rma/narma"
)

// A halo exchange of a 3-D block: rank 0 sends the face of last index 2
// of its 2x3x3 block into the face of last index 0 of rank 1's block.
// Subarray describes a face on either side; here rank 0 gathers its face
// into a contiguous buffer first (a Get from its own window), then puts
// the buffer into rank 1's face.
func ExampleSubarray() {
	sizes := []int{2, 3, 3}
	face := []int{2, 3, 1}
	var got []int
	err := narma.Run(2, func(c *narma.Comm) error {
		ctx := c.Context()
		w, err := narma.Allocate[int32](ctx, c, 2*3*3)
		if err != nil {
			return err
		}
		for i := range w.Local() {
			w.Local()[i] = int32(100*c.Rank() + i)
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if c.Rank() == 0 {
			if err := w.Lock(ctx, narma.Exclusive, 0, 0); err != nil {
				return err
			}
			buf := make([]int32, 2*3)
			high := narma.Subarray(sizes, face, []int{0, 0, 2})
			if err := w.GetStrided(buf, narma.Contiguous, 0, 0, high); err != nil {
				return err
			}
			if err := w.Unlock(ctx, 0); err != nil {
				return err
			}
			if err := w.Lock(ctx, narma.Exclusive, 1, 0); err != nil {
				return err
			}
			low := narma.Subarray(sizes, face, []int{0, 0, 0})
			if err := w.PutStrided(buf, narma.Contiguous, 1, 0, low); err != nil {
				return err
			}
			if err := w.Unlock(ctx, 1); err != nil {
				return err
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if c.Rank() == 1 {
			for _, v := range w.Local() {
				got = append(got, int(v))
			}
		}
		return w.Free(ctx)
	})
	fmt.Println(got, err)
	// Output: [2 101 102 5 104 105 8 107 108 11 110 111 14 113 114 17 116 117] <nil>
}
