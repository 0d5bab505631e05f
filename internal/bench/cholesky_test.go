package bench

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narma-rma/narma"
)

// runCholeskyJob runs the Cholesky experiment over np goroutine ranks,
// with a timeout, and returns rank 0's rows.
func runCholeskyJob(np int, cfg Config) ([]Row, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var rows []Row
	err := narma.RunContext(ctx, np, func(c *narma.Comm) error {
		r, err := Cholesky().Run(c, cfg)
		if c.Rank() == 0 {
			rows = r
		} else if r != nil {
			return fmt.Errorf("rank %d returned rows", c.Rank())
		}
		return err
	})
	return rows, err
}

func choleskyVariants() []string {
	var vs []string
	for _, v := range Cholesky().Variants {
		vs = append(vs, v.Name)
	}
	return vs
}

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
	vs := choleskyVariants()
	sizes := []int{64, 32}
	for _, st := range []narma.Strategy{narma.Immediate, narma.Deferred} {
		for _, np := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/%dranks", st, np), func(t *testing.T) {
				rows, err := runCholeskyJob(np, Config{Sizes: sizes, Iters: 2, Rounds: 2, Warmup: 1, Strategy: st})
				if err != nil {
					t.Fatal(err)
				}
				if len(rows) != len(vs)*len(sizes) {
					t.Fatalf("%d rows, want %d: %+v", len(rows), len(vs)*len(sizes), rows)
				}
				i := 0
				for _, size := range sizes {
					for _, v := range vs {
						r := rows[i]
						i++
						if r.Experiment != "cholesky" || r.Variant != v || r.Bytes != size || r.Ranks != np || r.Iters != 2 || r.Rounds != 2 || r.Unsound {
							t.Errorf("row %+v, want cholesky %s %d B, %d ranks, 2 iters, 2 rounds", r, v, size, np)
						}
						if !(r.MinNs > 0 && r.MinNs <= r.MedianNs && r.MedianNs <= r.MaxNs && r.MBps > 0) {
							t.Errorf("row %+v: times or bandwidth out of order", r)
						}
					}
				}
				var b strings.Builder
				if err := WriteTable(&b, Cholesky(), rows); err != nil || !strings.Contains(b.String(), "time per factorization") {
					t.Errorf("table (%v) does not say it shows times per factorization:\n%s", err, b.String())
				}
			})
		}
	}
}

// TestCholeskyDetectsCorruption: a tile message whose stamp or whose
// data is damaged on its way out fails the run, for every variant: the
// stamp check or the residual check.
func TestCholeskyDetectsCorruption(t *testing.T) {
	for _, v := range choleskyVariants() {
		for _, what := range []string{"stamp", "data"} {
			t.Run(v+"/"+what, func(t *testing.T) {
				var sent atomic.Int32
				cfg := Config{Sizes: []int{64}, Variants: []string{v}, Iters: 1, Rounds: 1, Warmup: -1,
					Corrupt: func(variant string, msg []int64) {
						if variant != v {
							t.Errorf("Corrupt called for %q in a run of %q", variant, v)
						}
						if sent.Add(1) != 5 {
							return
						}
						if what == "stamp" {
							msg[len(msg)-1]++
						} else {
							x := len(msg) / 2
							msg[x] = int64(math.Float64bits(math.Float64frombits(uint64(msg[x])) + 1))
						}
					}}
				_, err := runCholeskyJob(4, cfg)
				want := "data not delivered"
				if what == "data" {
					want = "wrong factor"
				}
				if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), v) {
					t.Fatalf("run with a damaged %s: %v, want a %s error saying %q", what, err, v, want)
				}
			})
		}
	}
}

// TestCholeskyOneRank: a job of one rank is refused.
func TestCholeskyOneRank(t *testing.T) {
	if _, err := runCholeskyJob(1, Config{Sizes: []int{64}}); err == nil {
		t.Error("cholesky over one rank succeeded")
	}
}
