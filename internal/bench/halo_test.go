package bench

import (
	"fmt"
	"testing"
)

// TestHaloGrid: the process grid is as square as the ranks allow.
func TestHaloGrid(t *testing.T) {
	for _, c := range []struct{ np, px, py int }{{2, 1, 2}, {4, 2, 2}, {6, 2, 3}, {7, 1, 7}, {12, 3, 4}, {16, 4, 4}} {
		if px, py := hGrid(c.np); px != c.px || py != c.py {
			t.Errorf("hGrid(%d) = %d x %d, want %d x %d", c.np, px, py, c.px, c.py)
		}
	}
}

// TestHaloVariants: every variant runs with tiles of 1 x 1, 4 x 4 and
// 7 x 7 cells over 2, 4 and 6 ranks, checks every edge it receives and
// its tile, and yields one row per variant and size. Both
// synchronization strategies.
func TestHaloVariants(t *testing.T) {
	for _, st := range strategies {
		for _, n := range []int{2, 4, 6} {
			t.Run(fmt.Sprintf("%s/%d", st, n), func(t *testing.T) {
				vs := testVariantNames(Halo())
				sizes := []int{8, 4 * 8, 7 * 8}
				rows, err := runJob(Halo(), n, Config{Sizes: sizes, Iters: 5, Rounds: 2, Warmup: 1, Strategy: st})
				if err != nil {
					t.Fatal(err)
				}
				checkRows(t, rows, rowsWant{experiment: "halo", variants: vs, sizes: sizes, ranks: n, iters: 5, rounds: 2}, nil)
			})
		}
	}
}

// TestHaloDetectsCorruption: an edge damaged on its way out fails the
// run, for every variant, over 2 and 6 ranks, early and late in the run.
func TestHaloDetectsCorruption(t *testing.T) {
	for _, v := range testVariantNames(Halo()) {
		for _, c := range []struct {
			ranks int
			nth   int32
		}{{2, 1}, {2, 7}, {6, 30}} {
			t.Run(fmt.Sprintf("%s/%d/%d", v, c.ranks, c.nth), func(t *testing.T) {
				cfg := Config{Sizes: []int{5 * 8}, Variants: []string{v}, Iters: 4, Rounds: 1, Warmup: -1,
					Corrupt: corruptHook(t, v, func(n int32, msg []int64) {
						if len(msg) != 5 {
							t.Errorf("Corrupt called with %d words, want 5", len(msg))
						}
						if n == c.nth {
							msg[len(msg)/2] ^= 1
						}
					})}
				_, err := runJob(Halo(), c.ranks, cfg)
				wantNotDelivered(t, err, v, "a damaged edge")
			})
		}
	}
}

// TestHaloSizes: one rank and edges too large are refused.
func TestHaloSizes(t *testing.T) {
	if _, err := runJob(Halo(), 1, Config{Sizes: []int{64}}); err == nil {
		t.Error("run over one rank succeeded")
	}
	if _, err := runJob(Halo(), 2, Config{Sizes: []int{2 * MaxHaloSize}}); err == nil {
		t.Error("run with too large an edge succeeded")
	}
}

// TestHaloDefaults: the zero Config runs the default sizes (a quick
// check with few rounds).
func TestHaloDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	rows, err := runJob(Halo(), 4, Config{Sizes: DefaultHaloSizes[:2], Rounds: 1, Iters: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2*len(Halo().Variants) {
		t.Errorf("%d rows, want %d", len(rows), 2*len(Halo().Variants))
	}
}

// TestHaloTable: the table names what the times measure.
func TestHaloTable(t *testing.T) {
	rows := []Row{{Experiment: "halo", Variant: "put-notify", Bytes: 64, Ranks: 4, Iters: 2, Rounds: 3, MedianNs: 100, MinNs: 90, MaxNs: 110, MBps: 80}}
	checkTableSays(t, Halo(), rows, "time per iteration in ns")
}
