package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBudgetIters: a variant's iterations per round are cut so that its
// rounds fit the budget, to no fewer than 1, and left alone when they fit.
func TestBudgetIters(t *testing.T) {
	for _, c := range []struct {
		iters, rounds int
		perIter       time.Duration
		budget        time.Duration
		want          int
	}{
		{1000, 15, time.Microsecond, 10 * time.Second, 1000},    // 15 ms: fits
		{1000, 15, 5 * time.Millisecond, 10 * time.Second, 133}, // 75 s: 10 s / 75 ms
		{1000, 15, 10 * time.Second, 10 * time.Second, 1},       // even one is over: 1
		{100, 10, 10 * time.Millisecond, 10 * time.Second, 100}, // exactly the budget
		{100, 10, 0, 10 * time.Second, 100},                     // no time measured
		{100, 0, time.Second, time.Second, 100},                 // no rounds
	} {
		if got := budgetIters(c.iters, c.rounds, c.perIter, c.budget); got != c.want {
			t.Errorf("budgetIters(%d, %d, %v, %v) = %d, want %d", c.iters, c.rounds, c.perIter, c.budget, got, c.want)
		}
	}
}

// TestInterleavedRoundsBudget: with a budget, a variant whose warm-up is
// slow runs fewer iterations per round, decided from the values agree
// returns (rank 0's), and the others keep theirs; without a budget or a
// warm-up, every variant runs them all.
func TestInterleavedRoundsBudget(t *testing.T) {
	// Fake times per iteration, in ns: "slow" takes 10 ms, "fast" 1 us.
	perIter := map[string]float64{"slow": 1e7, "fast": 1e3}
	run := func(p plan) (measured, map[string][]int, []string) {
		ran := map[string][]int{}
		var msgs []string
		p.progress = func(format string, args ...any) { msgs = append(msgs, fmt.Sprintf(format, args...)) }
		m, err := interleavedRounds([]string{"fast", "slow"}, p, func(v string, iters int) (float64, error) {
			ran[v] = append(ran[v], iters)
			return perIter[v], nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return m, ran, msgs
	}
	var agreed [][]int64
	p := plan{warm: 10, iters: 100, rounds: 4, per: 2, budget: time.Second, label: "toy 8 B (size 1 of 1)",
		agree: func(v []int64) error {
			agreed = append(agreed, slices.Clone(v))
			return nil
		}}
	m, ran, msgs := run(p)
	// slow: 4 rounds of 100 x 10 ms = 4 s; 1 s allows 25 per round.
	if !slices.Equal(m.iters, []int{100, 25}) {
		t.Errorf("iterations %v, want [100 25]", m.iters)
	}
	if want := []int{10, 25, 25, 25, 25}; !slices.Equal(ran["slow"], want) {
		t.Errorf("slow ran %v, want %v (warm-up, then the cut rounds)", ran["slow"], want)
	}
	if want := []int{10, 100, 100, 100, 100}; !slices.Equal(ran["fast"], want) {
		t.Errorf("fast ran %v, want %v", ran["fast"], want)
	}
	if len(agreed) != 1 || !slices.Equal(agreed[0], []int64{1e3, 1e7}) {
		t.Errorf("agree saw %v, want the warm-up times once", agreed)
	}
	if len(m.times[1]) != 4 || m.times[1][0] != 5e6 {
		t.Errorf("slow's times %v, want 4 of 5e6 (halved by per)", m.times[1])
	}
	if len(msgs) != 5 || msgs[0] != "toy 8 B (size 1 of 1): warm-up" || msgs[1] != "toy 8 B (size 1 of 1): round 1/4" ||
		!strings.HasPrefix(msgs[2], "toy 8 B (size 1 of 1): round 2/4, ") || !strings.HasSuffix(msgs[2], " left at this size") {
		t.Errorf("progress messages %q", msgs)
	}

	// The ranks follow rank 0's times, whatever their own.
	p.agree = func(v []int64) error {
		v[0], v[1] = 1e7, 1e3
		return nil
	}
	if m, _, _ := run(p); !slices.Equal(m.iters, []int{25, 100}) {
		t.Errorf("after agreeing on rank 0's times: iterations %v, want [25 100]", m.iters)
	}

	for _, q := range []plan{{warm: 10, iters: 100, rounds: 4, per: 1}, {warm: -1, iters: 100, rounds: 4, per: 1, budget: time.Second}} {
		q.agree = func([]int64) error { t.Error("agree called without a budget or a warm-up"); return nil }
		if m, _, _ := run(q); !slices.Equal(m.iters, []int{100, 100}) {
			t.Errorf("budget %v, warm-up %d: iterations %v, want [100 100]", q.budget, q.warm, m.iters)
		}
	}
}

// TestBudgetJob: in a job, a budget too small for any iteration cuts
// every variant to 1 iteration per round on every rank alike (a rank
// that ran more would hang or fail the exchange).
func TestBudgetJob(t *testing.T) {
	rows, err := runJobTimeout(AllToAll(), 3, Config{Sizes: []int{8, 64}, Iters: 20, Rounds: 2, Warmup: 2, Budget: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, rows, rowsWant{experiment: "alltoall", variants: testVariantNames(AllToAll()), sizes: []int{8, 64},
		ranks: 3, iters: 1, rounds: 2}, nil)
}

// TestRoundClock: no estimate before the first round; then the mean
// round so far times the rounds left.
func TestRoundClock(t *testing.T) {
	rc := roundClock{start: time.Now().Add(-4 * time.Second), rounds: 10}
	if got := rc.left(0); got != "" {
		t.Errorf("left(0) = %q, want none", got)
	}
	if got := rc.left(2); got != ", about 16s left at this size" {
		t.Errorf("left(2) after 4 s = %q, want 16s", got)
	}
	if got := rc.left(10); got != ", under 1s left at this size" {
		t.Errorf("left(10) = %q", got)
	}
	if got := sizeLabel(Cholesky(), 1, []int{64, 128, 256}); got != "cholesky 16x16 (size 2 of 3)" {
		t.Errorf("sizeLabel = %q", got)
	}
}
