package bench

import (
	"fmt"
	"testing"
)

// TestFenceVariants: every variant runs with 8 B and 1 KiB puts over 2
// and 4 ranks, checks its messages, and yields one row per variant and
// size. Both strategies for the variants that use Config.Strategy.
func TestFenceVariants(t *testing.T) {
	for _, st := range strategies {
		for _, n := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/%d", st, n), func(t *testing.T) {
				vs := testVariantNames(FenceCost())
				sizes := []int{8, 1024}
				rows, err := runJob(FenceCost(), n, Config{Sizes: sizes, Iters: 5, Rounds: 2, Warmup: 1, Strategy: st})
				if err != nil {
					t.Fatal(err)
				}
				checkRows(t, rows, rowsWant{experiment: "fence", variants: vs, sizes: sizes, ranks: n, iters: 5, rounds: 2}, nil)
			})
		}
	}
}

// TestFenceDefaults: the zero sizes mean one size of 8 B, and a single
// epoch per run is checked too.
func TestFenceDefaults(t *testing.T) {
	rows, err := runJob(FenceCost(), 3, Config{Iters: 1, Rounds: 1, Warmup: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(FenceCost().Variants) || rows[0].Bytes != 8 {
		t.Fatalf("rows %+v, want one per variant at 8 B", rows)
	}
}

// TestFenceDetectsCorruption: a damaged message fails the run, for every
// variant, over 4 ranks. The messages after the fifth are damaged: the
// variants that check after the run see only the last two.
func TestFenceDetectsCorruption(t *testing.T) {
	for _, v := range testVariantNames(FenceCost()) {
		t.Run(v, func(t *testing.T) {
			cfg := Config{Sizes: []int{64}, Variants: []string{v}, Iters: 4, Rounds: 2, Warmup: -1,
				Corrupt: corruptHook(t, v, func(n int32, msg []int64) {
					if n > 5 {
						msg[len(msg)-1]++
					}
				})}
			_, err := runJob(FenceCost(), 4, cfg)
			wantNotDelivered(t, err, v, "damaged messages")
		})
	}
}

// TestFenceRanks: one rank is refused.
func TestFenceRanks(t *testing.T) {
	if _, err := runJob(FenceCost(), 1, Config{}); err == nil {
		t.Error("run over one rank succeeded")
	}
}
