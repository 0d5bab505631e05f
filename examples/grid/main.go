// Command grid multiplies two matrices on a 2-D grid of ranks, SUMMA
// style, with a row and a column communicator per rank made by
// Comm.Split: at step k the ranks of grid column k broadcast their block
// of A along their rows, the ranks of grid row k their block of B along
// their columns, and every rank adds the product of the two blocks to
// its block of C. The result is gathered on rank 0 and checked against a
// serial product.
//
//	go run ./examples/grid -rows 2 -cols 3 -block 4
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"os"

	"github.com/narma-rma/narma"
)

func main() {
	rows := flag.Int("rows", 2, "rows of the grid of ranks")
	cols := flag.Int("cols", 3, "columns of the grid of ranks")
	block := flag.Int("block", 4, "side of each rank's square block")
	flag.Parse()
	if *rows < 1 || *cols < 1 || *block < 1 {
		log.Fatal("grid: -rows, -cols and -block must be positive")
	}
	err := narma.Run(*rows**cols, func(c *narma.Comm) error {
		return multiply(c, *rows, *cols, *block)
	})
	if err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

// a and b give the matrices' elements: A[i][j] and B[i][j].
func a(i, j int) float64 { return float64((i*7+j*3)%11) - 5 }
func b(i, j int) float64 { return float64((i*5+j*2)%13)/4 - 1 }

// multiply computes C = A B with A of rows x cols blocks, B of cols x
// cols blocks and C of rows x cols blocks, each bs x bs. The rank at
// (gi, gj) of the grid holds block (gi, gj) of A and of C; block (k, j)
// of B is made by the rank at (k%rows, j), which broadcasts it down
// column j at step k.
func multiply(c *narma.Comm, rows, cols, bs int) error {
	ctx := c.Context()
	me := c.Rank()
	gi, gj := me/cols, me%cols
	row, err := c.Split(ctx, gi, gj) // the ranks of grid row gi, by column
	if err != nil {
		return err
	}
	col, err := c.Split(ctx, gj, gi) // the ranks of grid column gj, by row
	if err != nil {
		return err
	}
	cBlk := make([]float64, bs*bs)
	aPanel := make([]float64, bs*bs)
	bPanel := make([]float64, bs*bs)
	for k := range cols {
		// A's block (gi, k) is on the rank of this row in grid column k.
		if gj == k {
			fill(aPanel, bs, gi*bs, k*bs, a)
		}
		if err := narma.Bcast(ctx, row, aPanel, k); err != nil {
			return err
		}
		// B's block (k, gj) is on the rank of this column in grid row
		// k%rows.
		if gi == k%rows {
			fill(bPanel, bs, k*bs, gj*bs, b)
		}
		if err := narma.Bcast(ctx, col, bPanel, k%rows); err != nil {
			return err
		}
		for i := range bs {
			for l := range bs {
				x := aPanel[i*bs+l]
				for j := range bs {
					cBlk[i*bs+j] += x * bPanel[l*bs+j]
				}
			}
		}
	}
	var all []float64
	if me == 0 {
		all = make([]float64, len(cBlk)*c.Size())
	}
	if err := narma.Gather(ctx, c, cBlk, all, 0); err != nil {
		return err
	}
	if me == 0 {
		return check(all, rows, cols, bs)
	}
	return nil
}

// fill sets blk to the bs x bs block of f at (i0, j0).
func fill(blk []float64, bs, i0, j0 int, f func(i, j int) float64) {
	for i := range bs {
		for j := range bs {
			blk[i*bs+j] = f(i0+i, j0+j)
		}
	}
}

// check compares the gathered blocks of C with a serial product and
// prints the result.
func check(all []float64, rows, cols, bs int) error {
	worst := 0.0
	for r := range rows * cols {
		gi, gj := r/cols, r%cols
		for i := range bs {
			for j := range bs {
				want := 0.0
				for l := range cols * bs {
					want += a(gi*bs+i, l) * b(l, gj*bs+j)
				}
				worst = math.Max(worst, math.Abs(all[r*bs*bs+i*bs+j]-want))
			}
		}
	}
	if worst > 1e-9 {
		return fmt.Errorf("grid: C differs from the serial product by %g", worst)
	}
	fmt.Printf("C = A B on a %d x %d grid of ranks, blocks of %d x %d: matches the serial product (largest difference %g)\n",
		rows, cols, bs, bs, worst)
	return nil
}
