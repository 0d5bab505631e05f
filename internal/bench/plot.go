package bench

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// PlotFormats are the file extensions WritePlot accepts.
var PlotFormats = []string{".svg", ".png"}

// WritePlot writes a plot of the rows of experiment e to the file path:
// x is the size in bytes (log2 axis), y the median time in nanoseconds
// (log axis), one line per variant of e with a legend (unsound variants
// labelled with a star), with a bar from the 10th to the 90th percentile
// of the rounds at each point that has them, and the title is e's name
// and Measure. The
// format follows path's extension, .svg or .png. Rows of other
// experiments, and rows whose median is not positive, are left out; with
// no row left, WritePlot fails and writes nothing.
func WritePlot(path string, e Experiment, rows []Row) error {
	ext := strings.ToLower(filepath.Ext(path))
	if !slices.Contains(PlotFormats, ext) {
		return fmt.Errorf("plot %s: unknown format %q (want %s)", path, ext, strings.Join(PlotFormats, " or "))
	}
	p := plot.New()
	measure := e.Measure
	if measure == "" {
		measure = "time"
	}
	p.Title.Text = e.Name + ": " + measure
	p.X.Label.Text = "size"
	p.Y.Label.Text = "median " + measure + " (ns)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.TickerFunc(sizeTicks)
	value := func(r Row) float64 { return r.MedianNs }
	if e.Value != nil {
		value = e.Value
		p.Y.Label.Text = measure + " (" + e.Unit + ")"
	} else {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())

	lines := 0
	for i, v := range e.Variants {
		var xys, spread plotter.XYs
		var bars plotter.YErrors
		for _, r := range rows {
			if r.Experiment == e.Name && r.Variant == v.Name && r.Bytes > 0 && (e.Value != nil || r.MedianNs > 0) {
				xy := plotter.XY{X: float64(r.Bytes), Y: value(r)}
				xys = append(xys, xy)
				if e.Value == nil && r.P10Ns > 0 && r.P10Ns <= r.MedianNs && r.MedianNs <= r.P90Ns {
					spread = append(spread, xy)
					bars = append(bars, struct{ Low, High float64 }{r.MedianNs - r.P10Ns, r.P90Ns - r.MedianNs})
				}
			}
		}
		if len(xys) == 0 {
			continue
		}
		slices.SortFunc(xys, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
		if len(spread) > 0 {
			eb, err := plotter.NewYErrorBars(struct {
				plotter.XYs
				plotter.YErrors
			}{spread, bars})
			if err != nil {
				return fmt.Errorf("plot %s: %s: %w", path, v.Name, err)
			}
			eb.Color = plotutil.Color(i)
			eb.CapWidth = vg.Points(3)
			p.Add(eb)
			p.Y.Label.Text = "median " + measure + " (ns), bars: 10th to 90th percentile"
		}
		l, s, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("plot %s: %s: %w", path, v.Name, err)
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i)
		s.Color = plotutil.Color(i)
		s.Shape = plotutil.Shape(i)
		p.Add(l, s)
		p.Legend.Add(v.Label(), l, s)
		lines++
	}
	if lines == 0 {
		return fmt.Errorf("plot %s: %s has no measurements to plot", path, e.Name)
	}
	return p.Save(16*vg.Centimeter, 11*vg.Centimeter, path)
}

// sizeTicks marks the powers of two between lo and hi: labelled every
// power of eight (more often on a narrow range), minor ticks between.
func sizeTicks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi < lo {
		return nil
	}
	first := int(math.Floor(math.Log2(lo)))
	last := int(math.Ceil(math.Log2(hi)))
	step := 3
	if last-first <= 4 {
		step = 1
	}
	var ticks []plot.Tick
	for k := max(first, 0); k <= last && k < 62; k++ {
		v := math.Exp2(float64(k))
		if v < lo || v > hi {
			continue
		}
		t := plot.Tick{Value: v}
		if k%step == 0 || step == 1 {
			t.Label = FormatSize(int(v))
		}
		ticks = append(ticks, t)
	}
	return ticks
}
