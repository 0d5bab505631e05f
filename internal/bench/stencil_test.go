package bench

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/narma-rma/narma"
)

// runStencilJob runs the stencil over n goroutine ranks and returns rank
// 0's rows.
func runStencilJob(n int, cfg Config) ([]Row, error) {
	var rows []Row
	err := narma.Run(n, func(c *narma.Comm) error {
		r, err := Stencil().Run(c, cfg)
		if c.Rank() == 0 {
			rows = r
		} else if r != nil {
			return errorString(fmt.Sprintf("rank %d returned rows", c.Rank()))
		}
		return err
	})
	return rows, err
}

func stencilVariants() []string {
	var vs []string
	for _, v := range Stencil().Variants {
		vs = append(vs, v.Name)
	}
	return vs
}

// TestStencilVariants: every variant runs on 32 x 32 and 48 x 48 grids
// over 2 and 3 ranks, checks every value it receives and its block, and
// yields one row per variant and size. Both synchronization strategies.
func TestStencilVariants(t *testing.T) {
	for _, st := range []narma.Strategy{narma.Immediate, narma.Deferred} {
		for _, n := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/%d", st, n), func(t *testing.T) { testStencil(t, st, n) })
		}
	}
}

func testStencil(t *testing.T, st narma.Strategy, ranks int) {
	vs := stencilVariants()
	sizes := []int{32 * 8, 48 * 8}
	rows, err := runStencilJob(ranks, Config{Sizes: sizes, Iters: 2, Rounds: 2, Warmup: 1, Strategy: st})
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
			if r.Experiment != "stencil" || r.Variant != v || r.Bytes != size || r.Ranks != ranks || r.Iters != 2 || r.Rounds != 2 || r.Unsound {
				t.Errorf("row %+v, want stencil %s %d B, %d ranks, 2 iters, 2 rounds", r, v, size, ranks)
			}
			if !(r.MinNs > 0 && r.MinNs <= r.MedianNs && r.MedianNs <= r.MaxNs && r.MBps > 0) {
				t.Errorf("row %+v: times or bandwidth out of order", r)
			}
		}
	}
}

// TestStencilDetectsCorruption: a boundary value or a corner damaged on
// its way out fails the run, for every variant, over 3 ranks.
func TestStencilDetectsCorruption(t *testing.T) {
	for _, v := range stencilVariants() {
		// The 20th value is a row's; with 2 iterations of a 16 x 16
		// grid over 2 ranks, the 16th is the corner.
		for _, c := range []struct {
			ranks int
			nth   int32
		}{{3, 20}, {2, 16}} {
			t.Run(fmt.Sprintf("%s/%d", v, c.nth), func(t *testing.T) {
				var sent atomic.Int32
				cfg := Config{Sizes: []int{16 * 8}, Variants: []string{v}, Iters: 2, Rounds: 1, Warmup: -1,
					Corrupt: func(variant string, msg []int64) {
						if variant != v {
							t.Errorf("Corrupt called for %q in a run of %q", variant, v)
						}
						if len(msg) != 1 {
							t.Errorf("Corrupt called with %d words, want 1", len(msg))
						}
						if sent.Add(1) == c.nth {
							msg[0]++
						}
					}}
				_, err := runStencilJob(c.ranks, cfg)
				if err == nil || !strings.Contains(err.Error(), "data not delivered") || !strings.Contains(err.Error(), v) {
					t.Fatalf("run with a damaged value: %v, want a %s error saying the data was not delivered", err, v)
				}
				t.Log(err)
			})
		}
	}
}

// TestStencilSizes: one rank, grids too narrow for the ranks and grids
// too large are refused.
func TestStencilSizes(t *testing.T) {
	if _, err := runStencilJob(1, Config{Sizes: []int{256}}); err == nil {
		t.Error("run over one rank succeeded")
	}
	if _, err := runStencilJob(3, Config{Sizes: []int{40}}); err == nil {
		t.Error("run with 5 columns over 3 ranks succeeded")
	}
	if _, err := runStencilJob(2, Config{Sizes: []int{2 * MaxStencilSize}}); err == nil {
		t.Error("run with too large a grid succeeded")
	}
}

// TestStencilTable: the table names what the times measure.
func TestStencilTable(t *testing.T) {
	rows := []Row{{Experiment: "stencil", Variant: "put-notify", Bytes: 256, Ranks: 2, Iters: 2, Rounds: 3, MedianNs: 100, MinNs: 90, MaxNs: 110, MBps: 80}}
	var b strings.Builder
	if err := WriteTable(&b, Stencil(), rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "time per iteration in ns") {
		t.Errorf("table title lacks the measure:\n%s", b.String())
	}
}
