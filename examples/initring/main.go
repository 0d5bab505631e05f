// Command initring passes a token around a ring of ranks with notified
// puts, each rank a process: run it under the launcher,
//
//	go run ./cmd/narmarun -n 4 go run ./examples/initring
//
// or alone (`go run ./examples/initring`: a job of one rank, which sends
// the token to itself). Every rank joins with narma.Init.
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/narma-rma/narma"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := narma.Init(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := ring(ctx, c); err != nil {
		log.Fatalf("rank %d: %v", c.Rank(), err)
	}
	if err := c.Close(); err != nil {
		log.Fatalf("rank %d: %v", c.Rank(), err)
	}
}

// ring sends a token from rank 0 around the ring three times; each rank
// adds its rank to it and learns of its arrival from the notice alone.
func ring(ctx context.Context, c *narma.Comm) error {
	const laps, tag = 3, 7
	me, n := c.Rank(), c.Size()
	next, prev := (me+1)%n, (me+n-1)%n
	w, err := narma.Allocate[int64](ctx, c, 1)
	if err != nil {
		return err
	}
	defer w.Free(ctx)
	req, err := w.NotifyInit(prev, tag, 1)
	if err != nil {
		return err
	}
	defer req.Free()
	if err := w.LockAll(ctx, 0); err != nil {
		return err
	}
	token := []int64{0}
	want := int64(0)
	for lap := 0; lap < laps; lap++ {
		if me != 0 || lap > 0 {
			if err := req.Start(); err != nil {
				return err
			}
			if _, err := req.Wait(ctx); err != nil {
				return err
			}
			token[0] = w.Local()[0]
		}
		token[0] += int64(me)
		if err := w.PutNotify(token, next, 0, narma.Tag(tag)); err != nil {
			return err
		}
		if err := w.Flush(ctx, next); err != nil {
			return err
		}
		want += int64(n * (n - 1) / 2)
	}
	if me == 0 {
		if err := req.Start(); err != nil {
			return err
		}
		if _, err := req.Wait(ctx); err != nil {
			return err
		}
		if got := w.Local()[0]; got != want {
			return fmt.Errorf("token %d after %d laps of %d ranks, want %d", got, laps, n, want)
		}
		ranks := "ranks"
		if n == 1 {
			ranks = "rank"
		}
		fmt.Printf("token went %d times around %d %s: %d\n", laps, n, ranks, w.Local()[0])
	}
	return w.UnlockAll(ctx)
}
