// Command halo solves the 1-D heat equation by Jacobi iteration on a rod
// split among ranks, exchanging halo cells with notified puts that
// increment notification counters at the neighbour: the 1-D halo example
// of Intel's MPI-RMA notification-counter proposal. Each rank learns that
// both halo cells of an iteration arrived by watching two counters; there
// is no flag, no flush-and-signal, no barrier in the loop. The result is
// checked against a serial run.
//
//	go run ./examples/halo -n 4 -cells 25 -iters 2000
package main

import (
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/narma-rma/narma"
)

// Counters and halo slots at each rank.
const (
	fromLeft  = 0 // counter (and slot) of the cell from the left neighbour
	fromRight = 1 // counter (and slot) of the cell from the right neighbour
)

// Boundary temperatures at the two ends of the rod.
const leftEnd, rightEnd = 1.0, 0.0

func main() {
	n := flag.Int("n", 4, "number of ranks")
	cells := flag.Int("cells", 25, "cells per rank")
	iters := flag.Int("iters", 2000, "Jacobi iterations")
	flag.Parse()
	result := make([]float64, *n**cells)
	err := narma.Run(*n, func(c *narma.Comm) error {
		mine, err := solve(c, *cells, *iters)
		if err != nil {
			return err
		}
		copy(result[c.Rank()**cells:], mine)
		return nil
	})
	if err != nil {
		log.Print(err)
		os.Exit(1)
	}
	want := serial(*n**cells, *iters)
	for i := range want {
		if result[i] != want[i] {
			log.Printf("cell %d: %v, serial run %v", i, result[i], want[i])
			os.Exit(1)
		}
	}
	fmt.Printf("%d ranks x %d cells, %d iterations: identical to the serial run; T(middle) = %.6f\n",
		*n, *cells, *iters, result[len(result)/2])
}

// solve runs the iterations on this rank's cells and returns them.
func solve(c *narma.Comm, cells, iters int) ([]float64, error) {
	ctx := c.Context()
	me, size := c.Rank(), c.Size()
	// The window holds the halo cells, twice: iteration i writes the slots
	// of parity i%2, so a neighbour one iteration ahead never overwrites a
	// cell still needed.
	w, err := narma.Allocate[float64](ctx, c, 4)
	if err != nil {
		return nil, err
	}
	if err := w.SetCounters(ctx, 2); err != nil {
		return nil, err
	}
	if err := w.LockAll(ctx, 0); err != nil {
		return nil, err
	}
	u := make([]float64, cells)
	next := make([]float64, cells)
	for it := 1; it <= iters; it++ {
		slot := 2 * (it % 2)
		// Send my edge cells; each put bumps a counter at its target.
		if me > 0 {
			if err := w.PutNotify(u[:1], me-1, slot+fromRight, narma.Counter(fromRight)); err != nil {
				return nil, err
			}
		}
		if me < size-1 {
			if err := w.PutNotify(u[cells-1:], me+1, slot+fromLeft, narma.Counter(fromLeft)); err != nil {
				return nil, err
			}
		}
		// Wait until both halo cells of this iteration have landed.
		left, right := leftEnd, rightEnd
		if me > 0 {
			if err := w.WaitCounter(ctx, fromLeft, uint64(it)); err != nil {
				return nil, err
			}
			left = w.Local()[slot+fromLeft]
		}
		if me < size-1 {
			if err := w.WaitCounter(ctx, fromRight, uint64(it)); err != nil {
				return nil, err
			}
			right = w.Local()[slot+fromRight]
		}
		jacobi(next, u, left, right)
		u, next = next, u
		// The source cells of the puts change in the next iteration:
		// complete the puts first.
		if err := w.FlushAll(ctx); err != nil {
			return nil, err
		}
	}
	if err := w.UnlockAll(ctx); err != nil {
		return nil, err
	}
	if err := c.Barrier(ctx); err != nil {
		return nil, err
	}
	return u, w.Free(ctx)
}

// jacobi computes one step: each cell becomes the mean of its neighbours.
func jacobi(next, u []float64, left, right float64) {
	n := len(u)
	for i := range u {
		l, r := left, right
		if i > 0 {
			l = u[i-1]
		}
		if i < n-1 {
			r = u[i+1]
		}
		next[i] = (l + r) / 2
	}
}

// serial is the same computation on one rod.
func serial(cells, iters int) []float64 {
	u, next := make([]float64, cells), make([]float64, cells)
	for it := 0; it < iters; it++ {
		jacobi(next, u, leftEnd, rightEnd)
		u, next = next, u
	}
	return u
}
