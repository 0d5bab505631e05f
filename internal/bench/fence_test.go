package bench

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/narma-rma/narma"
)

// runFence runs the fence experiment over n goroutine ranks and returns
// rank 0's rows.
func runFence(n int, cfg Config) ([]Row, error) {
	var rows []Row
	err := narma.Run(n, func(c *narma.Comm) error {
		r, err := FenceCost().Run(c, cfg)
		if c.Rank() == 0 {
			rows = r
		} else if r != nil {
			return errorString(fmt.Sprintf("rank %d returned rows", c.Rank()))
		}
		return err
	})
	return rows, err
}

func fenceVariantNames() []string {
	var vs []string
	for _, v := range FenceCost().Variants {
		vs = append(vs, v.Name)
	}
	return vs
}

// TestFenceVariants: every variant runs with 8 B and 1 KiB puts over 2
// and 4 ranks, checks its messages, and yields one row per variant and
// size. Both strategies for the variants that use Config.Strategy.
func TestFenceVariants(t *testing.T) {
	for _, st := range []narma.Strategy{narma.Immediate, narma.Deferred} {
		for _, n := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/%d", st, n), func(t *testing.T) { testFence(t, st, n) })
		}
	}
}

func testFence(t *testing.T, st narma.Strategy, ranks int) {
	vs := fenceVariantNames()
	sizes := []int{8, 1024}
	rows, err := runFence(ranks, Config{Sizes: sizes, Iters: 5, Rounds: 2, Warmup: 1, Strategy: st})
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
			if r.Experiment != "fence" || r.Variant != v || r.Bytes != size || r.Ranks != ranks || r.Iters != 5 || r.Rounds != 2 || r.Unsound {
				t.Errorf("row %+v, want fence %s %d B, %d ranks, 5 iters, 2 rounds", r, v, size, ranks)
			}
			if !(r.MinNs > 0 && r.MinNs <= r.MedianNs && r.MedianNs <= r.MaxNs && r.MBps > 0) {
				t.Errorf("row %+v: times or bandwidth out of order", r)
			}
		}
	}
}

// TestFenceDefaults: the zero sizes mean one size of 8 B, and a single
// epoch per run is checked too.
func TestFenceDefaults(t *testing.T) {
	rows, err := runFence(3, Config{Iters: 1, Rounds: 1, Warmup: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(fenceVariantNames()) || rows[0].Bytes != 8 {
		t.Fatalf("rows %+v, want one per variant at 8 B", rows)
	}
}

// TestFenceDetectsCorruption: a damaged message fails the run, for every
// variant, over 4 ranks. The messages after the fifth are damaged: the
// variants that check after the run see only the last two.
func TestFenceDetectsCorruption(t *testing.T) {
	for _, v := range fenceVariantNames() {
		t.Run(v, func(t *testing.T) {
			var sent atomic.Int32
			cfg := Config{Sizes: []int{64}, Variants: []string{v}, Iters: 4, Rounds: 2, Warmup: -1,
				Corrupt: func(variant string, msg []int64) {
					if variant != v {
						t.Errorf("Corrupt called for %q in a run of %q", variant, v)
					}
					if sent.Add(1) > 5 {
						msg[len(msg)-1]++
					}
				}}
			_, err := runFence(4, cfg)
			if err == nil || !strings.Contains(err.Error(), "data not delivered") || !strings.Contains(err.Error(), v) {
				t.Fatalf("run with damaged messages: %v, want a %s error saying the data was not delivered", err, v)
			}
			t.Log(err)
		})
	}
}

// TestFenceRanks: one rank is refused.
func TestFenceRanks(t *testing.T) {
	if _, err := runFence(1, Config{}); err == nil {
		t.Error("run over one rank succeeded")
	}
}
