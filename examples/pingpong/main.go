// Command pingpong is Listing 1 of Belli and Hoefler's "Notified Access"
// paper in Go: two ranks bounce a message back and forth with notified
// puts. The put itself tells the partner that the data has arrived; no
// flag, no barrier, no message besides the data.
//
//	go run ./examples/pingpong -iters 1000
//
// The two ranks are goroutines of this process, over the in-process
// transport that NARMA_TRANSPORT selects ("local" if unset). It prints
// the transport and the round trips per size, then, per message size,
// the half round-trip time in nanoseconds. Every element of every
// message is checked: each ping carries values that only its round trip
// has, the partner checks them all and echoes them, and the first rank
// checks the echo. The checks and the filling of the messages lie
// outside the timed part of each round trip; what they leave behind does
// not: a rank that has read a message holds its cache lines, which the
// next put into the same place must take back, so from a few KiB on the
// times are those of a receiver that uses its data (up to about twice
// those of one that never reads it).
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
	if *iters < 1 || *maxSize < 1 {
		log.Fatal("pingpong: -iters and -max must be at least 1")
	}
	transport := os.Getenv("NARMA_TRANSPORT")
	if transport == "" {
		transport = "local"
	}
	fmt.Printf("ping-pong with notified puts: 2 ranks as goroutines of one process, transport %s,\n", transport)
	fmt.Printf("%d round trips per size, every element of every message checked\n\n", *iters)
	err := narma.Run(2, func(c *narma.Comm) error {
		return pingpong(c, *iters, *maxSize)
	})
	if err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

// value is element j of the ping of round trip i: no two round trips of
// a run send the same value at the same place, so a message that did
// not arrive whole, or an old one, fails the check. Exact in a float64
// while i*maxSize+j < 2^53.
func value(i, j, maxSize int) float64 { return float64(i*maxSize + j) }

// check returns an error naming the first element of msg, the message of
// round trip i, that is not what the ping carried.
func check(what string, msg []float64, i, maxSize int) error {
	for j, got := range msg {
		if want := value(i, j, maxSize); got != want {
			return fmt.Errorf("%s %d of %d floats: element %d is %v, want %v", what, i, len(msg), j, got, want)
		}
	}
	return nil
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
		fmt.Printf("%10s %14s\n", "bytes", "half RTT (ns)")
	}
	for size := 1; size <= maxSize; size *= 2 {
		msg := buf[:size]
		var timed time.Duration // the round trips, without the checks
		for i := 0; i < iters; i++ {
			if me == 0 { // client
				for j := range msg {
					msg[j] = value(i, j, maxSize)
				}
				start := time.Now()
				if err := w.PutNotify(msg, partner, 0, narma.Tag(customTag)); err != nil { // ping
					return err
				}
				if err := w.Flush(ctx, partner); err != nil {
					return err
				}
				if err := waitFor(ctx, req); err != nil { // pong
					return err
				}
				timed += time.Since(start)
				if err := check("pong", w.Local()[maxSize:maxSize+size], i, maxSize); err != nil {
					return err
				}
			} else { // server
				if err := waitFor(ctx, req); err != nil { // ping
					return err
				}
				copy(msg, w.Local()[:size])
				if err := w.PutNotify(msg, partner, maxSize, narma.Tag(customTag)); err != nil { // pong
					return err
				}
				if err := w.Flush(ctx, partner); err != nil {
					return err
				}
				// Checked while the client checks the pong: the next
				// ping comes only after that.
				if err := check("ping", msg, i, maxSize); err != nil {
					return err
				}
			}
		}
		if me == 0 {
			half := float64(timed.Nanoseconds()) / float64(2*iters)
			fmt.Printf("%10d %14.0f\n", 8*size, half)
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
