package bench

import (
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/narma-rma/narma"
)

// runOverlapJob runs the overlap experiment over two goroutine ranks and
// returns rank 0's rows.
func runOverlapJob(cfg Config) ([]Row, error) {
	var rows []Row
	err := narma.Run(2, func(c *narma.Comm) error {
		r, err := Overlap().Run(c, cfg)
		if c.Rank() == 0 {
			rows = r
		} else if r != nil {
			return errorString("rank 1 returned rows")
		}
		return err
	})
	return rows, err
}

func overlapVariantNames() []string {
	var vs []string
	for _, v := range Overlap().Variants {
		vs = append(vs, v.Name)
	}
	return vs
}

// TestOverlapVariants: every variant runs at 8 B and 4 KiB, checks every
// message, and yields one row per variant and size with the time per
// iteration and a finite share. Both strategies.
func TestOverlapVariants(t *testing.T) {
	for _, st := range []narma.Strategy{narma.Immediate, narma.Deferred} {
		t.Run(st.String(), func(t *testing.T) {
			vs := overlapVariantNames()
			sizes := []int{8, 4096}
			rows, err := runOverlapJob(Config{Sizes: sizes, Iters: 5, Rounds: 3, Warmup: 2, Strategy: st})
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
					if r.Experiment != "overlap" || r.Variant != v || r.Bytes != size || r.Ranks != 2 || r.Iters != 5 || r.Rounds != 3 || r.Unsound {
						t.Errorf("row %+v, want overlap %s %d B, 2 ranks, 5 iters, 3 rounds", r, v, size)
					}
					if !(r.MinNs > 0 && r.MinNs <= r.MedianNs && r.MedianNs <= r.MaxNs) || math.IsNaN(r.OverlapPct) || math.IsInf(r.OverlapPct, 0) {
						t.Errorf("row %+v: times out of order or share not finite", r)
					}
				}
			}
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
	for _, v := range overlapVariantNames() {
		t.Run(v, func(t *testing.T) {
			var sent atomic.Int32
			cfg := Config{Sizes: []int{64}, Variants: []string{v}, Iters: 3, Rounds: 1, Warmup: -1,
				Corrupt: func(variant string, msg []int64) {
					if variant != v {
						t.Errorf("Corrupt called for %q in a run of %q", variant, v)
					}
					if sent.Add(1) == 4 {
						msg[0]++
					}
				}}
			_, err := runOverlapJob(cfg)
			if err == nil || !strings.Contains(err.Error(), "data not delivered") || !strings.Contains(err.Error(), v) {
				t.Fatalf("run with a damaged message: %v, want a %s error saying the data was not delivered", err, v)
			}
			t.Log(err)
		})
	}
}

// TestOverlapRanks: only two ranks are accepted.
func TestOverlapRanks(t *testing.T) {
	err := narma.Run(3, func(c *narma.Comm) error {
		_, err := Overlap().Run(c, Config{Sizes: []int{8}})
		if err == nil {
			return errorString("run over 3 ranks succeeded")
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}
