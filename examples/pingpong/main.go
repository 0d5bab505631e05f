// Command pingpong is Listing 1 of Belli and Hoefler's "Notified Access"
// paper in Go: two ranks bounce a message back and forth with notified
// puts. The put itself tells the partner that the data has arrived; no
// flag, no barrier, no message besides the data.
//
//	go run ./examples/pingpong -iters 1000
//
// It prints the half round-trip time per message size, and checks every
// message's content.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/narma-rma/narma"
)

const customTag = 99 // the tag of the paper's listing

func main() {
	iters := flag.Int("iters", 1000, "round trips per size")
	maxSize := flag.Int("max", 1<<17, "largest message, in float64s")
	flag.Parse()
	err := narma.Run(2, func(c *narma.Comm) error {
		return pingpong(c, *iters, *maxSize)
	})
	if err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func pingpong(c *narma.Comm, iters, maxSize int) error {
	ctx := c.Context()
	me := c.Rank()
	partner := 1 - me
	// Two halves: the ping lands in [0, max), the pong in [max, 2max).
	w, err := narma.Allocate[float64](ctx, c, 2*maxSize)
	if err != nil {
		return err
	}
	buf := make([]float64, maxSize)
	// A persistent request for one notice with our tag from the partner.
	req, err := w.NotifyInit(partner, customTag, 1)
	if err != nil {
		return err
	}
	// Notified puts need an access epoch, like any put: one passive
	// epoch for the whole run.
	if err := w.LockAll(ctx, 0); err != nil {
		return err
	}
	if me == 0 {
		fmt.Printf("%10s %14s\n", "bytes", "half RTT")
	}
	for size := 1; size <= maxSize; size *= 2 {
		msg := buf[:size]
		start := time.Now()
		for i := 0; i < iters; i++ {
			if me == 0 { // client
				msg[size-1] = float64(i) // ping
				if err := w.PutNotify(msg, partner, 0, narma.Tag(customTag)); err != nil {
					return err
				}
				if err := w.Flush(ctx, partner); err != nil {
					return err
				}
				if err := waitFor(ctx, req); err != nil { // pong
					return err
				}
				if got := w.Local()[maxSize+size-1]; got != float64(i) {
					return fmt.Errorf("pong %d of %d floats carried %v", i, size, got)
				}
			} else { // server
				if err := waitFor(ctx, req); err != nil { // ping
					return err
				}
				copy(msg, w.Local()[:size])
				if msg[size-1] != float64(i) {
					return fmt.Errorf("ping %d of %d floats carried %v", i, size, msg[size-1])
				}
				if err := w.PutNotify(msg, partner, maxSize, narma.Tag(customTag)); err != nil {
					return err
				}
				if err := w.Flush(ctx, partner); err != nil {
					return err
				}
			}
		}
		if me == 0 {
			half := time.Since(start) / time.Duration(2*iters)
			fmt.Printf("%10d %14v\n", 8*size, half)
		}
	}
	if err := w.UnlockAll(ctx); err != nil {
		return err
	}
	if err := req.Free(); err != nil {
		return err
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	return w.Free(ctx)
}

// waitFor arms the persistent request and waits for its notice.
func waitFor(ctx context.Context, req *narma.Request) error {
	if err := req.Start(); err != nil {
		return err
	}
	_, err := req.Wait(ctx)
	return err
}
