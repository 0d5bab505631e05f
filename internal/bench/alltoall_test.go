package bench

import (
	"fmt"
	"testing"
)

// TestAllToAllVariants: every variant runs at 8 B and 1 KiB over 3 and 4
// ranks, under both synchronization strategies, checks every block it
// receives, and yields one row per variant and size.
func TestAllToAllVariants(t *testing.T) {
	vs := testVariantNames(AllToAll())
	sizes := []int{8, 1024}
	for _, st := range strategies {
		for _, np := range []int{3, 4} {
			t.Run(fmt.Sprintf("%s/%dranks", st, np), func(t *testing.T) {
				rows, err := runJobTimeout(AllToAll(), np, Config{Sizes: sizes, Iters: 6, Rounds: 3, Warmup: 2, Strategy: st})
				if err != nil {
					t.Fatal(err)
				}
				checkRows(t, rows, rowsWant{experiment: "alltoall", variants: vs, sizes: sizes, ranks: np, iters: 6, rounds: 3},
					func(r Row, _ string, size int) {
						if want := float64(size*(np-1)) / r.MedianNs * 1e3; r.MBps != want {
							t.Errorf("row %+v: bandwidth %g, want %g (bytes received per round)", r, r.MBps, want)
						}
					})
				checkTableSays(t, AllToAll(), rows, "time per round")
			})
		}
	}
}

// TestAllToAllDetectsCorruption: a block whose last word is damaged on its
// way out fails the run, for every variant.
func TestAllToAllDetectsCorruption(t *testing.T) {
	for _, v := range testVariantNames(AllToAll()) {
		t.Run(v, func(t *testing.T) {
			cfg := Config{Sizes: []int{64}, Variants: []string{v}, Iters: 4, Rounds: 1, Warmup: -1,
				// Every rank calls it: damage the fifth block, whoever sends it.
				Corrupt: corruptHook(t, v, func(n int32, msg []int64) {
					if n == 5 {
						msg[len(msg)-1]++
					}
				})}
			_, err := runJobTimeout(AllToAll(), 3, cfg)
			wantNotDelivered(t, err, v, "a damaged block")
		})
	}
}

// TestAllToAllOneRank: a job of one rank is refused.
func TestAllToAllOneRank(t *testing.T) {
	if _, err := runJobTimeout(AllToAll(), 1, Config{Sizes: []int{8}}); err == nil {
		t.Error("all-to-all over one rank succeeded")
	}
	if _, err := runJobTimeout(AllToAll(), 2, Config{Sizes: []int{12}}); err == nil {
		t.Error("run with a 12-byte size succeeded")
	}
}
