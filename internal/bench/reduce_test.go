package bench

import (
	"fmt"
	"testing"
)

// TestTreeReduceVariants: every variant runs at 8 B and 1 KiB over 2, 5
// and 20 ranks (20: a tree of two levels), checks every result, and
// yields one row per variant and size. Both synchronization strategies.
func TestTreeReduceVariants(t *testing.T) {
	for _, st := range strategies {
		for _, n := range []int{2, 5, 20} {
			t.Run(fmt.Sprintf("%s/%d", st, n), func(t *testing.T) {
				vs := testVariantNames(TreeReduce())
				sizes := []int{8, 1024}
				rows, err := runJob(TreeReduce(), n, Config{Sizes: sizes, Iters: 4, Rounds: 2, Warmup: 1, Strategy: st})
				if err != nil {
					t.Fatal(err)
				}
				checkRows(t, rows, rowsWant{experiment: "reduce", variants: vs, sizes: sizes, ranks: n, iters: 4, rounds: 2}, nil)
			})
		}
	}
}

// TestTreeReduceDetectsCorruption: a partial sum damaged on its way out
// fails the run, for every variant, in a tree of two levels.
func TestTreeReduceDetectsCorruption(t *testing.T) {
	for _, v := range testVariantNames(TreeReduce()) {
		t.Run(v, func(t *testing.T) {
			cfg := Config{Sizes: []int{64}, Variants: []string{v}, Iters: 3, Rounds: 1, Warmup: -1,
				Corrupt: corruptHook(t, v, func(n int32, msg []int64) {
					if n == 30 {
						msg[len(msg)-1]++
					}
				})}
			_, err := runJob(TreeReduce(), 20, cfg)
			wantNotDelivered(t, err, v, "a damaged partial sum")
		})
	}
}

// TestTreeReduceRanks: one rank is refused.
func TestTreeReduceRanks(t *testing.T) {
	if _, err := runJob(TreeReduce(), 1, Config{Sizes: []int{8}}); err == nil {
		t.Error("run over one rank succeeded")
	}
}

// TestTreeReduceTable: the table names what the times measure.
func TestTreeReduceTable(t *testing.T) {
	rows := []Row{{Experiment: "reduce", Variant: "put-notify", Bytes: 8, Ranks: 5, Iters: 4, Rounds: 3, MedianNs: 100, MinNs: 90, MaxNs: 110, MBps: 80}}
	checkTableSays(t, TreeReduce(), rows, "time per reduction in ns")
}
