package bench

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// PlotFormats are the file extensions WritePlot accepts.
var PlotFormats = []string{".svg", ".png"}

// The figure is plotWidth x plotHeight, drawn at plotDPI in PNG (1600 x
// 1000 pixels): its text stays readable on a slide.
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 5 * vg.Inch
	plotDPI    = 200
)

// WritePlot writes a plot of the rows of experiment e to the file path,
// in the format of path's extension, .svg or .png (1600 x 1000 pixels).
//
// Over several sizes, the upper panel has x the size (log axis, every
// measured size labelled with e.SizeLabel) and y the median time (log
// axis, ticks with their unit) or e.Value (linear), one line per variant:
// narma's in colours, put-notify thicker, unsound ones dotted, the MPI
// reference programs ("mpi-" variants) dashed in greys with the marker of
// their narma counterpart; a bar from the 10th to the 90th percentile of
// the rounds at each point that has them. If the rows have put-notify and
// a classic or MPI variant, a lower panel shows per size the median of the
// fastest of those divided by put-notify's (above 1, put-notify is
// faster), as the tables' ratio lines do, each point in the style of the
// variant that was fastest. The legend is a column right of the panels.
// At a single size, the plot is one dot per variant instead, the variants
// named along the y axis. Rows without a size (LogGP's L and G), and
// e.Note's lines, are printed under the panels.
//
// Rows of other experiments, and rows whose median is not positive when
// e has no Value, are left out; with no row left, WritePlot fails and
// writes nothing.
func WritePlot(path string, e Experiment, rows []Row) error {
	ext := strings.ToLower(filepath.Ext(path))
	if !slices.Contains(PlotFormats, ext) {
		return fmt.Errorf("plot %s: unknown format %q (want %s)", path, ext, strings.Join(PlotFormats, " or "))
	}
	f, err := newFigure(e, rows)
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	var c vg.CanvasWriterTo
	if ext == ".png" {
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(plotDPI))}
	} else {
		c = vgsvg.New(plotWidth, plotHeight)
	}
	f.draw(draw.New(c))
	// Written whole once drawn, so that a failure leaves no file.
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return os.WriteFile(path, buf.Bytes(), 0o666)
}

// errNothingToPlot is newFigure's error for rows with nothing to plot.
var errNothingToPlot = errors.New("no measurements to plot")

// newFigure lays out the plot of e's rows that WritePlot describes.
func newFigure(e Experiment, rows []Row) (*figure, error) {
	value := func(r Row) float64 { return r.MedianNs }
	if e.Value != nil {
		value = e.Value
	}
	var sized []Row
	var unsized []string
	rounds := 0
	for _, r := range rows {
		if r.Experiment != e.Name || e.Value == nil && r.MedianNs <= 0 && !(e.Params && r.Bytes == 0) {
			continue
		}
		rounds = max(rounds, r.Rounds)
		if r.Bytes > 0 {
			sized = append(sized, r)
		} else if e.Params {
			unsized = append(unsized, r.Variant+" = "+strconv.FormatFloat(value(r), 'g', 4, 64))
		}
	}
	var sizes []int
	for _, r := range sized {
		if !slices.Contains(sizes, r.Bytes) {
			sizes = append(sizes, r.Bytes)
		}
	}
	slices.Sort(sizes)
	if len(sizes) == 0 {
		return nil, fmt.Errorf("%s: %w", e.Name, errNothingToPlot)
	}
	measure := e.Measure
	if measure == "" {
		measure = "time"
	}
	f := &figure{title: e.Name + ": " + measure}
	styles := variantStyles(e.Variants)
	var err error
	if len(sizes) == 1 {
		err = f.addDots(e, sized, value, styles)
	} else {
		err = f.addLines(e, sized, sizes, value, styles)
	}
	if err != nil {
		return nil, err
	}
	f.subtitle = readingNote(e, sized, rounds)
	if len(unsized) > 0 {
		f.notes = append(f.notes, "without a size ("+e.Unit+"): "+strings.Join(unsized, ", "))
	}
	for _, v := range e.Variants {
		if v.Unsound && slices.ContainsFunc(sized, func(r Row) bool { return r.Variant == v.Name }) {
			f.notes = append(f.notes, "* "+v.Name+" (dotted): "+v.Summary+".")
		}
	}
	if e.Note != nil {
		f.notes = append(f.notes, strings.Join(e.Note(rows), " "))
	}
	return f, nil
}

// readingNote says how to read the figure: what a point is and what the
// bars are, and how the MPI references look, as far as the rows have
// them.
func readingNote(e Experiment, rows []Row, rounds int) string {
	var parts []string
	what := "medians"
	if rounds > 0 {
		what = fmt.Sprintf("medians of %d rounds", rounds)
	}
	if slices.ContainsFunc(rows, func(r Row) bool { return e.Value == nil && hasSpread(r) }) {
		what += ", bars from 10th to 90th percentile"
	}
	if e.Value == nil {
		parts = append(parts, what)
	}
	if slices.ContainsFunc(rows, func(r Row) bool { return strings.HasPrefix(r.Variant, MPIPrefix) }) {
		parts = append(parts, "MPI reference programs dashed, in greys")
	}
	return strings.Join(parts, "; ")
}

// hasSpread reports whether r has a consistent 10th and 90th percentile
// to draw a bar from one to the other.
func hasSpread(r Row) bool {
	return r.P10Ns > 0 && r.P10Ns <= r.MedianNs && r.MedianNs <= r.P90Ns
}

// addLines adds the panels of a figure over several sizes: the values
// by size and, for times, the ratio of the best other variant to
// put-notify.
func (f *figure) addLines(e Experiment, rows []Row, sizes []int, value func(Row) float64, styles map[string]variantStyle) error {
	p := plot.New()
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = sizeTicker{sizes: sizes, label: e.SizeLabel}
	if e.Value == nil {
		p.Y.Label.Text = e.Measure
		if p.Y.Label.Text == "" {
			p.Y.Label.Text = "time"
		}
		if e.Params {
			// The parameters with a size are times; the measure's
			// remarks are about the others, in the notes.
			p.Y.Label.Text, _, _ = strings.Cut(p.Y.Label.Text, " (")
		}
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.TickerFunc(timeTicks)
	} else {
		p.Y.Label.Text = e.Measure + " (" + unitSymbol(e.Unit) + ")"
		p.Y.Tick.Marker = unitTicker{unit: unitSymbol(e.Unit)}
	}
	p.Add(plotter.NewGrid())
	lo, hi := math.Inf(1), math.Inf(-1)
	// The MPI references first, so that narma's lines, and put-notify's
	// last, are drawn over them.
	for _, v := range drawOrder(e.Variants) {
		var xys, spread plotter.XYs
		var bars plotter.YErrors
		for _, r := range rows {
			if r.Variant != v.Name {
				continue
			}
			xy := plotter.XY{X: float64(r.Bytes), Y: value(r)}
			xys = append(xys, xy)
			lo, hi = min(lo, xy.Y), max(hi, xy.Y)
			if e.Value == nil && hasSpread(r) {
				spread = append(spread, xy)
				bars = append(bars, struct{ Low, High float64 }{r.MedianNs - r.P10Ns, r.P90Ns - r.MedianNs})
				lo, hi = min(lo, r.P10Ns), max(hi, r.P90Ns)
			}
		}
		if len(xys) == 0 {
			continue
		}
		slices.SortFunc(xys, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
		st := styles[v.Name]
		if len(spread) > 0 {
			eb, err := plotter.NewYErrorBars(struct {
				plotter.XYs
				plotter.YErrors
			}{spread, bars})
			if err != nil {
				return fmt.Errorf("%s: %w", v.Name, err)
			}
			eb.LineStyle = draw.LineStyle{Color: st.color, Width: vg.Points(0.75)}
			eb.CapWidth = vg.Points(4)
			p.Add(eb)
		}
		l, s, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("%s: %w", v.Name, err)
		}
		l.LineStyle, s.GlyphStyle = st.line(), st.glyph()
		p.Add(l, s)
		f.entries = append(f.entries, legendEntry{v, []plot.Thumbnailer{l, s}})
	}
	if len(f.entries) == 0 {
		return fmt.Errorf("%s: %w", e.Name, errNothingToPlot)
	}
	f.sortEntries(e.Variants)
	if e.Value != nil && lo < 0 && hi > 0 {
		p.Add(hLine(0, sizes, draw.LineStyle{Color: ink, Width: vg.Points(0.75)}))
	}
	f.panels = append(f.panels, panel{p: p, share: 1})
	if e.Value == nil {
		f.addRatios(e, rows, sizes, styles)
	}
	f.panels[len(f.panels)-1].p.X.Label.Text = sizeAxisLabel(e)
	return nil
}

// sizeAxisLabel is the label of the size axis: "message size", or what
// e.Columns says the sizes are, up to its first clause.
func sizeAxisLabel(e Experiment) string {
	if e.Columns == "" {
		return "message size"
	}
	s, _, _ := strings.Cut(e.Columns, ",")
	s, _, _ = strings.Cut(s, " (")
	return s
}

// ratioSeries is one line of the ratio panel: per size, the fastest of
// some variants and its median divided by put-notify's.
type ratioSeries struct {
	label string
	style variantStyle
	xys   plotter.XYs
	best  []string
}

// addRatios adds the panel of the ratios of the best classic variant,
// and of the best MPI reference, to put-notify, if the rows have any.
func (f *figure) addRatios(e Experiment, rows []Row, sizes []int, styles map[string]variantStyle) {
	var classic, mpi []string
	for _, v := range e.Variants {
		switch {
		case strings.HasPrefix(v.Name, MPIPrefix):
			mpi = append(mpi, v.Name)
		case v.Classic:
			classic = append(classic, v.Name)
		}
	}
	series := []ratioSeries{
		bestRatios(rows, sizes, classic, "speed-up over best classic", variantStyle{color: ink, width: vg.Points(1.5)}),
		bestRatios(rows, sizes, mpi, "speed-up over best MPI", variantStyle{color: greys[1], width: vg.Points(1.5), dashes: mpiDashes}),
	}
	p := plot.New()
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = sizeTicker{sizes: sizes, label: e.SizeLabel}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.TickerFunc(ratioTicks)
	p.Y.Label.Text = "put-notify\nspeed-up"
	p.Add(plotter.NewGrid())
	// The range always holds 1, the line where put-notify is as fast as
	// the best other variant.
	p.Y.Min, p.Y.Max = 1/1.25, 1.25
	p.Add(hLine(1, sizes, draw.LineStyle{Color: ink, Width: vg.Points(0.75)}))
	var entries []legendEntry
	for _, s := range series {
		if len(s.xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(s.xys)
		if err != nil {
			continue
		}
		l.LineStyle = s.style.line()
		p.Add(l)
		for i, xy := range s.xys {
			sc, err := plotter.NewScatter(plotter.XYs{xy})
			if err != nil {
				continue
			}
			sc.GlyphStyle = styles[s.best[i]].glyph()
			p.Add(sc)
			p.Y.Min, p.Y.Max = min(p.Y.Min, xy.Y/1.1), max(p.Y.Max, xy.Y*1.1)
		}
		entries = append(entries, legendEntry{Variant{Name: s.label}, []plot.Thumbnailer{l}})
	}
	if len(entries) == 0 {
		return
	}
	// A blank line sets the lower panel's entries apart.
	f.entries = append(f.entries, legendEntry{})
	f.entries = append(f.entries, entries...)
	f.panels[0].share = 0.6
	f.panels[0].p.X.Tick.Marker = sizeTicker{sizes: sizes, bare: true}
	f.panels = append(f.panels, panel{p: p, share: 0.4})
	f.notes = append([]string{"Lower panel: put-notify's speed-up, the median of the fastest classic variant " +
		"(or MPI reference program) at each size divided by put-notify's; above 1, put-notify is faster. " +
		"Each point has the marker and colour of the variant that was fastest."}, f.notes...)
}

// bestRatios returns the series of the fastest of names at each size
// divided by put-notify, at the sizes with both.
func bestRatios(rows []Row, sizes []int, names []string, label string, style variantStyle) ratioSeries {
	s := ratioSeries{label: label, style: style}
	for _, size := range sizes {
		notify, best, bestName := 0.0, math.Inf(1), ""
		for _, r := range rows {
			switch {
			case r.Bytes != size:
			case r.Variant == NotifyVariant:
				notify = r.MedianNs
			case slices.Contains(names, r.Variant) && r.MedianNs < best:
				best, bestName = r.MedianNs, r.Variant
			}
		}
		if notify > 0 && bestName != "" {
			s.xys = append(s.xys, plotter.XY{X: float64(size), Y: best / notify})
			s.best = append(s.best, bestName)
		}
	}
	return s
}

// addDots adds the panel of a figure at a single size: one dot per
// variant (with its bar from the 10th to the 90th percentile), the
// variants named along the y axis, first at the top.
func (f *figure) addDots(e Experiment, rows []Row, value func(Row) float64, styles map[string]variantStyle) error {
	p := plot.New()
	var labels []string
	var kept []Variant
	for _, v := range e.Variants {
		if slices.ContainsFunc(rows, func(r Row) bool { return r.Variant == v.Name }) {
			kept = append(kept, v)
		}
	}
	if len(kept) == 0 {
		return fmt.Errorf("%s: %w", e.Name, errNothingToPlot)
	}
	for i := len(kept) - 1; i >= 0; i-- {
		labels = append(labels, kept[i].Label())
	}
	p.NominalY(labels...)
	p.Y.Padding = vg.Points(8)
	size := rows[0].Bytes
	if e.Value == nil {
		p.X.Label.Text = e.Measure + " at " + e.SizeLabel(size)
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.TickerFunc(timeTicks)
	} else {
		p.X.Label.Text = e.Measure + " (" + unitSymbol(e.Unit) + ") at " + e.SizeLabel(size)
		p.X.Tick.Marker = unitTicker{unit: unitSymbol(e.Unit)}
	}
	p.Add(plotter.NewGrid())
	for i, v := range kept {
		y := float64(len(kept) - 1 - i)
		st := styles[v.Name]
		for _, r := range rows {
			if r.Variant != v.Name {
				continue
			}
			xy := plotter.XYs{{X: value(r), Y: y}}
			if e.Value == nil && hasSpread(r) {
				eb, err := plotter.NewXErrorBars(struct {
					plotter.XYs
					plotter.XErrors
				}{xy, plotter.XErrors{{Low: r.MedianNs - r.P10Ns, High: r.P90Ns - r.MedianNs}}})
				if err != nil {
					return fmt.Errorf("%s: %w", v.Name, err)
				}
				eb.LineStyle = draw.LineStyle{Color: st.color, Width: vg.Points(1)}
				eb.CapWidth = vg.Points(5)
				p.Add(eb)
			}
			s, err := plotter.NewScatter(xy)
			if err != nil {
				return fmt.Errorf("%s: %w", v.Name, err)
			}
			s.GlyphStyle = st.glyph()
			s.GlyphStyle.Radius = vg.Points(4)
			p.Add(s)
		}
	}
	f.panels = append(f.panels, panel{p: p, share: 1})
	return nil
}

// hLine is a horizontal line at y across the sizes.
func hLine(y float64, sizes []int, sty draw.LineStyle) plot.Plotter {
	l, _ := plotter.NewLine(plotter.XYs{{X: float64(sizes[0]), Y: y}, {X: float64(sizes[len(sizes)-1]), Y: y}})
	l.LineStyle = sty
	return l
}

// unitSymbol shortens a unit for an axis: "percent" to "%".
func unitSymbol(unit string) string {
	if unit == "percent" {
		return "%"
	}
	return unit
}
