package bench

import (
	"fmt"
	"slices"
	"time"

	"github.com/narma-rma/narma"
)

// variant returns v; the variant tables embed Variant, so their entries
// have this method too and tableVariants can read them.
func (v Variant) variant() Variant { return v }

// variantEntry is an entry of an experiment's variant table.
type variantEntry interface{ variant() Variant }

// tableVariants returns the Variant of every entry of table, in order.
func tableVariants[V variantEntry](table []V) []Variant {
	vs := make([]Variant, len(table))
	for i, v := range table {
		vs[i] = v.variant()
	}
	return vs
}

// selectedEntries returns the entries of an experiment's variant table
// that cfg selects, in the table's order.
func selectedEntries[V variantEntry](e Experiment, cfg Config, table []V) []V {
	sel := e.selected(cfg)
	var out []V
	for _, v := range table {
		if slices.Contains(sel, v.variant()) {
			out = append(out, v)
		}
	}
	return out
}

// sizesOr returns the sizes cfg asks for, or def if it asks for none.
func (cfg Config) sizesOr(def []int) []int {
	if len(cfg.Sizes) == 0 {
		return def
	}
	return cfg.Sizes
}

// rounds returns the number of measured rounds cfg asks for, or
// DefaultRounds.
func (cfg Config) rounds() int {
	if cfg.Rounds == 0 {
		return DefaultRounds
	}
	return cfg.Rounds
}

// progressf reports a progress message through cfg.Progress, on rank 0
// only.
func progressf(cfg Config, me int, format string, args ...any) {
	if me == 0 && cfg.Progress != nil {
		cfg.Progress(fmt.Sprintf(format, args...))
	}
}

// sizeLabel names size, the i-th (from 0) of sizes, in experiment e's
// progress messages, e.g. "alltoall 8 B (size 1 of 6)".
func sizeLabel(e Experiment, i int, sizes []int) string {
	return fmt.Sprintf("%s %s (size %d of %d)", e.Name, e.SizeLabel(sizes[i]), i+1, len(sizes))
}

// roundClock estimates, from the rounds measured so far, how long the
// rest of them will take, for the progress messages.
type roundClock struct {
	start  time.Time
	rounds int
}

func newRoundClock(rounds int) roundClock { return roundClock{start: time.Now(), rounds: rounds} }

// left returns the progress message's estimate before round done+1: the
// mean time of the done rounds so far times the rounds left.
func (rc roundClock) left(done int) string {
	if done == 0 {
		return ""
	}
	d := time.Since(rc.start) / time.Duration(done) * time.Duration(rc.rounds-done)
	if d < time.Second {
		return ", under 1s left at this size"
	}
	return fmt.Sprintf(", about %v left at this size", d.Round(time.Second))
}

// plan is what interleavedRounds measures at one size.
type plan struct {
	// warm is the number of warm-up iterations of each variant (none if
	// not positive), iters the number of iterations per measured round
	// and rounds the number of rounds.
	warm, iters, rounds int
	// per divides measure's times: 2 turns a round trip into the half
	// round trip the rows carry.
	per int
	// budget, if positive, bounds each variant's measured rounds: a
	// variant whose warm-up says that rounds rounds of iters iterations
	// would take longer runs fewer iterations per round (at least 1).
	// It needs a warm-up.
	budget time.Duration
	// agree gives every rank rank 0's values, so that all ranks cut the
	// same variants to the same iterations (a Bcast from rank 0).
	agree func(v []int64) error
	// progress reports progress (on rank 0), label names the size in it.
	progress func(format string, args ...any)
	label    string
}

// newPlan returns the plan of the i-th of sizes of experiment e on
// communicator c, with iters iterations per round and warm warm-up
// iterations (both chosen by size unless cfg set them), cfg's rounds and
// budget, and times divided by per.
func newPlan(c *narma.Comm, cfg Config, e Experiment, i int, sizes []int, iters, warm, per int) plan {
	return plan{warm: warm, iters: iters, rounds: cfg.rounds(), per: per, budget: cfg.Budget,
		label:    sizeLabel(e, i, sizes),
		progress: func(format string, args ...any) { progressf(cfg, c.Rank(), format, args...) },
		agree:    func(v []int64) error { return narma.Bcast(c.Context(), c, v, 0) }}
}

// measured is what interleavedRounds returns: the times of each variant,
// one per round, and the iterations per round each ran.
type measured struct {
	times [][]float64
	iters []int
}

// interleavedRounds measures variants as p says: first p.warm iterations
// of each (if p.warm > 0), then p.rounds rounds of p.iters iterations of
// every variant in turn, so that the machine's drift hits every variant
// alike; a variant that would take longer than p.budget runs fewer
// iterations per round (see budgetIters). measure runs a round and
// returns its time per iteration in ns (meanTime makes one of a measure
// of the round's whole time). The times returned are divided by p.per.
func interleavedRounds[V any](variants []V, p plan, measure func(v V, iters int) (float64, error)) (measured, error) {
	m := measured{times: make([][]float64, len(variants)), iters: make([]int, len(variants))}
	warmNs := make([]int64, len(variants))
	if p.warm > 0 {
		p.progress("%s: warm-up", p.label)
		for i, v := range variants {
			t, err := measure(v, p.warm)
			if err != nil {
				return m, err
			}
			warmNs[i] = int64(t)
		}
	}
	for i := range m.iters {
		m.iters[i] = p.iters
	}
	if p.budget > 0 && p.warm > 0 {
		if err := p.agree(warmNs); err != nil {
			return m, err
		}
		for i, t := range warmNs {
			m.iters[i] = budgetIters(p.iters, p.rounds, time.Duration(t), p.budget)
		}
	}
	clock := newRoundClock(p.rounds)
	for round := 0; round < p.rounds; round++ {
		p.progress("%s: round %d/%d%s", p.label, round+1, p.rounds, clock.left(round))
		for i, v := range variants {
			t, err := measure(v, m.iters[i])
			if err != nil {
				return m, err
			}
			m.times[i] = append(m.times[i], t/float64(p.per))
		}
	}
	return m, nil
}

// budgetIters returns the iterations per round of a variant whose
// iterations take perIter, so that rounds rounds of them take at most
// budget: iters if they fit, else fewer, but at least 1.
func budgetIters(iters, rounds int, perIter, budget time.Duration) int {
	if perIter <= 0 || rounds <= 0 || time.Duration(iters*rounds)*perIter <= budget {
		return iters
	}
	return max(1, min(iters, int(budget/(time.Duration(rounds)*perIter))))
}

// meanTime turns measure, which returns the whole time of a round of
// iters iterations, into interleavedRounds' measure: the round's mean
// time per iteration.
func meanTime[V any](measure func(v V, iters int) (time.Duration, error)) func(v V, iters int) (float64, error) {
	return func(v V, iters int) (float64, error) {
		d, err := measure(v, iters)
		return float64(d.Nanoseconds()) / float64(iters), err
	}
}

// appendRows appends to rows a row per variant of what it measured (its
// times, one per round, and its iterations per round), moving bytes per
// time unit.
func appendRows[V variantEntry](rows []Row, experiment string, variants []V, m measured,
	size, ranks, rounds int, bytes float64) []Row {
	for i, e := range variants {
		v := e.variant()
		r := Row{Experiment: experiment, Variant: v.Name, Bytes: size, Ranks: ranks,
			Iters: m.iters[i], Rounds: rounds, Unsound: v.Unsound}
		r.setTimes(m.times[i])
		r.MBps = bytes / r.MedianNs * 1e3
		rows = append(rows, r)
	}
	return rows
}
