package bench

import (
	"fmt"
	"testing"
)

// TestStencilVariants: every variant runs on 32 x 32 and 48 x 48 grids
// over 2 and 3 ranks, checks every value it receives and its block, and
// yields one row per variant and size. Both synchronization strategies.
func TestStencilVariants(t *testing.T) {
	for _, st := range strategies {
		for _, n := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/%d", st, n), func(t *testing.T) {
				vs := testVariantNames(Stencil())
				sizes := []int{32 * 8, 48 * 8}
				rows, err := runJob(Stencil(), n, Config{Sizes: sizes, Iters: 2, Rounds: 2, Warmup: 1, Strategy: st})
				if err != nil {
					t.Fatal(err)
				}
				checkRows(t, rows, rowsWant{experiment: "stencil", variants: vs, sizes: sizes, ranks: n, iters: 2, rounds: 2}, nil)
			})
		}
	}
}

// TestStencilDetectsCorruption: a boundary value or a corner damaged on
// its way out fails the run, for every variant, over 3 ranks.
func TestStencilDetectsCorruption(t *testing.T) {
	for _, v := range testVariantNames(Stencil()) {
		// The 20th value is a row's; with 2 iterations of a 16 x 16
		// grid over 2 ranks, the 16th is the corner.
		for _, c := range []struct {
			ranks int
			nth   int32
		}{{3, 20}, {2, 16}} {
			t.Run(fmt.Sprintf("%s/%d", v, c.nth), func(t *testing.T) {
				cfg := Config{Sizes: []int{16 * 8}, Variants: []string{v}, Iters: 2, Rounds: 1, Warmup: -1,
					Corrupt: corruptHook(t, v, func(n int32, msg []int64) {
						if len(msg) != 1 {
							t.Errorf("Corrupt called with %d words, want 1", len(msg))
						}
						if n == c.nth {
							msg[0]++
						}
					})}
				_, err := runJob(Stencil(), c.ranks, cfg)
				wantNotDelivered(t, err, v, "a damaged value")
			})
		}
	}
}

// TestStencilSizes: one rank, grids too narrow for the ranks and grids
// too large are refused.
func TestStencilSizes(t *testing.T) {
	if _, err := runJob(Stencil(), 1, Config{Sizes: []int{256}}); err == nil {
		t.Error("run over one rank succeeded")
	}
	if _, err := runJob(Stencil(), 3, Config{Sizes: []int{40}}); err == nil {
		t.Error("run with 5 columns over 3 ranks succeeded")
	}
	if _, err := runJob(Stencil(), 2, Config{Sizes: []int{2 * MaxStencilSize}}); err == nil {
		t.Error("run with too large a grid succeeded")
	}
}

// TestStencilTable: the table names what the times measure.
func TestStencilTable(t *testing.T) {
	rows := []Row{{Experiment: "stencil", Variant: "put-notify", Bytes: 256, Ranks: 2, Iters: 2, Rounds: 3, MedianNs: 100, MinNs: 90, MaxNs: 110, MBps: 80}}
	checkTableSays(t, Stencil(), rows, "time per iteration in ns")
}
