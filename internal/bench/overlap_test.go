package bench

import (
	"errors"
	"math"
	"testing"

	"github.com/narma-rma/narma"
)

// TestOverlapVariants: every variant runs at 8 B and 4 KiB, checks every
// message, and yields one row per variant and size with the time per
// iteration and a finite share. Both strategies.
func TestOverlapVariants(t *testing.T) {
	for _, st := range strategies {
		t.Run(st.String(), func(t *testing.T) {
			vs := testVariantNames(Overlap())
			sizes := []int{8, 4096}
			rows, err := runJob(Overlap(), 2, Config{Sizes: sizes, Iters: 5, Rounds: 3, Warmup: 2, Strategy: st})
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, rows, rowsWant{experiment: "overlap", variants: vs, sizes: sizes, ranks: 2, iters: 5, rounds: 3, noBandwidth: true},
				func(r Row, _ string, _ int) {
					if math.IsNaN(r.OverlapPct) || math.IsInf(r.OverlapPct, 0) {
						t.Errorf("row %+v: share not finite", r)
					}
				})
		})
	}
}

// TestOverlapShare: the formula.
func TestOverlapShare(t *testing.T) {
	for _, c := range []struct{ comm, comp, total, want float64 }{
		{100, 100, 100, 100}, // fully hidden
		{100, 100, 200, 0},   // nothing hidden
		{100, 100, 150, 50},
		{0, 100, 100, 0},
	} {
		if got := OverlapShare(c.comm, c.comp, c.total); got != c.want {
			t.Errorf("OverlapShare(%v, %v, %v) = %v, want %v", c.comm, c.comp, c.total, got, c.want)
		}
	}
}

// TestOverlapDetectsCorruption: a damaged message fails the run, for
// every variant.
func TestOverlapDetectsCorruption(t *testing.T) {
	for _, v := range testVariantNames(Overlap()) {
		t.Run(v, func(t *testing.T) {
			cfg := Config{Sizes: []int{64}, Variants: []string{v}, Iters: 3, Rounds: 1, Warmup: -1,
				Corrupt: corruptHook(t, v, func(n int32, msg []int64) {
					if n == 4 {
						msg[0]++
					}
				})}
			_, err := runJob(Overlap(), 2, cfg)
			wantNotDelivered(t, err, v, "a damaged message")
		})
	}
}

// TestOverlapRanks: only two ranks are accepted.
func TestOverlapRanks(t *testing.T) {
	err := narma.Run(3, func(c *narma.Comm) error {
		_, err := Overlap().Run(c, Config{Sizes: []int{8}})
		if err == nil {
			return errors.New("run over 3 ranks succeeded")
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}
