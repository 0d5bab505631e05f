package bench

import (
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Colours and line styles of the variants. narma's variants take
// distinct colours, put-notify always the red one and a thicker line;
// the MPI references greys and dashes, so that the two families tell
// apart at a glance. Markers tell apart variants whose colours repeat.
var (
	ink         = color.RGBA{0x22, 0x22, 0x22, 0xff}
	notifyColor = color.RGBA{0xd6, 0x27, 0x28, 0xff}
	narmaColors = []color.Color{
		color.RGBA{0x1f, 0x77, 0xb4, 0xff}, // blue
		color.RGBA{0xff, 0x7f, 0x0e, 0xff}, // orange
		color.RGBA{0x2c, 0xa0, 0x2c, 0xff}, // green
		color.RGBA{0x94, 0x67, 0xbd, 0xff}, // purple
		color.RGBA{0x8c, 0x56, 0x4b, 0xff}, // brown
		color.RGBA{0xe3, 0x77, 0xc2, 0xff}, // pink
		color.RGBA{0x17, 0xbe, 0xcf, 0xff}, // cyan
		color.RGBA{0x9a, 0x9a, 0x1a, 0xff}, // olive
		color.RGBA{0x39, 0x3b, 0x79, 0xff}, // indigo
		color.RGBA{0xe6, 0xab, 0x02, 0xff}, // mustard
	}
	greys = []color.Color{
		color.Gray{Y: 0x30},
		color.Gray{Y: 0x90},
		color.Gray{Y: 0x60},
		color.Gray{Y: 0xb4},
	}
	mpiDashes     = []vg.Length{vg.Points(6), vg.Points(3)}
	unsoundDashes = []vg.Length{vg.Points(1.5), vg.Points(2.5)}
	shapes        = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.TriangleGlyph{}, draw.RingGlyph{},
		draw.SquareGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}
)

// variantStyle is how a variant's line and markers look.
type variantStyle struct {
	color  color.Color
	width  vg.Length
	dashes []vg.Length
	shape  draw.GlyphDrawer
	radius vg.Length
}

func (s variantStyle) line() draw.LineStyle {
	return draw.LineStyle{Color: s.color, Width: s.width, Dashes: s.dashes}
}

func (s variantStyle) glyph() draw.GlyphStyle {
	shape, r := s.shape, s.radius
	if shape == nil {
		shape, r = draw.CircleGlyph{}, vg.Points(3)
	}
	return draw.GlyphStyle{Color: s.color, Radius: r, Shape: shape}
}

// variantStyles returns the style of every variant of vs: in vs's order,
// narma's take the colours and markers in turn (put-notify the red), and
// each MPI reference a grey and the marker of its narma counterpart.
func variantStyles(vs []Variant) map[string]variantStyle {
	styles := map[string]variantStyle{}
	shapeOf := map[string]int{}
	colour, shape := 0, 0
	for _, v := range vs {
		if strings.HasPrefix(v.Name, MPIPrefix) {
			continue
		}
		s := variantStyle{width: vg.Points(1.5), shape: shapes[shape%len(shapes)], radius: vg.Points(3)}
		shapeOf[v.Name] = shape
		shape++
		if v.Name == NotifyVariant {
			s.color, s.width, s.radius = notifyColor, vg.Points(2.75), vg.Points(3.75)
		} else {
			s.color = narmaColors[colour%len(narmaColors)]
			colour++
		}
		if v.Unsound {
			s.dashes = unsoundDashes
		}
		styles[v.Name] = s
	}
	grey := 0
	for _, v := range vs {
		if !strings.HasPrefix(v.Name, MPIPrefix) {
			continue
		}
		k, ok := shapeOf[strings.TrimPrefix(v.Name, MPIPrefix)]
		if !ok {
			k = shape
			shape++
		}
		styles[v.Name] = variantStyle{color: greys[grey%len(greys)], width: vg.Points(1.5), dashes: mpiDashes,
			shape: shapes[k%len(shapes)], radius: vg.Points(3)}
		grey++
	}
	return styles
}

// drawOrder returns vs in the order to draw them: the MPI references,
// narma's other variants, put-notify on top.
func drawOrder(vs []Variant) []Variant {
	rank := func(v Variant) int {
		switch {
		case strings.HasPrefix(v.Name, MPIPrefix):
			return 0
		case v.Name == NotifyVariant:
			return 2
		}
		return 1
	}
	out := slices.Clone(vs)
	slices.SortStableFunc(out, func(a, b Variant) int { return rank(a) - rank(b) })
	return out
}

// figure is a plot as WritePlot draws it: a title and a line on how to
// read it, panels stacked top to bottom that share the size axis, a
// legend in a column right of them, and notes under them.
type figure struct {
	title, subtitle string
	panels          []panel
	entries         []legendEntry
	notes           []string
}

// panel is one plot of a figure and its share of the figure's height.
type panel struct {
	p     *plot.Plot
	share float64
}

// legendEntry is one line of the legend: a variant (its Label) and the
// samples of its style.
type legendEntry struct {
	v      Variant
	thumbs []plot.Thumbnailer
}

// sortEntries puts the legend's entries in the order of vs, that of the
// tables.
func (f *figure) sortEntries(vs []Variant) {
	index := func(e legendEntry) int {
		return slices.IndexFunc(vs, func(v Variant) bool { return v.Name == e.v.Name })
	}
	slices.SortStableFunc(f.entries, func(a, b legendEntry) int { return index(a) - index(b) })
}

// Font sizes of the figure's text, in points.
const (
	titleSize    = 15
	subtitleSize = 10
	labelSize    = 12
	tickSize     = 10.5
	legendSize   = 11
	noteSize     = 9
)

// The figure's margin around everything, and the gaps between its parts.
var (
	margin    = vg.Points(10)
	gap       = vg.Points(12)
	panelGap  = vg.Points(8)
	greyInk   = color.Gray{Y: 0x55}
	minLegend = vg.Points(7)
)

// figureLayout is where draw put the parts of a figure: the data area of
// each panel and the legend's extent (empty without a legend).
type figureLayout struct {
	data   []vg.Rectangle
	legend vg.Rectangle
}

// textStyle is the figure's text style at size points.
func textStyle(size vg.Length, c color.Color) text.Style {
	return text.Style{Color: c, Font: plotFont(size), Handler: plot.DefaultTextHandler}
}

// plotFont is the figure's font at size points: a sans serif, which
// reads better than plot's default serif on a slide.
func plotFont(size vg.Length) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
}

// draw draws the figure on c and returns where its parts went. The
// parts are placed from the edges inwards: title and subtitle at the
// top, notes at the bottom, the legend on the right, and the panels in
// what is left, so that no text leaves the canvas and the legend stays
// out of the data.
func (f *figure) draw(c draw.Canvas) figureLayout {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	area := c.Rectangle
	area.Min.X += margin
	area.Min.Y += margin
	area.Max.X -= margin
	area.Max.Y -= margin

	area.Max.Y = drawText(c, area, textStyle(titleSize, ink), f.title, true)
	if f.subtitle != "" {
		area.Max.Y = drawText(c, area, textStyle(subtitleSize, greyInk), f.subtitle, true)
	}
	area.Max.Y -= gap
	for i := len(f.notes) - 1; i >= 0; i-- {
		area.Min.Y = drawText(c, area, textStyle(noteSize, greyInk), f.notes[i], false) + vg.Points(2)
	}

	var lay figureLayout
	if len(f.entries) > 0 {
		lay.legend = f.drawLegend(c, area)
		area.Max.X = lay.legend.Min.X - gap
	}
	lay.data = f.drawPanels(c, area)
	return lay
}

// drawText draws txt wrapped to the width of area, centred at its top if
// top, else left-aligned at its bottom, and returns the free edge: the
// bottom of the text at the top, the top of the text at the bottom.
func drawText(c draw.Canvas, area vg.Rectangle, sty text.Style, txt string, top bool) vg.Length {
	txt = wrap(sty, txt, area.Size().X)
	h := sty.Height(txt)
	if top {
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		c.FillText(sty, vg.Point{X: (area.Min.X + area.Max.X) / 2, Y: area.Max.Y}, txt)
		return area.Max.Y - h
	}
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
	c.FillText(sty, vg.Point{X: area.Min.X, Y: area.Min.Y + sty.FontExtents().Descent}, txt)
	return area.Min.Y + h
}

// wrap breaks txt into lines, at spaces, no wider than width (a word
// wider than width gets a line of its own).
func wrap(sty text.Style, txt string, width vg.Length) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(txt) {
		switch {
		case line == "":
			line = w
		case sty.Width(line+" "+w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// drawLegend draws the legend at the top right of area, its font made
// smaller if its entries do not fit the height, and returns its extent.
func (f *figure) drawLegend(c draw.Canvas, area vg.Rectangle) vg.Rectangle {
	var l plot.Legend
	for size := vg.Length(legendSize); ; size-- {
		l = plot.NewLegend()
		l.TextStyle = textStyle(size, ink)
		l.Top, l.Left = true, true
		l.ThumbnailWidth = vg.Points(28)
		l.Padding = size / 4
		for _, e := range f.entries {
			l.Add(e.v.Label(), e.thumbs...)
		}
		if r := l.Rectangle(draw.Canvas{Rectangle: area}); r.Size().Y <= area.Size().Y || size <= minLegend {
			break
		}
	}
	size := l.Rectangle(draw.Canvas{Rectangle: area}).Size()
	// The legend measures its text without the space it puts between
	// thumbnail and text; counted here.
	size.X += l.TextStyle.Width(" ")
	r := vg.Rectangle{Min: vg.Point{X: area.Max.X - size.X, Y: area.Max.Y - size.Y}, Max: area.Max}
	l.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: r})
	return r
}

// drawPanels draws the panels stacked in area, their data areas aligned
// left and right so that they share the size axis, and returns the data
// areas.
func (f *figure) drawPanels(c draw.Canvas, area vg.Rectangle) []vg.Rectangle {
	total := 0.0
	for _, p := range f.panels {
		total += p.share
	}
	free := area.Size().Y - panelGap*vg.Length(len(f.panels)-1)
	// The shares are of the height of the data: a first layout by
	// shares of the panels' height measures what each panel's axes take
	// (more under upright size labels), the second gives each panel that
	// and its share of the rest.
	canvases := f.stackPanels(c, area, func(i int) vg.Length { return free * vg.Length(f.panels[i].share/total) })
	axes := make([]vg.Length, len(f.panels))
	data := free
	for i, p := range f.panels {
		stylePanel(p.p)
		if i == len(f.panels)-1 {
			fitSizeLabels(p.p, canvases[i])
		}
		axes[i] = canvases[i].Size().Y - p.p.DataCanvas(canvases[i]).Size().Y
		data -= axes[i]
	}
	canvases = f.stackPanels(c, area, func(i int) vg.Length { return axes[i] + data*vg.Length(f.panels[i].share/total) })
	for i, p := range f.panels {
		// The y label runs along the data area: wrapped to its height.
		d := p.p.DataCanvas(canvases[i])
		p.p.Y.Label.Text = wrap(p.p.Y.Label.TextStyle, p.p.Y.Label.Text, d.Size().Y)
	}
	// Align the data areas: each panel gives up on the left and right
	// what the others need for their axes and labels.
	left, right := vg.Length(math.Inf(-1)), vg.Length(math.Inf(1))
	for i, p := range f.panels {
		d := p.p.DataCanvas(canvases[i])
		left, right = max(left, d.Min.X), min(right, d.Max.X)
	}
	rects := make([]vg.Rectangle, len(f.panels))
	for i, p := range f.panels {
		d := p.p.DataCanvas(canvases[i])
		canvases[i] = draw.Crop(canvases[i], left-d.Min.X, right-d.Max.X, 0, 0)
		p.p.Draw(canvases[i])
		rects[i] = p.p.DataCanvas(canvases[i]).Rectangle
	}
	return rects
}

// stackPanels returns the canvases of the panels stacked from the top of
// area down, panel i height(i) high.
func (f *figure) stackPanels(c draw.Canvas, area vg.Rectangle, height func(i int) vg.Length) []draw.Canvas {
	canvases := make([]draw.Canvas, len(f.panels))
	top := area.Max.Y
	for i := range f.panels {
		h := height(i)
		canvases[i] = draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: area.Min.X, Y: top - h}, Max: vg.Point{X: area.Max.X, Y: top}}}
		top -= h + panelGap
	}
	return canvases
}

// stylePanel sets the fonts and colours of a panel.
func stylePanel(p *plot.Plot) {
	p.BackgroundColor = nil
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = plotFont(labelSize)
		a.Tick.Label.Font = plotFont(tickSize)
		a.Label.TextStyle.Color, a.Tick.Label.Color = ink, ink
		a.LineStyle.Color, a.Tick.LineStyle.Color = ink, ink
	}
	p.X.Label.Padding = vg.Points(4)
}

// fitSizeLabels makes the size labels of p, drawn on c, smaller, then
// upright, when they would run into each other side by side.
func fitSizeLabels(p *plot.Plot, c draw.Canvas) {
	t, ok := p.X.Tick.Marker.(sizeTicker)
	if !ok || t.bare || len(t.sizes) < 2 {
		return
	}
	for _, size := range []vg.Length{tickSize, tickSize - 1.5} {
		p.X.Tick.Label.Font.Size = size
		if !crowded(t, p.X.Tick.Label, p.DataCanvas(c).Size().X) {
			return
		}
	}
	p.X.Tick.Label.Rotation = math.Pi / 2
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
}

// crowded reports whether labels of t in style sty, side by side over
// width, would come closer than a few points.
func crowded(t sizeTicker, sty text.Style, width vg.Length) bool {
	span := math.Log(float64(t.sizes[len(t.sizes)-1]) / float64(t.sizes[0]))
	for i := 1; i < len(t.sizes); i++ {
		dist := width * vg.Length(math.Log(float64(t.sizes[i])/float64(t.sizes[i-1]))/span)
		if dist < (sty.Width(t.label(t.sizes[i-1]))+sty.Width(t.label(t.sizes[i])))/2+vg.Points(5) {
			return true
		}
	}
	return false
}

// Thumbnails of plotter's lines and scatters, for the legend.
var (
	_ plot.Thumbnailer = (*plotter.Line)(nil)
	_ plot.Thumbnailer = (*plotter.Scatter)(nil)
)
