package bench

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/narma-rma/narma"
)

// runHaloJob runs the halo exchange over n goroutine ranks and returns
// rank 0's rows.
func runHaloJob(n int, cfg Config) ([]Row, error) {
	var rows []Row
	err := narma.Run(n, func(c *narma.Comm) error {
		r, err := Halo().Run(c, cfg)
		if c.Rank() == 0 {
			rows = r
		} else if r != nil {
			return errorString(fmt.Sprintf("rank %d returned rows", c.Rank()))
		}
		return err
	})
	return rows, err
}

func haloVariants() []string {
	var vs []string
	for _, v := range Halo().Variants {
		vs = append(vs, v.Name)
	}
	return vs
}

// TestHaloGrid: the process grid is as square as the ranks allow.
func TestHaloGrid(t *testing.T) {
	for _, c := range []struct{ np, px, py int }{{2, 1, 2}, {4, 2, 2}, {6, 2, 3}, {7, 1, 7}, {12, 3, 4}, {16, 4, 4}} {
		if px, py := hGrid(c.np); px != c.px || py != c.py {
			t.Errorf("hGrid(%d) = %d x %d, want %d x %d", c.np, px, py, c.px, c.py)
		}
	}
}

// TestHaloVariants: every variant runs with tiles of 1 x 1, 4 x 4 and
// 7 x 7 cells over 2, 4 and 6 ranks, checks every edge it receives and
// its tile, and yields one row per variant and size. Both
// synchronization strategies.
func TestHaloVariants(t *testing.T) {
	for _, st := range []narma.Strategy{narma.Immediate, narma.Deferred} {
		for _, n := range []int{2, 4, 6} {
			t.Run(fmt.Sprintf("%s/%d", st, n), func(t *testing.T) { testHalo(t, st, n) })
		}
	}
}

func testHalo(t *testing.T, st narma.Strategy, ranks int) {
	vs := haloVariants()
	sizes := []int{8, 4 * 8, 7 * 8}
	rows, err := runHaloJob(ranks, Config{Sizes: sizes, Iters: 5, Rounds: 2, Warmup: 1, Strategy: st})
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
			if r.Experiment != "halo" || r.Variant != v || r.Bytes != size || r.Ranks != ranks || r.Iters != 5 || r.Rounds != 2 || r.Unsound {
				t.Errorf("row %+v, want halo %s %d B, %d ranks, 5 iters, 2 rounds", r, v, size, ranks)
			}
			if !(r.MinNs > 0 && r.MinNs <= r.MedianNs && r.MedianNs <= r.MaxNs && r.MBps > 0) {
				t.Errorf("row %+v: times or bandwidth out of order", r)
			}
		}
	}
}

// TestHaloDetectsCorruption: an edge damaged on its way out fails the
// run, for every variant, over 2 and 6 ranks, early and late in the run.
func TestHaloDetectsCorruption(t *testing.T) {
	for _, v := range haloVariants() {
		for _, c := range []struct {
			ranks int
			nth   int32
		}{{2, 1}, {2, 7}, {6, 30}} {
			t.Run(fmt.Sprintf("%s/%d/%d", v, c.ranks, c.nth), func(t *testing.T) {
				var sent atomic.Int32
				cfg := Config{Sizes: []int{5 * 8}, Variants: []string{v}, Iters: 4, Rounds: 1, Warmup: -1,
					Corrupt: func(variant string, msg []int64) {
						if variant != v {
							t.Errorf("Corrupt called for %q in a run of %q", variant, v)
						}
						if len(msg) != 5 {
							t.Errorf("Corrupt called with %d words, want 5", len(msg))
						}
						if sent.Add(1) == c.nth {
							msg[len(msg)/2] ^= 1
						}
					}}
				_, err := runHaloJob(c.ranks, cfg)
				if err == nil || !strings.Contains(err.Error(), "data not delivered") || !strings.Contains(err.Error(), v) {
					t.Fatalf("run with a damaged edge: %v, want a %s error saying the data was not delivered", err, v)
				}
				t.Log(err)
			})
		}
	}
}

// TestHaloSizes: one rank and edges too large are refused.
func TestHaloSizes(t *testing.T) {
	if _, err := runHaloJob(1, Config{Sizes: []int{64}}); err == nil {
		t.Error("run over one rank succeeded")
	}
	if _, err := runHaloJob(2, Config{Sizes: []int{2 * MaxHaloSize}}); err == nil {
		t.Error("run with too large an edge succeeded")
	}
}

// TestHaloDefaults: the zero Config runs the default sizes (a quick
// check with few rounds).
func TestHaloDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	rows, err := runHaloJob(4, Config{Sizes: DefaultHaloSizes[:2], Rounds: 1, Iters: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2*len(Halo().Variants) {
		t.Errorf("%d rows, want %d", len(rows), 2*len(Halo().Variants))
	}
}

// TestHaloTable: the table names what the times measure.
func TestHaloTable(t *testing.T) {
	rows := []Row{{Experiment: "halo", Variant: "put-notify", Bytes: 64, Ranks: 4, Iters: 2, Rounds: 3, MedianNs: 100, MinNs: 90, MaxNs: 110, MBps: 80}}
	var b strings.Builder
	if err := WriteTable(&b, Halo(), rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "time per iteration in ns") {
		t.Errorf("table title lacks the measure:\n%s", b.String())
	}
}
