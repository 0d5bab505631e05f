package bench

import (
	"math"
	"strings"
	"sync/atomic"
	"testing"
)

// TestFitLine: the fit recovers the intercept and slope of points on a
// line exactly (with sizes whose sums are exact in floating point), to
// rounding otherwise, and refuses too few or degenerate points.
func TestFitLine(t *testing.T) {
	line := func(x []float64) []float64 {
		y := make([]float64, len(x))
		for i := range x {
			y[i] = 250 + 0.125*x[i]
		}
		return y
	}
	x := []float64{0, 8, 16, 64, 512, 4096, 32768, 262144}
	a, b, err := FitLine(x, line(x))
	if err != nil || a != 250 || b != 0.125 {
		t.Errorf("FitLine on y = 250 + 0.125x: a %v, b %v, err %v", a, b, err)
	}
	x = []float64{8, 64, 512, 4096, 32768, 1 << 20}
	a, b, err = FitLine(x, line(x))
	if err != nil || math.Abs(a-250) > 1e-9 || math.Abs(b-0.125) > 1e-15 {
		t.Errorf("FitLine on y = 250 + 0.125x at 6 sizes: a %v, b %v, err %v", a, b, err)
	}
	// Symmetric noise around the line leaves it unchanged.
	a, b, err = FitLine([]float64{1, 1, 3, 3}, []float64{9, 11, 19, 21})
	if err != nil || a != 5 || b != 5 {
		t.Errorf("FitLine on noisy points of y = 5 + 5x: a %v, b %v, err %v", a, b, err)
	}
	for _, c := range []struct{ x, y []float64 }{
		{[]float64{1}, []float64{1}},
		{[]float64{2, 2}, []float64{1, 3}},
		{[]float64{1, 2}, []float64{1}},
	} {
		if _, _, err := FitLine(c.x, c.y); err == nil {
			t.Errorf("FitLine(%v, %v): no error", c.x, c.y)
		}
	}
}

// TestLogGP: both strategies, tiny sizes: one row per parameter (o_s per
// size), finite values, positive overheads.
func TestLogGP(t *testing.T) {
	for _, st := range strategies {
		t.Run(st.String(), func(t *testing.T) {
			sizes := []int{64, 8}
			rows, err := runJob(LogGP(), 2, Config{Sizes: sizes, Iters: 8, Rounds: 3, Warmup: 2, Strategy: st})
			if err != nil {
				t.Fatal(err)
			}
			want := []struct {
				name  string
				bytes int
			}{{"o_s", 8}, {"o_s", 64}, {"o_r", 8}, {"g", 8}, {"L", 0}, {"G", 0}}
			if len(rows) != len(want) {
				t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
			}
			for i, w := range want {
				r := rows[i]
				if r.Experiment != "loggp" || r.Variant != w.name || r.Bytes != w.bytes || r.Ranks != 2 || r.Rounds != 3 {
					t.Errorf("row %d: %+v, want loggp %s at %d B, 2 ranks, 3 rounds", i, r, w.name, w.bytes)
				}
				for _, v := range []float64{r.MedianNs, r.MinNs, r.MaxNs} {
					if math.IsInf(v, 0) || math.IsNaN(v) {
						t.Errorf("row %+v: not finite", r)
					}
				}
				if (r.Variant == "o_s" || r.Variant == "o_r") && !(r.MinNs > 0 && r.MinNs <= r.MedianNs && r.MedianNs <= r.MaxNs) {
					t.Errorf("row %+v: overhead not positive or out of order", r)
				}
				if r.Variant == "L" && r.MedianNs < 0 {
					t.Errorf("row %+v: negative L not clamped", r)
				}
			}
			t.Logf("%+v", rows)
			t.Log(LogGPNotes(rows))
		})
	}
}

// TestLogGPSelect: Variants selects the rows; one size is refused.
func TestLogGPSelect(t *testing.T) {
	rows, err := runJob(LogGP(), 2, Config{Sizes: []int{8, 16}, Variants: []string{"G", "o_r"}, Iters: 4, Rounds: 1, Warmup: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Variant != "o_r" || rows[1].Variant != "G" {
		t.Errorf("rows %+v, want o_r and G", rows)
	}
	if _, err := runJob(LogGP(), 2, Config{Sizes: []int{8, 8}}); err == nil || !strings.Contains(err.Error(), "two distinct sizes") {
		t.Errorf("one size: %v, want an error asking for two", err)
	}
}

// TestLogGPNotes: a clamped L gets a note, a positive one none.
func TestLogGPNotes(t *testing.T) {
	if n := LogGPNotes([]Row{{Experiment: "loggp", Variant: "L", MedianNs: 0, MinNs: -40}}); len(n) != 1 || !strings.Contains(n[0], "-40") {
		t.Errorf("notes for a clamped L: %q", n)
	}
	if n := LogGPNotes([]Row{{Experiment: "loggp", Variant: "L", MedianNs: 300, MinNs: 250}}); n != nil {
		t.Errorf("notes for a positive L: %q", n)
	}
}

// TestLogGPDetectsCorruption: a damaged message in any of the measured
// protocols fails the run.
func TestLogGPDetectsCorruption(t *testing.T) {
	for _, v := range []string{"ping-pong", "o_s", "o_r", "g"} {
		t.Run(v, func(t *testing.T) {
			var hit atomic.Int32
			cfg := Config{Sizes: []int{8, 64}, Iters: 4, Rounds: 2, Warmup: -1,
				Corrupt: func(variant string, msg []int64) {
					if variant == v && hit.Add(1) == 2 {
						msg[len(msg)-1]++
					}
				}}
			_, err := runJob(LogGP(), 2, cfg)
			if err == nil || !strings.Contains(err.Error(), "data not delivered") {
				t.Fatalf("run with a damaged %s message: %v, want an error saying the data was not delivered", v, err)
			}
			if hit.Load() < 2 {
				t.Fatalf("Corrupt called %d times for %s", hit.Load(), v)
			}
		})
	}
}
