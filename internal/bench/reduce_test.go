package bench

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/narma-rma/narma"
)

// runReduce runs the tree reduction over n goroutine ranks and returns
// rank 0's rows.
func runReduce(n int, cfg Config) ([]Row, error) {
	var rows []Row
	err := narma.Run(n, func(c *narma.Comm) error {
		r, err := TreeReduce().Run(c, cfg)
		if c.Rank() == 0 {
			rows = r
		} else if r != nil {
			return errorString(fmt.Sprintf("rank %d returned rows", c.Rank()))
		}
		return err
	})
	return rows, err
}

func reduceVariants() []string {
	var vs []string
	for _, v := range TreeReduce().Variants {
		vs = append(vs, v.Name)
	}
	return vs
}

// TestTreeReduceVariants: every variant runs at 8 B and 1 KiB over 2, 5
// and 20 ranks (20: a tree of two levels), checks every result, and
// yields one row per variant and size. Both synchronization strategies.
func TestTreeReduceVariants(t *testing.T) {
	for _, st := range []narma.Strategy{narma.Immediate, narma.Deferred} {
		for _, n := range []int{2, 5, 20} {
			t.Run(fmt.Sprintf("%s/%d", st, n), func(t *testing.T) { testTreeReduce(t, st, n) })
		}
	}
}

func testTreeReduce(t *testing.T, st narma.Strategy, ranks int) {
	vs := reduceVariants()
	sizes := []int{8, 1024}
	rows, err := runReduce(ranks, Config{Sizes: sizes, Iters: 4, Rounds: 2, Warmup: 1, Strategy: st})
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
			if r.Experiment != "reduce" || r.Variant != v || r.Bytes != size || r.Ranks != ranks || r.Iters != 4 || r.Rounds != 2 || r.Unsound {
				t.Errorf("row %+v, want reduce %s %d B, %d ranks, 4 iters, 2 rounds", r, v, size, ranks)
			}
			if !(r.MinNs > 0 && r.MinNs <= r.MedianNs && r.MedianNs <= r.MaxNs && r.MBps > 0) {
				t.Errorf("row %+v: times or bandwidth out of order", r)
			}
		}
	}
}

// TestTreeReduceDetectsCorruption: a partial sum damaged on its way out
// fails the run, for every variant, in a tree of two levels.
func TestTreeReduceDetectsCorruption(t *testing.T) {
	for _, v := range reduceVariants() {
		t.Run(v, func(t *testing.T) {
			var sent atomic.Int32
			cfg := Config{Sizes: []int{64}, Variants: []string{v}, Iters: 3, Rounds: 1, Warmup: -1,
				Corrupt: func(variant string, msg []int64) {
					if variant != v {
						t.Errorf("Corrupt called for %q in a run of %q", variant, v)
					}
					if sent.Add(1) == 30 {
						msg[len(msg)-1]++
					}
				}}
			_, err := runReduce(20, cfg)
			if err == nil || !strings.Contains(err.Error(), "data not delivered") || !strings.Contains(err.Error(), v) {
				t.Fatalf("run with a damaged partial sum: %v, want a %s error saying the data was not delivered", err, v)
			}
			t.Log(err)
		})
	}
}

// TestTreeReduceRanks: one rank is refused.
func TestTreeReduceRanks(t *testing.T) {
	if _, err := runReduce(1, Config{Sizes: []int{8}}); err == nil {
		t.Error("run over one rank succeeded")
	}
}

// TestTreeReduceTable: the table names what the times measure.
func TestTreeReduceTable(t *testing.T) {
	rows := []Row{{Experiment: "reduce", Variant: "put-notify", Bytes: 8, Ranks: 5, Iters: 4, Rounds: 3, MedianNs: 100, MinNs: 90, MaxNs: 110, MBps: 80}}
	var b strings.Builder
	if err := WriteTable(&b, TreeReduce(), rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "time per reduction in ns") {
		t.Errorf("table title lacks the measure:\n%s", b.String())
	}
}
