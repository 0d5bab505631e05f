// Command ring passes each rank's number around a ring of ranks with
// one-sided puts, twice: once synchronized by fences (active target), once
// with exclusive locks and flushes (passive target, the target takes no
// part), and checks what arrived.
//
//	go run ./examples/ring -n 4
package main

import (
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/narma-rma/narma"
)

func main() {
	n := flag.Int("n", 4, "number of ranks")
	flag.Parse()
	err := narma.Run(*n, func(c *narma.Comm) error {
		ctx := c.Context()
		me, size := c.Rank(), c.Size()
		right := (me + 1) % size

		// A window of one int64 per rank.
		w, err := narma.Allocate[int64](ctx, c, 1)
		if err != nil {
			return err
		}

		// Fence: every rank puts its number into its right neighbour's
		// window; after the closing fence each window holds the left
		// neighbour's number.
		if err := w.Fence(ctx, narma.NoPrecede); err != nil {
			return err
		}
		if err := w.Put([]int64{int64(me)}, right, 0); err != nil {
			return err
		}
		if err := w.Fence(ctx, narma.NoSucceed); err != nil {
			return err
		}
		left := (me - 1 + size) % size
		if got := w.Local()[0]; got != int64(left) {
			return fmt.Errorf("fence ring: rank %d holds %d, want %d", me, got, left)
		}

		// Lock: every rank adds 100 times its number to its right
		// neighbour's value under an exclusive lock. The barriers keep the
		// lock epochs apart from the local reads of the window.
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if err := w.Lock(ctx, narma.Exclusive, right, 0); err != nil {
			return err
		}
		if err := w.Accumulate([]int64{100 * int64(me)}, right, 0, narma.Sum); err != nil {
			return err
		}
		if err := w.Unlock(ctx, right); err != nil {
			return err
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if got := w.Local()[0]; got != 101*int64(left) {
			return fmt.Errorf("lock ring: rank %d holds %d, want %d", me, got, 101*left)
		}
		fmt.Printf("rank %d of %d: received %d from rank %d\n", me, size, w.Local()[0], left)
		return w.Free(ctx)
	})
	if err != nil {
		log.Print(err)
		os.Exit(1)
	}
}
