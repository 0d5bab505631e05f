package narma_test

import (
	"fmt"

	"github.com/narma-rma/narma"
)

// A dynamic window: rank 1 attaches a buffer and sends its address to
// rank 0, which resolves it and puts into the buffer's third element.
func ExampleCreateDynamic() {
	err := narma.Run(2, func(c *narma.Comm) error {
		ctx := c.Context()
		w, err := narma.CreateDynamic[int64](ctx, c)
		if err != nil {
			return err
		}
		buf := narma.AllocMem[int64](4)
		if c.Rank() == 1 {
			a, err := w.Attach(buf)
			if err != nil {
				return err
			}
			b, _ := a.MarshalBinary()
			if err := c.Send(ctx, b, 0, 0); err != nil {
				return err
			}
		} else {
			b := make([]byte, narma.AddrSize)
			if _, err := c.Recv(ctx, b, 1, 0); err != nil {
				return err
			}
			var a narma.Addr
			if err := a.UnmarshalBinary(b); err != nil {
				return err
			}
			disp, err := w.Resolve(a)
			if err != nil {
				return err
			}
			if err := w.Lock(ctx, narma.Exclusive, a.Rank(), 0); err != nil {
				return err
			}
			if err := w.Put([]int64{42}, a.Rank(), disp+2); err != nil {
				return err
			}
			if err := w.Unlock(ctx, a.Rank()); err != nil {
				return err
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if c.Rank() == 1 {
			fmt.Println(buf)
		}
		return w.Free(ctx)
	})
	fmt.Println(err)
	// Output:
	// [0 0 42 0]
	// <nil>
}
