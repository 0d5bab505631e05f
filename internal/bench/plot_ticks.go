package bench

import (
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
)

// sizeTicker marks the size axis: a labelled tick at every measured size
// (a person reads the plot at the sizes of the table), a minor one at
// every other power of two.
// Without labels (bare), it marks the axis of a panel above another
// that shares it.
type sizeTicker struct {
	sizes []int
	label func(size int) string
	bare  bool
}

// Ticks implements plot.Ticker.
func (t sizeTicker) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for _, s := range t.sizes {
		if v := float64(s); v >= lo && v <= hi {
			label := ""
			if !t.bare {
				label = t.label(s)
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label})
		}
	}
	for k := 0; k < 62; k++ {
		v := math.Exp2(float64(k))
		if v >= lo && v <= hi && !slices.Contains(t.sizes, int(v)) {
			ticks = append(ticks, plot.Tick{Value: v})
		}
	}
	return ticks
}

// timeMantissas are the steps of the labelled ticks of a log time axis,
// from the coarsest; timeTicks takes the first that labels three ticks.
var timeMantissas = [][]float64{
	{1},
	{1, 2, 5},
	{1, 1.5, 2, 3, 5, 7},
	{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9},
}

// timeTicks marks a log axis of nanoseconds between lo and hi: labelled
// ticks at round values written with their unit ("500 ns", "2 µs"), and
// minor ticks at every digit of a decade.
func timeTicks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi < lo {
		return nil
	}
	var major []float64
	for _, ms := range timeMantissas {
		major = decadeMultiples(lo, hi, ms)
		if len(major) >= 3 {
			break
		}
	}
	if len(major) < 2 {
		major = append(major, lo, hi)
	}
	var ticks []plot.Tick
	for _, v := range major {
		ticks = append(ticks, plot.Tick{Value: v, Label: formatNs(v)})
	}
	for _, v := range decadeMultiples(lo, hi, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		if !slices.Contains(major, v) {
			ticks = append(ticks, plot.Tick{Value: v})
		}
	}
	return ticks
}

// decadeMultiples returns the values m * 10^k within [lo, hi], for m in
// ms.
func decadeMultiples(lo, hi float64, ms []float64) []float64 {
	var vs []float64
	for k := math.Floor(math.Log10(lo)); k <= math.Ceil(math.Log10(hi)); k++ {
		for _, m := range ms {
			// Rounded to 3 digits, so that 0.3 and friends compare equal
			// from one list to the other.
			v, _ := strconv.ParseFloat(strconv.FormatFloat(m*math.Pow(10, k), 'g', 3, 64), 64)
			if v >= lo && v <= hi {
				vs = append(vs, v)
			}
		}
	}
	return vs
}

// formatNs writes a time in nanoseconds in the largest unit that keeps
// it at least 1: "500 ns", "1.5 µs", "20 ms", "3 s".
func formatNs(ns float64) string {
	unit, scale := "ns", 1.0
	switch {
	case ns >= 1e9:
		unit, scale = "s", 1e9
	case ns >= 1e6:
		unit, scale = "ms", 1e6
	case ns >= 1e3:
		unit, scale = "µs", 1e3
	}
	return strconv.FormatFloat(ns/scale, 'g', 3, 64) + " " + unit
}

// ratioSteps are the labelled values of a ratio axis, from the coarsest;
// ratioTicks takes the first list that labels three ticks.
var ratioSteps = [][]float64{
	{1.0 / 16, 1.0 / 8, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64},
	{0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4},
	{0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.1, 1.2, 1.5, 2},
}

// ratioTicks marks a log axis of ratios between lo and hi.
func ratioTicks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for _, steps := range ratioSteps {
		ticks = ticks[:0]
		for _, v := range steps {
			if v >= lo && v <= hi {
				ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 3, 64)})
			}
		}
		if len(ticks) >= 3 {
			break
		}
	}
	return ticks
}

// unitTicker marks a linear axis at round values (see linearTicks),
// with the unit on every label ("30%", "2 ns").
type unitTicker struct{ unit string }

// Ticks implements plot.Ticker.
func (t unitTicker) Ticks(lo, hi float64) []plot.Tick {
	ticks := linearTicks(lo, hi)
	sep := " "
	if t.unit == "%" {
		sep = ""
	}
	for i := range ticks {
		if ticks[i].Label != "" && t.unit != "" {
			ticks[i].Label += sep + t.unit
		}
	}
	return ticks
}

// linearTicks marks a linear axis between lo and hi: labelled ticks at
// the multiples of the roundest step (1, 2, 2.5 or 5 times a power of
// ten) that gives four to eight of them, a minor tick between two.
func linearTicks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	step := 0.0
	for k := math.Floor(math.Log10(hi-lo)) - 2; step == 0; k++ {
		for _, m := range []float64{1, 2, 2.5, 5} {
			if s := m * math.Pow(10, k); (hi-lo)/s <= 7 {
				step = s
				break
			}
		}
	}
	var ticks []plot.Tick
	half := step / 2
	for i := math.Ceil(lo / half); i*half <= hi; i++ {
		v := i*half + 0 // +0, not -0, to label "0"
		t := plot.Tick{Value: v}
		if math.Mod(i, 2) == 0 {
			t.Label = strconv.FormatFloat(v, 'g', 6, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}
