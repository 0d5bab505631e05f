package bench

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narma-rma/narma"
)

// runAllToAllJob runs the all-to-all over np goroutine ranks, with a
// timeout, and returns rank 0's rows.
func runAllToAllJob(np int, cfg Config) ([]Row, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var rows []Row
	err := narma.RunContext(ctx, np, func(c *narma.Comm) error {
		r, err := AllToAll().Run(c, cfg)
		if c.Rank() == 0 {
			rows = r
		} else if r != nil {
			return fmt.Errorf("rank %d returned rows", c.Rank())
		}
		return err
	})
	return rows, err
}

func allToAllVariants() []string {
	var vs []string
	for _, v := range AllToAll().Variants {
		vs = append(vs, v.Name)
	}
	return vs
}

// TestAllToAllVariants: every variant runs at 8 B and 1 KiB over 3 and 4
// ranks, under both synchronization strategies, checks every block it
// receives, and yields one row per variant and size.
func TestAllToAllVariants(t *testing.T) {
	vs := allToAllVariants()
	sizes := []int{8, 1024}
	for _, st := range []narma.Strategy{narma.Immediate, narma.Deferred} {
		for _, np := range []int{3, 4} {
			t.Run(fmt.Sprintf("%s/%dranks", st, np), func(t *testing.T) {
				rows, err := runAllToAllJob(np, Config{Sizes: sizes, Iters: 6, Rounds: 3, Warmup: 2, Strategy: st})
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
						if r.Experiment != "alltoall" || r.Variant != v || r.Bytes != size || r.Ranks != np || r.Iters != 6 || r.Rounds != 3 || r.Unsound {
							t.Errorf("row %+v, want alltoall %s %d B, %d ranks, 6 iters, 3 rounds", r, v, size, np)
						}
						if !(r.MinNs > 0 && r.MinNs <= r.MedianNs && r.MedianNs <= r.MaxNs && r.MBps > 0) {
							t.Errorf("row %+v: times or bandwidth out of order", r)
						}
						if want := float64(size*(np-1)) / r.MedianNs * 1e3; r.MBps != want {
							t.Errorf("row %+v: bandwidth %g, want %g (bytes received per round)", r, r.MBps, want)
						}
					}
				}
				var b strings.Builder
				if err := WriteTable(&b, AllToAll(), rows); err != nil || !strings.Contains(b.String(), "time per round") {
					t.Errorf("table (%v) does not say it shows times per round:\n%s", err, b.String())
				}
			})
		}
	}
}

// TestAllToAllDetectsCorruption: a block whose last word is damaged on its
// way out fails the run, for every variant.
func TestAllToAllDetectsCorruption(t *testing.T) {
	for _, v := range allToAllVariants() {
		t.Run(v, func(t *testing.T) {
			var sent atomic.Int32
			cfg := Config{Sizes: []int{64}, Variants: []string{v}, Iters: 4, Rounds: 1, Warmup: -1,
				Corrupt: func(variant string, msg []int64) {
					// Every rank calls it: damage the fifth block, whoever sends it.
					if variant != v {
						t.Errorf("Corrupt called for %q in a run of %q", variant, v)
					}
					if sent.Add(1) == 5 {
						msg[len(msg)-1]++
					}
				}}
			_, err := runAllToAllJob(3, cfg)
			if err == nil || !strings.Contains(err.Error(), "data not delivered") || !strings.Contains(err.Error(), v) {
				t.Fatalf("run with a damaged block: %v, want a %s error saying the data was not delivered", err, v)
			}
		})
	}
}

// TestAllToAllOneRank: a job of one rank is refused.
func TestAllToAllOneRank(t *testing.T) {
	if _, err := runAllToAllJob(1, Config{Sizes: []int{8}}); err == nil {
		t.Error("all-to-all over one rank succeeded")
	}
	if _, err := runAllToAllJob(2, Config{Sizes: []int{12}}); err == nil {
		t.Error("run with a 12-byte size succeeded")
	}
}
