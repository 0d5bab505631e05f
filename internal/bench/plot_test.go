package bench

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

func plotRows() []Row {
	var rows []Row
	for i, v := range []string{"send-recv", "pscw", "unsync", "put-notify"} {
		for _, size := range []int{8, 64, 512, 4 << 10, 32 << 10} {
			rows = append(rows, Row{Experiment: "toy", Variant: v, Bytes: size,
				MedianNs: float64(1000*(i+1)) + float64(size)/3})
		}
	}
	return rows
}

// TestWritePlot: WritePlot writes a non-empty SVG or PNG, as the
// extension says.
func TestWritePlot(t *testing.T) {
	dir := t.TempDir()
	e := summaryExperiment()
	for _, c := range []struct {
		name  string
		magic [][]byte
	}{
		{"toy.svg", [][]byte{[]byte("<svg"), []byte("<?xml")}},
		{"toy.PNG", [][]byte{[]byte("\x89PNG\r\n\x1a\n")}},
	} {
		path := filepath.Join(dir, c.name)
		if err := WritePlot(path, e, plotRows()); err != nil {
			t.Fatalf("WritePlot %s: %v", c.name, err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ok := false
		for _, m := range c.magic {
			ok = ok || bytes.HasPrefix(bytes.TrimSpace(b), m)
		}
		if len(b) < 100 || !ok {
			t.Errorf("%s: %d bytes starting %q", c.name, len(b), b[:min(len(b), 16)])
		}
		if c.name == "toy.svg" {
			for _, s := range []string{"put-notify", "unsync*", "toy: time per toy"} {
				if !bytes.Contains(b, []byte(s)) {
					t.Errorf("%s lacks %q", c.name, s)
				}
			}
		}
	}
}

// TestWritePlotErrors: an unknown format or nothing to plot fail, and
// write no file.
func TestWritePlotErrors(t *testing.T) {
	dir := t.TempDir()
	e := summaryExperiment()
	for _, c := range []struct {
		name string
		rows []Row
	}{
		{"toy.gif", plotRows()},
		{"toy", plotRows()},
		{"empty.svg", nil},
		{"zero.png", []Row{{Experiment: "toy", Variant: "pscw", Bytes: 8}}},
	} {
		path := filepath.Join(dir, c.name)
		if err := WritePlot(path, e, c.rows); err == nil {
			t.Errorf("WritePlot %s: no error", c.name)
		}
		if _, err := os.Stat(path); err == nil {
			t.Errorf("WritePlot %s wrote a file", c.name)
		}
	}
}

// TestWritePlotSpread: rows with their 10th and 90th percentiles get a
// bar from one to the other at each point; rows without get none.
func TestWritePlotSpread(t *testing.T) {
	dir := t.TempDir()
	e := summaryExperiment()
	plain := plotRows()
	spread := plotRows()
	for i := range spread {
		r := &spread[i]
		r.P10Ns, r.P90Ns = r.MedianNs*0.8, r.MedianNs*1.3
	}
	strokes := func(name string, rows []Row) int {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := WritePlot(path, e, rows); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(b, []byte("<path"))
	}
	without, with := strokes("plain.svg", plain), strokes("spread.svg", spread)
	// A bar and its two caps per point.
	if want := without + 3*len(spread); with < want {
		t.Errorf("%d strokes with the spread, %d without: want at least %d", with, without, want)
	}
}

// plotExperiment is an experiment with as many variants as the
// ping-pong run with --mpi: nine of narma's (one unsound) and four MPI
// references.
func plotExperiment() Experiment {
	e := Experiment{Name: "pp", Measure: "half round trip"}
	for _, name := range []string{"send-recv", "fence", "pscw", "put-flag", "put-notify", "get-notify", "counter", "signal", "unsync"} {
		e.Variants = append(e.Variants, Variant{Name: name, Unsound: name == "unsync",
			Classic: slices.Contains([]string{"send-recv", "fence", "pscw", "put-flag"}, name)})
	}
	for _, name := range []string{"send-recv", "fence", "pscw", "put-flag"} {
		e.Variants = append(e.Variants, Variant{Name: MPIPrefix + name})
	}
	return e
}

// plotRowsAt returns rows of e's variants at sizes, with a spread, the
// times growing with the size from a different start per variant.
func plotRowsAt(e Experiment, sizes []int) []Row {
	var rows []Row
	for i, v := range e.Variants {
		for _, size := range sizes {
			ns := 300*float64(i+1) + float64(size)/(2+float64(i%3))
			rows = append(rows, Row{Experiment: e.Name, Variant: v.Name, Bytes: size, Rounds: 15,
				MedianNs: ns, P10Ns: 0.8 * ns, P90Ns: 1.4 * ns, OverlapPct: 60 - float64(i*size%300)})
		}
	}
	return rows
}

// textBox is a string drawn on a canvas and the rectangle it covers.
type textBox struct {
	s string
	r vg.Rectangle
}

// affine is the transform x' = a*x + c*y + e, y' = b*x + d*y + f.
type affine struct{ a, b, c, d, e, f float64 }

func (m affine) apply(p vg.Point) vg.Point {
	x, y := float64(p.X), float64(p.Y)
	return vg.Point{X: vg.Length(m.a*x + m.c*y + m.e), Y: vg.Length(m.b*x + m.d*y + m.f)}
}

// then returns m applied after n (n in m's coordinates).
func (m affine) then(n affine) affine {
	return affine{
		a: m.a*n.a + m.c*n.b, b: m.b*n.a + m.d*n.b,
		c: m.a*n.c + m.c*n.d, d: m.b*n.c + m.d*n.d,
		e: m.a*n.e + m.c*n.f + m.e, f: m.b*n.e + m.d*n.f + m.f,
	}
}

// textCanvas is a vg.Canvas that draws nothing but records where every
// string would go, through the canvas's transforms, from the font's
// width and extents.
type textCanvas struct {
	w, h  vg.Length
	m     affine
	stack []affine
	boxes []textBox
}

func newTextCanvas(w, h vg.Length) *textCanvas {
	return &textCanvas{w: w, h: h, m: affine{a: 1, d: 1}}
}

func (c *textCanvas) Size() (vg.Length, vg.Length)        { return c.w, c.h }
func (c *textCanvas) SetLineWidth(vg.Length)              {}
func (c *textCanvas) SetLineDash([]vg.Length, vg.Length)  {}
func (c *textCanvas) SetColor(color.Color)                {}
func (c *textCanvas) Stroke(vg.Path)                      {}
func (c *textCanvas) Fill(vg.Path)                        {}
func (c *textCanvas) DrawImage(vg.Rectangle, image.Image) {}
func (c *textCanvas) Push()                               { c.stack = append(c.stack, c.m) }
func (c *textCanvas) Pop() {
	c.m = c.stack[len(c.stack)-1]
	c.stack = c.stack[:len(c.stack)-1]
}
func (c *textCanvas) Translate(p vg.Point) {
	c.m = c.m.then(affine{a: 1, d: 1, e: float64(p.X), f: float64(p.Y)})
}
func (c *textCanvas) Rotate(t float64) {
	s, k := math.Sincos(t)
	c.m = c.m.then(affine{a: k, b: s, c: -s, d: k})
}
func (c *textCanvas) Scale(x, y float64) { c.m = c.m.then(affine{a: x, d: y}) }

func (c *textCanvas) FillString(f font.Face, p vg.Point, s string) {
	ext := f.Extents()
	w := f.Width(s)
	r := vg.Rectangle{Min: vg.Point{X: vg.Length(math.Inf(1)), Y: vg.Length(math.Inf(1))},
		Max: vg.Point{X: vg.Length(math.Inf(-1)), Y: vg.Length(math.Inf(-1))}}
	for _, q := range []vg.Point{{X: p.X, Y: p.Y - ext.Descent}, {X: p.X + w, Y: p.Y - ext.Descent},
		{X: p.X, Y: p.Y + ext.Ascent}, {X: p.X + w, Y: p.Y + ext.Ascent}} {
		q = c.m.apply(q)
		r.Min.X, r.Min.Y = min(r.Min.X, q.X), min(r.Min.Y, q.Y)
		r.Max.X, r.Max.Y = max(r.Max.X, q.X), max(r.Max.Y, q.Y)
	}
	c.boxes = append(c.boxes, textBox{s, r})
}

// overlaps reports whether a and b share more than a line.
func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

// shrink returns r with each side moved in by frac of its smaller
// dimension: the lines of a paragraph, whose boxes overlap by the
// font's leading, then stay apart.
func shrink(r vg.Rectangle, frac float64) vg.Rectangle {
	d := vg.Length(frac) * min(r.Size().X, r.Size().Y)
	return vg.Rectangle{Min: vg.Point{X: r.Min.X + d, Y: r.Min.Y + d}, Max: vg.Point{X: r.Max.X - d, Y: r.Max.Y - d}}
}

// TestPlotLayout lays out plots of many variants, MPI references among
// them, and checks what a person looking at them would: every string
// lies inside the canvas, no two strings run into each other, every
// measured size has its label under its point on the size axis, the
// legend stays out of the data, and put-notify's ratio panel is there.
func TestPlotLayout(t *testing.T) {
	pp := plotExperiment()
	overlap := Experiment{Name: "ov", Measure: "share of the communication hidden by computation",
		Value: func(r Row) float64 { return r.OverlapPct }, Unit: "percent",
		Variants: []Variant{{Name: "send-recv"}, {Name: "put-fence"}, {Name: "put-flush"}, {Name: NotifyVariant}}}
	var dense []int
	for s := 8; s <= 1<<20; s *= 2 {
		dense = append(dense, s)
	}
	for _, c := range []struct {
		name   string
		e      Experiment
		sizes  []int
		panels int
	}{
		{"default sizes", pp, DefaultSizes, 2},
		{"every power of two", pp, dense, 2},
		{"value", overlap, DefaultSizes, 1},
		{"one size", pp, []int{8}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := newFigure(c.e, plotRowsAt(c.e, c.sizes))
			if err != nil {
				t.Fatal(err)
			}
			tc := newTextCanvas(plotWidth, plotHeight)
			lay := f.draw(draw.New(tc))
			if len(lay.data) != c.panels {
				t.Errorf("%d panels, want %d", len(lay.data), c.panels)
			}
			canvas := vg.Rectangle{Max: vg.Point{X: plotWidth, Y: plotHeight}}
			for i, b := range tc.boxes {
				if b.r.Min.X < canvas.Min.X || b.r.Min.Y < canvas.Min.Y || b.r.Max.X > canvas.Max.X || b.r.Max.Y > canvas.Max.Y {
					t.Errorf("%q at %v: clipped by the canvas %v", b.s, b.r, canvas)
				}
				for _, o := range tc.boxes[:i] {
					if overlaps(shrink(b.r, 0.15), shrink(o.r, 0.15)) {
						t.Errorf("%q at %v runs into %q at %v", b.s, b.r, o.s, o.r)
					}
				}
			}
			checkSizeLabels(t, c.e, c.sizes, lay, tc.boxes)
			checkLegend(t, c.e, lay, tc.boxes)
		})
	}
}

// checkSizeLabels checks that every size has its label on the size axis:
// under the lowest panel's data and, when the sizes are the x axis,
// centred (or ending, upright) on the size's position on the log axis.
func checkSizeLabels(t *testing.T, e Experiment, sizes []int, lay figureLayout, boxes []textBox) {
	t.Helper()
	data := lay.data[len(lay.data)-1]
	if len(sizes) == 1 {
		// One size: named in the axis label, under the data.
		if !slices.ContainsFunc(boxes, func(b textBox) bool {
			return strings.Contains(b.s, e.SizeLabel(sizes[0])) && b.r.Max.Y <= data.Min.Y
		}) {
			t.Errorf("no label under the data names the size %s", e.SizeLabel(sizes[0]))
		}
		return
	}
	span := math.Log(float64(sizes[len(sizes)-1]) / float64(sizes[0]))
	for _, s := range sizes {
		x := data.Min.X + data.Size().X*vg.Length(math.Log(float64(s)/float64(sizes[0]))/span)
		if !slices.ContainsFunc(boxes, func(b textBox) bool {
			return b.s == e.SizeLabel(s) && b.r.Max.Y <= data.Min.Y && b.r.Min.X-1 <= x && x <= b.r.Max.X+1
		}) {
			t.Errorf("no tick label %q under the size axis at x = %.1f", e.SizeLabel(s), x)
		}
	}
}

// checkLegend checks that the legend and every variant's name in it stay
// out of the panels' data areas.
func checkLegend(t *testing.T, e Experiment, lay figureLayout, boxes []textBox) {
	t.Helper()
	for _, d := range lay.data {
		if overlaps(lay.legend, d) {
			t.Errorf("legend %v over the data %v", lay.legend, d)
		}
		for _, b := range boxes {
			if slices.ContainsFunc(e.Variants, func(v Variant) bool { return v.Label() == b.s }) && overlaps(b.r, d) {
				t.Errorf("%q at %v over the data %v", b.s, b.r, d)
			}
		}
	}
}

// TestWritePlotImage renders the plot of many variants to PNG and looks
// at the pixels: the image is large enough for a slide, and nothing
// but the background touches its edges, where a label would be cut.
func TestWritePlotImage(t *testing.T) {
	e := plotExperiment()
	for _, sizes := range [][]int{DefaultSizes, {8}} {
		path := filepath.Join(t.TempDir(), "pp.png")
		if err := WritePlot(path, e, plotRowsAt(e, sizes)); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(fh)
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		b := img.Bounds()
		if b.Dx() < 1600 || b.Dy() < 1000 {
			t.Errorf("%d sizes: image of %dx%d pixels, want at least 1600x1000", len(sizes), b.Dx(), b.Dy())
		}
		const band = 4
		inked := 0
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				if x >= b.Min.X+band && x < b.Max.X-band && y >= b.Min.Y+band && y < b.Max.Y-band {
					continue
				}
				if r, g, bl, _ := img.At(x, y).RGBA(); r < 0xf000 || g < 0xf000 || bl < 0xf000 {
					inked++
				}
			}
		}
		if inked > 0 {
			t.Errorf("%d sizes: %d pixels within %d of the image's edge are not background: something is cut off", len(sizes), inked, band)
		}
	}
}

// TestVariantStyles: narma's variants, up to as many as there are
// colours, have distinct colours; the MPI references distinct greys and
// a dashed line, narma's none of them grey; put-notify is red and the
// thickest.
func TestVariantStyles(t *testing.T) {
	e := plotExperiment()
	styles := variantStyles(e.Variants)
	grey := func(c color.Color) bool {
		r, g, b, _ := c.RGBA()
		return r == g && g == b
	}
	seen := map[color.Color]string{}
	for _, v := range e.Variants {
		s := styles[v.Name]
		if other, ok := seen[s.color]; ok {
			t.Errorf("%s and %s have the same colour %v", v.Name, other, s.color)
		}
		seen[s.color] = v.Name
		mpi := strings.HasPrefix(v.Name, MPIPrefix)
		if grey(s.color) != mpi || (len(s.dashes) > 0) != (mpi || v.Unsound) {
			t.Errorf("%s: colour %v, dashes %v", v.Name, s.color, s.dashes)
		}
		if v.Name != NotifyVariant && s.width >= styles[NotifyVariant].width {
			t.Errorf("%s as thick as put-notify", v.Name)
		}
	}
	if styles[NotifyVariant].color != notifyColor {
		t.Errorf("put-notify in %v", styles[NotifyVariant].color)
	}
}
