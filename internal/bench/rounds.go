package bench

import (
	"fmt"
	"slices"
	"time"
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

// interleavedRounds measures variants: first warm iterations of each (if
// warm > 0), then rounds rounds of iters iterations of every variant in
// turn, so that the machine's drift hits every variant alike. measure
// runs a round and returns its time per iteration in ns (meanTime makes
// one of a measure of the round's whole time). interleavedRounds returns
// the times of each variant, one per round, divided by per. label names
// the size in the progress messages.
func interleavedRounds[V any](variants []V, warm, iters, rounds, per int,
	progress func(format string, args ...any), label string,
	measure func(v V, iters int) (float64, error)) ([][]float64, error) {
	if warm > 0 {
		progress("%s: warm-up", label)
		for _, v := range variants {
			if _, err := measure(v, warm); err != nil {
				return nil, err
			}
		}
	}
	times := make([][]float64, len(variants))
	for round := 0; round < rounds; round++ {
		progress("%s: round %d/%d", label, round+1, rounds)
		for i, v := range variants {
			t, err := measure(v, iters)
			if err != nil {
				return nil, err
			}
			times[i] = append(times[i], t/float64(per))
		}
	}
	return times, nil
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

// appendRows appends to rows a row per variant of its times, one per
// round, moving bytes per time unit.
func appendRows[V variantEntry](rows []Row, experiment string, variants []V, times [][]float64,
	size, ranks, iters, rounds int, bytes float64) []Row {
	for i, e := range variants {
		v := e.variant()
		r := Row{Experiment: experiment, Variant: v.Name, Bytes: size, Ranks: ranks,
			Iters: iters, Rounds: rounds, Unsound: v.Unsound}
		r.setTimes(times[i])
		r.MBps = bytes / r.MedianNs * 1e3
		rows = append(rows, r)
	}
	return rows
}
