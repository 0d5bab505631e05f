package bench

import (
	"fmt"
	"math"
	"testing"
)

// TestPanelIDs: panel tile ids number the tiles below the diagonal.
func TestPanelIDs(t *testing.T) {
	id := 0
	for i := 1; i < CholeskyTiles; i++ {
		for k := 0; k < i; k++ {
			if got := panelID(i, k); got != id {
				t.Fatalf("panelID(%d, %d) = %d, want %d", i, k, got, id)
			}
			if gi, gk := panelTile(id); gi != i || gk != k {
				t.Fatalf("panelTile(%d) = (%d, %d), want (%d, %d)", id, gi, gk, i, k)
			}
			id++
		}
	}
}

// TestCholeskyVariants: every variant factorizes 8x8 tiles (a 64x64
// matrix) over 2 and 4 ranks, under both synchronization strategies,
// with its residual checked, and yields one row per variant and size.
func TestCholeskyVariants(t *testing.T) {
	vs := testVariantNames(Cholesky())
	sizes := []int{64, 32}
	for _, st := range strategies {
		for _, np := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/%dranks", st, np), func(t *testing.T) {
				rows, err := runJobTimeout(Cholesky(), np, Config{Sizes: sizes, Iters: 2, Rounds: 2, Warmup: 1, Strategy: st})
				if err != nil {
					t.Fatal(err)
				}
				checkRows(t, rows, rowsWant{experiment: "cholesky", variants: vs, sizes: sizes, ranks: np, iters: 2, rounds: 2}, nil)
				checkTableSays(t, Cholesky(), rows, "time per factorization")
			})
		}
	}
}

// TestCholeskyDetectsCorruption: a tile message whose stamp or whose
// data is damaged on its way out fails the run, for every variant: the
// stamp check or the residual check.
func TestCholeskyDetectsCorruption(t *testing.T) {
	for _, v := range testVariantNames(Cholesky()) {
		for _, what := range []string{"stamp", "data"} {
			t.Run(v+"/"+what, func(t *testing.T) {
				cfg := Config{Sizes: []int{64}, Variants: []string{v}, Iters: 1, Rounds: 1, Warmup: -1,
					Corrupt: corruptHook(t, v, func(n int32, msg []int64) {
						if n != 5 {
							return
						}
						if what == "stamp" {
							msg[len(msg)-1]++
						} else {
							x := len(msg) / 2
							msg[x] = int64(math.Float64bits(math.Float64frombits(uint64(msg[x])) + 1))
						}
					})}
				_, err := runJobTimeout(Cholesky(), 4, cfg)
				want := "data not delivered"
				if what == "data" {
					want = "wrong factor"
				}
				wantFailure(t, err, v, want, "a damaged "+what)
			})
		}
	}
}

// TestCholeskyOneRank: a job of one rank is refused.
func TestCholeskyOneRank(t *testing.T) {
	if _, err := runJobTimeout(Cholesky(), 1, Config{Sizes: []int{64}}); err == nil {
		t.Error("cholesky over one rank succeeded")
	}
}
