package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/quick"

	"github.com/narma-rma/narma/internal/mem"
)

// expandLayout is the reference for a layout: the element offset of each of
// its first n elements, blocks in order, elements of a block in order.
func expandLayout(l Layout, n int) []int {
	offs := make([]int, 0, n)
	for b := 0; b < l.Count && len(offs) < n; b++ {
		for j := 0; j < l.BlockLen && len(offs) < n; j++ {
			offs = append(offs, b*l.Stride+j)
		}
	}
	return offs
}

type chunkRun struct {
	o, t, n int
	last    bool
}

// collectRuns drains a chunker. It fails if the chunker yields more runs
// than elements (plus the empty run), or yields again after reporting
// the end.
func collectRuns(t testing.TB, esz int, o, tl Layout, n int) []chunkRun {
	t.Helper()
	ch := newChunker(esz, o, tl, n)
	var runs []chunkRun
	for {
		oo, to, k, last, ok := ch.next()
		if !ok {
			for i := 0; i < 2; i++ {
				if _, _, _, _, ok := ch.next(); ok {
					t.Fatalf("chunker(%d, %+v, %+v, %d) yielded after its end", esz, o, tl, n)
				}
			}
			return runs
		}
		runs = append(runs, chunkRun{oo, to, k, last})
		if len(runs) > n+1 {
			t.Fatalf("chunker(%d, %+v, %+v, %d) yielded %d runs for %d elements", esz, o, tl, n, len(runs), n)
		}
	}
}

// checkChunker checks the runs of a chunker over origin layout o and target
// layout tl, both describing exactly n elements, against the per-element
// reference: concatenated, the runs map origin element i to target element
// i for every i, each run is contiguous on both sides, and a run ends only
// where the origin or the target block ends (it is as long as the blocks
// allow). It returns the number of pairs of consecutive runs that are
// contiguous on both sides (runs that a byte-level chunker could merge).
func checkChunker(t testing.TB, esz int, o, tl Layout, n int) (mergeable int) {
	t.Helper()
	desc := fmt.Sprintf("esz %d, origin %+v, target %+v, n %d", esz, o, tl, n)
	runs := collectRuns(t, esz, o, tl, n)
	if n == 0 {
		if len(runs) != 1 || runs[0] != (chunkRun{0, 0, 0, true}) {
			t.Fatalf("%s: zero-element transfer yielded %+v, want exactly one empty run with last", desc, runs)
		}
		return 0
	}
	oref, tref := expandLayout(o, n), expandLayout(tl, n)
	if len(oref) != n || len(tref) != n {
		t.Fatalf("test bug: %s: layouts hold %d and %d elements", desc, len(oref), len(tref))
	}
	e := 0 // elements covered so far
	for k, r := range runs {
		if r.n <= 0 || r.n%esz != 0 {
			t.Fatalf("%s: run %d (%+v) has %d bytes, not a positive number of elements", desc, k, r, r.n)
		}
		if r.last != (k == len(runs)-1) {
			t.Fatalf("%s: run %d of %d has last=%v", desc, k, len(runs), r.last)
		}
		cnt := r.n / esz
		if e+cnt > n {
			t.Fatalf("%s: runs cover more than %d elements", desc, n)
		}
		for j := 0; j < cnt; j++ {
			if got, want := r.o+j*esz, oref[e+j]*esz; got != want {
				t.Fatalf("%s: run %d (%+v): element %d at origin byte %d, want %d", desc, k, r, e+j, got, want)
			}
			if got, want := r.t+j*esz, tref[e+j]*esz; got != want {
				t.Fatalf("%s: run %d (%+v): element %d at target byte %d, want %d", desc, k, r, e+j, got, want)
			}
		}
		end := e + cnt
		if end != n && end%o.BlockLen != 0 && end%tl.BlockLen != 0 {
			t.Fatalf("%s: run %d (%+v) ends at element %d, inside an origin and a target block", desc, k, r, end)
		}
		if k > 0 {
			p := runs[k-1]
			if p.o+p.n == r.o && p.t+p.n == r.t {
				mergeable++
			}
		}
		e = end
	}
	if e != n {
		t.Fatalf("%s: runs cover %d elements, want %d", desc, e, n)
	}
	return mergeable
}

func divisors(n int) []int {
	var d []int
	for i := 1; i <= n; i++ {
		if n%i == 0 {
			d = append(d, i)
		}
	}
	return d
}

// layoutOf builds a valid layout of exactly n elements from three
// selectors: the block length is one of n's divisors, the stride is the
// block length plus gap (any value, even negative, when there is one
// block). For n == 0 it picks one of the empty layouts.
func layoutOf(n int, sel, gap int) Layout {
	if sel < 0 {
		sel = -sel
	}
	if n == 0 {
		switch sel % 3 {
		case 0:
			return Layout{Count: 0, BlockLen: 1 + gap&7, Stride: gap}
		case 1:
			return Layout{Count: 1 + gap&7, BlockLen: 0, Stride: gap & 7}
		}
		return Layout{}.normalize(0)
	}
	ds := divisors(n)
	bl := ds[sel%len(ds)]
	cnt := n / bl
	if cnt == 1 {
		return Layout{Count: 1, BlockLen: bl, Stride: gap}
	}
	if gap < 0 {
		gap = -gap
	}
	return Layout{Count: cnt, BlockLen: bl, Stride: bl + gap%5}
}

func TestLayoutValidExtent(t *testing.T) {
	cases := []struct {
		l            Layout
		valid        bool
		elems, exten int
	}{
		{Layout{}, true, 0, 0},
		{Layout{Count: 1, BlockLen: 5, Stride: 5}, true, 5, 5},
		{Layout{Count: 3, BlockLen: 2, Stride: 5}, true, 6, 12},
		{Layout{Count: 3, BlockLen: 2, Stride: 2}, true, 6, 6},   // stride == blocklen: dense
		{Layout{Count: 3, BlockLen: 2, Stride: 1}, false, 6, 5},  // blocks overlap
		{Layout{Count: 2, BlockLen: 1, Stride: 0}, false, 2, 1},  // both elements in one place
		{Layout{Count: 2, BlockLen: 1, Stride: -1}, false, 2, 0}, // backwards
		{Layout{Count: 1, BlockLen: 4, Stride: -100}, true, 4, 4},
		{Layout{Count: 1, BlockLen: 4, Stride: 0}, true, 4, 4},
		{Layout{Count: 0, BlockLen: 4, Stride: -3}, true, 0, 0},
		{Layout{Count: 5, BlockLen: 0, Stride: 0}, true, 0, 0},
		{Layout{Count: 5, BlockLen: 0, Stride: 9}, true, 0, 0},
		{Layout{Count: -1, BlockLen: 4, Stride: 4}, false, -4, 0},
		{Layout{Count: 2, BlockLen: -1, Stride: 4}, false, -2, 0},
		{Layout{Count: 0, BlockLen: 0, Stride: 1}, true, 0, 0}, // not contiguous: zero elements
	}
	for _, c := range cases {
		if got := c.l.valid(); got != c.valid {
			t.Errorf("%+v.valid() = %v, want %v", c.l, got, c.valid)
		}
		if !c.l.valid() {
			continue
		}
		if got := c.l.elems(); got != c.elems {
			t.Errorf("%+v.elems() = %d, want %d", c.l, got, c.elems)
		}
		if got := c.l.extent(); got != c.exten {
			t.Errorf("%+v.extent() = %d, want %d", c.l, got, c.exten)
		}
	}
	if !(Layout{}).Contiguous() || (Layout{Count: 1, BlockLen: 1, Stride: 1}).Contiguous() {
		t.Error("Contiguous() is not exactly the zero layout")
	}
	for _, n := range []int{0, 1, 7} {
		if got, want := (Layout{}).normalize(n), (Layout{Count: 1, BlockLen: n, Stride: n}); got != want {
			t.Errorf("contiguous normalize(%d) = %+v, want %+v", n, got, want)
		}
		l := Layout{Count: 2, BlockLen: 3, Stride: 4}
		if got := l.normalize(n); got != l {
			t.Errorf("%+v.normalize(%d) = %+v, want it unchanged", l, n, got)
		}
	}
	// extent is one past the largest element offset, for every valid layout.
	for cnt := 0; cnt < 5; cnt++ {
		for bl := 0; bl < 5; bl++ {
			for st := -3; st < 9; st++ {
				l := Layout{Count: cnt, BlockLen: bl, Stride: st}
				if !l.valid() || l.Contiguous() {
					continue
				}
				offs := expandLayout(l, l.elems())
				want := 0
				for _, o := range offs {
					want = max(want, o+1)
				}
				if got := l.extent(); got != want {
					t.Errorf("%+v.extent() = %d, want %d", l, got, want)
				}
			}
		}
	}
}

func TestChunkerExamples(t *testing.T) {
	type R = chunkRun
	cases := []struct {
		esz  int
		o, t Layout
		n    int
		want []R
	}{
		{8, Layout{Count: 1, BlockLen: 4, Stride: 4}, Layout{Count: 1, BlockLen: 4, Stride: 4}, 4,
			[]R{{0, 0, 32, true}}},
		{1, Layout{Count: 2, BlockLen: 2, Stride: 3}, Layout{Count: 1, BlockLen: 4, Stride: 4}, 4,
			[]R{{0, 0, 2, false}, {3, 2, 2, true}}},
		{4, Layout{Count: 3, BlockLen: 2, Stride: 4}, Layout{Count: 2, BlockLen: 3, Stride: 5}, 6,
			[]R{{0, 0, 8, false}, {16, 8, 4, false}, {20, 20, 4, false}, {32, 24, 8, true}}},
		{2, Layout{Count: 1, BlockLen: 0, Stride: 0}, Layout{Count: 0, BlockLen: 3, Stride: 3}, 0,
			[]R{{0, 0, 0, true}}},
	}
	for _, c := range cases {
		got := collectRuns(t, c.esz, c.o, c.t, c.n)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("chunker(%d, %+v, %+v, %d) = %v, want %v", c.esz, c.o, c.t, c.n, got, c.want)
		}
		checkChunker(t, c.esz, c.o, c.t, c.n)
	}
}

// TestChunkerDenseBlocks documents that the chunker splits at block
// boundaries even when the blocks are adjacent (Stride == BlockLen): the
// runs are correct and contiguous, but not byte-maximal, so such a layout
// costs one transport call per block.
func TestChunkerDenseBlocks(t *testing.T) {
	o := Layout{Count: 8, BlockLen: 1, Stride: 1}
	tl := Layout{}.normalize(8)
	if m := checkChunker(t, 8, o, tl, 8); m != 7 {
		t.Errorf("got %d mergeable run pairs, want 7", m)
	}
	t.Logf("Layout %+v into a contiguous target: %d runs of one element", o, len(collectRuns(t, 8, o, tl, 8)))
}

func TestChunkerRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	eszs := []int{1, 2, 4, 8}
	merge := 0
	for i := 0; i < 20000; i++ {
		n := r.IntN(48)
		if r.IntN(8) == 0 {
			n = 0
		}
		o := layoutOf(n, r.IntN(64), r.IntN(20)-6)
		tl := layoutOf(n, r.IntN(64), r.IntN(20)-6)
		merge += checkChunker(t, eszs[r.IntN(4)], o, tl, n)
	}
	t.Logf("%d run pairs were contiguous on both sides (dense blocks)", merge)
}

func TestChunkerQuick(t *testing.T) {
	f := func(esz uint8, n uint8, os, og, ts, tg int8) bool {
		e := 1 << (esz % 4)
		nn := int(n % 100)
		o := layoutOf(nn, int(os), int(og))
		tl := layoutOf(nn, int(ts), int(tg))
		checkChunker(t, e, o, tl, nn)
		return !t.Failed()
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
}

func FuzzChunker(f *testing.F) {
	f.Add(uint8(3), uint16(4), int16(0), int16(0), int16(1), int16(2))
	f.Add(uint8(0), uint16(0), int16(1), int16(3), int16(2), int16(-1))
	f.Add(uint8(2), uint16(12), int16(3), int16(2), int16(4), int16(1))
	f.Add(uint8(1), uint16(60), int16(7), int16(4), int16(5), int16(-4))
	f.Add(uint8(0), uint16(97), int16(1), int16(0), int16(0), int16(3))
	f.Fuzz(func(t *testing.T, esz uint8, n uint16, os, og, ts, tg int16) {
		e := 1 << (esz % 4)
		nn := int(n % 1024)
		o := layoutOf(nn, int(os), int(og))
		tl := layoutOf(nn, int(ts), int(tg))
		if !o.valid() || !tl.valid() || o.elems() != nn || tl.elems() != nn {
			t.Fatalf("test bug: layouts %+v %+v for %d elements", o, tl, nn)
		}
		checkChunker(t, e, o, tl, nn)
	})
}

// oneRankWin returns a window of size bytes on a 1-rank communicator, in
// an exclusive lock epoch on itself.
func oneRankWin(t *testing.T, size int) *Win {
	t.Helper()
	c := newComms(t, 1)[0]
	ctx := context.Background()
	w, err := c.Allocate(ctx, size, WinOptions{Strategy: Immediate})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Lock(ctx, true, 0, 0); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestStridedPutGetReference issues random strided Puts and Gets through a
// real window and compares window and buffer contents with the per-element
// reference.
func TestStridedPutGetReference(t *testing.T) {
	const winElems = 256
	w := oneRankWin(t, winElems*8)
	r := rand.New(rand.NewPCG(3, 4))
	types := []mem.Type{mem.Uint8, mem.Int16, mem.Uint32, mem.Float64}
	for i := 0; i < 3000; i++ {
		typ := types[r.IntN(len(types))]
		esz := typ.Size()
		n := r.IntN(24)
		ol := layoutOf(n, r.IntN(64), r.IntN(12)-3)
		tl := layoutOf(n, r.IntN(64), r.IntN(12)-3)
		if r.IntN(4) == 0 {
			ol = Layout{}
		}
		if r.IntN(4) == 0 {
			tl = Layout{}
		}
		oext := ol.normalize(n).extent()
		text := tl.normalize(n).extent()
		if text > winElems {
			continue
		}
		disp := r.IntN(winElems*8 - text*esz + 1)
		buf := make([]byte, oext*esz)
		if ol.Contiguous() {
			buf = make([]byte, n*esz)
		}
		for j := range buf {
			buf[j] = byte(r.Uint32())
		}
		win := w.Memory()
		for j := range win {
			win[j] = byte(r.Uint32())
		}
		before := append([]byte(nil), win...)
		bufBefore := append([]byte(nil), buf...)
		oref := expandLayout(ol.normalize(n), n)
		tref := expandLayout(tl.normalize(n), n)
		kind := KindPut
		if r.IntN(2) == 0 {
			kind = KindGet
		}
		a := Access{Kind: kind, Type: typ, Origin: buf, OLayout: ol, Target: 0, Disp: disp, TLayout: tl}
		if err := w.Do(&a); err != nil {
			t.Fatalf("%v %v n=%d origin %+v target %+v disp %d: %v", kind, typ, n, ol, tl, disp, err)
		}
		// Build the expected state from the element map.
		wantWin := append([]byte(nil), before...)
		wantBuf := append([]byte(nil), bufBefore...)
		for k := 0; k < n; k++ {
			ob, tb := oref[k]*esz, disp+tref[k]*esz
			if kind == KindPut {
				copy(wantWin[tb:tb+esz], bufBefore[ob:ob+esz])
			} else {
				copy(wantBuf[ob:ob+esz], before[tb:tb+esz])
			}
		}
		if string(win) != string(wantWin) || string(buf) != string(wantBuf) {
			t.Fatalf("%v %v n=%d origin %+v target %+v disp %d: result differs from the element reference", kind, typ, n, ol, tl, disp)
		}
	}
}

// TestPrepareOverflowingLayout: a layout whose extent overflows int must be
// refused with an error (the operation must write nothing and must not
// panic). Layout{Count: 1<<24+1, BlockLen: 1, Stride: 1<<40} is valid() and
// its extent() wraps to 1, so it passes the buffer and window bounds checks
// although its second element lies 2^40 elements out.
func TestPrepareOverflowingLayout(t *testing.T) {
	w := oneRankWin(t, 64)
	huge := Layout{Count: 1<<24 + 1, BlockLen: 1, Stride: 1 << 40}
	t.Logf("%+v: valid=%v elems=%d extent=%d", huge, huge.valid(), huge.elems(), huge.extent())
	for _, k := range []Kind{KindPut, KindGet, KindAccumulate} {
		t.Run(k.String(), func(t *testing.T) {
			buf := []byte{1, 2, 3, 4, 5, 6, 7, 8}
			win := w.Memory()
			clear(win)
			a := Access{Kind: k, Type: mem.Int64, Op: mem.Sum, Origin: buf, OLayout: huge, Target: 0, TLayout: huge}
			var err error
			panicked := func() (p any) {
				defer func() { p = recover() }()
				err = w.Do(&a)
				return nil
			}()
			if panicked != nil {
				t.Errorf("Do panicked: %v", panicked)
			} else if !errors.Is(err, ErrLayout) && !errors.Is(err, ErrBounds) {
				t.Errorf("Do = %v, want ErrLayout or ErrBounds", err)
			}
			if k != KindGet && string(win[:8]) != string(make([]byte, 8)) {
				t.Errorf("window written before the error: % x", win[:8])
			}
		})
	}
}

// Indexed and subarray layouts. Their reference is computed from the
// constructor's arguments alone, element by element, independently of the
// Shape's compacted form.

// chooser is a source of choices: a math/rand generator, or the bytes of
// a fuzz input (bytePicker).
type chooser interface{ IntN(n int) int }

// bytePicker takes choices from fuzz input, two bytes each; once the input
// is used up every choice is 0.
type bytePicker struct{ data []byte }

func (b *bytePicker) IntN(n int) int {
	if n <= 1 {
		return 0
	}
	v := 0
	for i := 0; i < 2 && len(b.data) > 0; i++ {
		v = v<<8 | int(b.data[0])
		b.data = b.data[1:]
	}
	return v % n
}

// refIndexed is the element offsets of an indexed layout, blocks in order.
func refIndexed(lens, displs []int) []int {
	var offs []int
	for i, d := range displs {
		for j := 0; j < lens[i]; j++ {
			offs = append(offs, d+j)
		}
	}
	return offs
}

// refSubarray is the element offsets of a row-major subarray: every index
// tuple of the box, last index fastest.
func refSubarray(sizes, subs, starts []int) []int {
	d := len(sizes)
	idx := make([]int, d)
	var offs []int
	for _, s := range subs {
		if s == 0 {
			return nil
		}
	}
	for {
		off := 0
		for k := 0; k < d; k++ {
			off = off*sizes[k] + starts[k] + idx[k]
		}
		offs = append(offs, off)
		k := d - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < subs[k] {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return offs
		}
	}
}

// refLayout is the element offsets of a valid layout without a Shape (the
// contiguous one as n elements).
func refLayout(l Layout, n int) []int {
	if l.Contiguous() {
		l = l.normalize(n)
	}
	return expandLayout(l, l.elems())
}

// testLayout is a layout with its element reference and how it was made.
type testLayout struct {
	l    Layout
	ref  []int
	desc string
}

// splitN splits n into k parts >= 0 (k >= 1).
func splitN(r chooser, n, k int) []int {
	cuts := make([]int, k+1)
	cuts[k] = n
	for i := 1; i < k; i++ {
		cuts[i] = r.IntN(n + 1)
	}
	slices.Sort(cuts[1:k])
	parts := make([]int, k)
	for i := range parts {
		parts[i] = cuts[i+1] - cuts[i]
	}
	return parts
}

// genIndexed makes an indexed layout of exactly n elements: up to 8
// blocks (some empty), in increasing order without overlap if disjoint,
// else anywhere (possibly overlapping, backwards or touching).
func genIndexed(r chooser, n int, disjoint bool) testLayout {
	k := 1 + r.IntN(8)
	lens := splitN(r, n, k)
	displs := make([]int, k)
	pos := r.IntN(4)
	for i := range displs {
		if disjoint {
			displs[i] = pos
			pos += lens[i] + r.IntN(3)*r.IntN(3) // often touching
		} else {
			displs[i] = r.IntN(2*n + 4)
		}
	}
	var l Layout
	desc := fmt.Sprintf("Indexed(%v, %v)", lens, displs)
	if r.IntN(4) == 0 && n%k == 0 {
		// Equal blocks: IndexedBlock.
		for i := range lens {
			lens[i] = n / k
		}
		if disjoint {
			for i := range displs {
				displs[i] = i * (n/k + r.IntN(2))
			}
		}
		l = NewIndexedBlock(n/k, displs)
		desc = fmt.Sprintf("IndexedBlock(%d, %v)", n/k, displs)
	} else {
		l = NewIndexed(lens, displs)
	}
	return testLayout{l, refIndexed(lens, displs), desc}
}

// genSubarray makes a subarray layout of exactly n elements in up to 4
// dimensions: n split into factors, each dimension larger than its
// subsize by 0 to 2 (often taken whole), the box anywhere inside.
func genSubarray(r chooser, n int) testLayout {
	d := 1 + r.IntN(4)
	subs := make([]int, d)
	rest := n
	for k := 0; k < d-1; k++ {
		if rest == 0 {
			subs[k] = r.IntN(3)
			continue
		}
		ds := divisors(rest)
		subs[k] = ds[r.IntN(len(ds))]
		rest /= subs[k]
	}
	subs[d-1] = rest
	if n == 0 {
		subs[r.IntN(d)] = 0
	}
	// Shuffle the dimensions so that any of them carries the remainder.
	for k := d - 1; k > 0; k-- {
		j := r.IntN(k + 1)
		subs[k], subs[j] = subs[j], subs[k]
	}
	sizes := make([]int, d)
	starts := make([]int, d)
	for k := range subs {
		sizes[k] = max(subs[k]+r.IntN(3), 1)
		starts[k] = r.IntN(sizes[k] - subs[k] + 1)
	}
	return testLayout{NewSubarray(sizes, subs, starts), refSubarray(sizes, subs, starts), fmt.Sprintf("Subarray(%v, %v, %v)", sizes, subs, starts)}
}

// genLayout makes a layout of exactly n elements of any kind. Only
// indexed layouts may overlap, and only if disjoint is false.
func genLayout(r chooser, n int, disjoint bool) testLayout {
	switch r.IntN(5) {
	case 0:
		return testLayout{Layout{}, refLayout(Layout{}, n), "Contiguous"}
	case 1:
		l := layoutOf(n, r.IntN(64), r.IntN(20)-6)
		return testLayout{l, refLayout(l, n), l.String()}
	case 2, 3:
		return genIndexed(r, n, disjoint)
	}
	return genSubarray(r, n)
}

// checkShape checks a valid layout's summary (elements, extent, overlap)
// against its reference.
func checkShape(t testing.TB, tl testLayout) {
	t.Helper()
	l := tl.l
	if err := l.Err(); err != nil {
		t.Fatalf("%s: %v", tl.desc, err)
	}
	if l.Contiguous() {
		return
	}
	ext, seen, dup := 0, map[int]bool{}, false
	for _, o := range tl.ref {
		ext = max(ext, o+1)
		dup = dup || seen[o]
		seen[o] = true
	}
	if l.elems() != len(tl.ref) || l.extent() != ext || l.Overlaps() != dup {
		t.Fatalf("%s: elems %d extent %d overlaps %v, want %d, %d, %v", tl.desc, l.elems(), l.extent(), l.Overlaps(), len(tl.ref), ext, dup)
	}
	if s := l.Shape; s != nil {
		// Random access to every block agrees with the reference.
		e := 0
		for b := 0; b < s.nblocks; b++ {
			start, n := s.blockAt(b)
			if n <= 0 {
				t.Fatalf("%s: block %d of %d elements", tl.desc, b, n)
			}
			for j := 0; j < n; j++ {
				if e >= len(tl.ref) || tl.ref[e] != start+j {
					t.Fatalf("%s: block %d (%d at %d) disagrees with the reference at element %d", tl.desc, b, n, start, e)
				}
				e++
			}
		}
		if e != len(tl.ref) {
			t.Fatalf("%s: blocks hold %d elements, want %d", tl.desc, e, len(tl.ref))
		}
	}
}

// checkRuns checks the runs of a chunker over two layouts of n elements,
// normalized as an operation normalizes them, against their references:
// the runs pair origin element i with target element i for every i, each
// is contiguous on both sides, and a run ends only where the next element
// is not adjacent on one side or the other (runs are as long as they can
// be).
func checkRuns(t testing.TB, esz int, o, tl testLayout, n int) {
	t.Helper()
	desc := fmt.Sprintf("esz %d, origin %s, target %s, n %d", esz, o.desc, tl.desc, n)
	if len(o.ref) != n || len(tl.ref) != n {
		t.Fatalf("test bug: %s: references of %d and %d elements", desc, len(o.ref), len(tl.ref))
	}
	runs := collectRuns(t, esz, o.l.normalize(n), tl.l.normalize(n), n)
	if n == 0 {
		if len(runs) != 1 || runs[0] != (chunkRun{0, 0, 0, true}) {
			t.Fatalf("%s: zero-element transfer yielded %+v, want one empty run", desc, runs)
		}
		return
	}
	e := 0
	for k, r := range runs {
		if r.n <= 0 || r.n%esz != 0 || r.last != (k == len(runs)-1) {
			t.Fatalf("%s: run %d of %d: %+v", desc, k, len(runs), r)
		}
		cnt := r.n / esz
		if e+cnt > n {
			t.Fatalf("%s: runs cover more than %d elements", desc, n)
		}
		for j := 0; j < cnt; j++ {
			if r.o+j*esz != o.ref[e+j]*esz || r.t+j*esz != tl.ref[e+j]*esz {
				t.Fatalf("%s: run %d (%+v): element %d at bytes %d/%d, want %d/%d", desc, k, r, e+j, r.o+j*esz, r.t+j*esz, o.ref[e+j]*esz, tl.ref[e+j]*esz)
			}
		}
		e += cnt
		if e < n && o.ref[e] == o.ref[e-1]+1 && tl.ref[e] == tl.ref[e-1]+1 {
			t.Fatalf("%s: run %d (%+v) ends at element %d, which continues on both sides", desc, k, r, e)
		}
	}
	if e != n {
		t.Fatalf("%s: runs cover %d elements, want %d", desc, e, n)
	}
}

func TestIndexedSubarrayExamples(t *testing.T) {
	type R = chunkRun
	cases := []struct {
		name string
		esz  int
		o, t Layout
		n    int
		want []R
	}{
		{"indexed origin, contiguous target", 8, NewIndexed([]int{2, 1, 3}, []int{5, 0, 9}), Layout{}, 6,
			[]R{{40, 0, 16, false}, {0, 16, 8, false}, {72, 24, 24, true}}},
		{"touching blocks move as one", 1, NewIndexed([]int{2, 0, 3, 1}, []int{4, 0, 6, 20}), Layout{}, 6,
			[]R{{4, 0, 5, false}, {20, 5, 1, true}}},
		{"indexed block into a vector", 4, NewIndexedBlock(2, []int{6, 0, 3}), Layout{Count: 2, BlockLen: 3, Stride: 4}, 6,
			[]R{{24, 0, 8, false}, {0, 8, 4, false}, {4, 16, 4, false}, {12, 20, 8, true}}},
		// The face of last index 5 of a 2x3x6 block: 6 single elements.
		{"subarray face", 8, NewSubarray([]int{2, 3, 6}, []int{2, 3, 1}, []int{0, 0, 5}), Layout{}, 6,
			[]R{{40, 0, 8, false}, {88, 8, 8, false}, {136, 16, 8, false}, {184, 24, 8, false}, {232, 32, 8, false}, {280, 40, 8, true}}},
		// The face of first index 1 of a 3x2x2 block: one block at 4.
		{"contiguous subarray face", 1, NewSubarray([]int{3, 2, 2}, []int{1, 2, 2}, []int{1, 0, 0}), Layout{}, 4,
			[]R{{4, 0, 4, true}}},
		// Rows 1..2, columns 1..3 of a 4x5 matrix into rows of 2.
		{"subarray into a vector", 1, NewSubarray([]int{4, 5}, []int{2, 3}, []int{1, 1}), Layout{Count: 3, BlockLen: 2, Stride: 10}, 6,
			[]R{{6, 0, 2, false}, {8, 10, 1, false}, {11, 11, 1, false}, {12, 20, 2, true}}},
		{"empty subarray", 8, NewSubarray([]int{3, 3}, []int{0, 2}, []int{3, 0}), NewIndexed(nil, nil), 0,
			[]R{{0, 0, 0, true}}},
	}
	for _, c := range cases {
		if err := c.o.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := c.t.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := collectRuns(t, c.esz, c.o.normalize(c.n), c.t.normalize(c.n), c.n)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: chunker(%d, %v, %v, %d) = %v, want %v", c.name, c.esz, c.o, c.t, c.n, got, c.want)
		}
	}
}

// TestSubarrayCompaction: the grid of a subarray has no level for
// dimensions of one element or taken whole, and levels that continue each
// other merge; a subarray of many rows holds no list of them.
func TestSubarrayCompaction(t *testing.T) {
	cases := []struct {
		sizes, subs, starts []int
		base, blen          int
		counts, pitches     []int
	}{
		{[]int{4, 5, 6}, []int{4, 5, 6}, []int{0, 0, 0}, 0, 120, nil, nil},
		{[]int{4, 5, 6}, []int{1, 5, 6}, []int{2, 0, 0}, 60, 30, nil, nil},
		{[]int{4, 5, 6}, []int{4, 5, 1}, []int{0, 0, 5}, 5, 1, []int{20}, []int{6}},
		{[]int{4, 5, 6}, []int{4, 1, 6}, []int{0, 3, 0}, 18, 6, []int{4}, []int{30}},
		{[]int{4, 5, 6}, []int{2, 3, 4}, []int{1, 1, 1}, 37, 4, []int{2, 3}, []int{30, 6}},
		{[]int{1 << 20, 1 << 10, 4}, []int{1 << 20, 1 << 10, 2}, []int{0, 0, 1}, 1, 2, []int{1 << 30}, []int{4}},
		{[]int{7}, []int{3}, []int{2}, 2, 3, nil, nil},
	}
	for _, c := range cases {
		l := NewSubarray(c.sizes, c.subs, c.starts)
		s := l.Shape
		if err := l.Err(); err != nil {
			t.Fatal(err)
		}
		if s.base != c.base || s.blen != c.blen || !slices.Equal(s.counts, c.counts) || !slices.Equal(s.pitches, c.pitches) {
			t.Errorf("%v: base %d, blocks of %d, grid %v %v; want %d, %d, %v %v", l, s.base, s.blen, s.counts, s.pitches, c.base, c.blen, c.counts, c.pitches)
		}
		if len(c.subs) < 3 || c.subs[0] < 1<<10 {
			checkShape(t, testLayout{l, refSubarray(c.sizes, c.subs, c.starts), l.String()})
		}
	}
	// Building a subarray of 2^30 rows costs about what one of 6 rows does
	// (its description, whose longer numbers may take another buffer, and
	// its grid), and walking it allocates nothing.
	big := func() Layout {
		return NewSubarray([]int{1 << 20, 1 << 10, 4}, []int{1 << 20, 1 << 10, 2}, []int{0, 0, 1})
	}
	small := func() Layout { return NewSubarray([]int{3, 2, 4}, []int{3, 2, 2}, []int{0, 0, 1}) }
	if a, b := testing.AllocsPerRun(10, func() { _ = big() }), testing.AllocsPerRun(10, func() { _ = small() }); a > b+4 {
		t.Errorf("NewSubarray of 2^30 rows: %v allocations, of 6 rows %v", a, b)
	}
	l := big()
	ch := newChunker(8, l, Layout{}.normalize(l.elems()), l.elems())
	a := testing.AllocsPerRun(10, func() {
		for i := 0; i < 1000; i++ {
			ch.next()
		}
	})
	if a != 0 {
		t.Errorf("walking a subarray allocates %v times per 1000 runs", a)
	}
}

// TestLayoutErrors: invalid arguments make an invalid layout whose Err
// wraps ErrLayout and says what is wrong; no constructor panics.
func TestLayoutErrors(t *testing.T) {
	huge := 1 << 48
	cases := []struct {
		name string
		l    Layout
		want string
	}{
		{"negative length", NewIndexed([]int{1, -1}, []int{0, 4}), "block 1 has length -1"},
		{"negative displacement", NewIndexed([]int{1, 1}, []int{0, -4}), "block 1 at displacement -4"},
		{"mismatched slices", NewIndexed([]int{1, 1}, []int{0}), "2 block lengths for 1 displacements"},
		{"overflowing displacement", NewIndexed([]int{2}, []int{huge - 1}), "outside [0, 2^48]"},
		{"too many elements", NewIndexedBlock(huge/2+1, []int{0, 0}), "more than 2^48"},
		{"negative block length", NewIndexedBlock(-2, nil), "block length -2"},
		{"no dimensions", NewSubarray(nil, nil, nil), "no dimensions"},
		{"mismatched dimensions", NewSubarray([]int{4, 4}, []int{2}, []int{0, 0}), "2 sizes, 1 subsizes and 2 starts"},
		{"zero size", NewSubarray([]int{4, 0}, []int{1, 0}, []int{0, 0}), "size 0 of dimension 1"},
		{"box past the end", NewSubarray([]int{4, 5}, []int{2, 3}, []int{1, 3}), "dimension 1: 3 elements from 3 do not fit in [0, 5)"},
		{"negative start", NewSubarray([]int{4, 5}, []int{2, 3}, []int{-1, 0}), "dimension 0"},
		{"subsize above size", NewSubarray([]int{4}, []int{5}, []int{0}), "dimension 0"},
		{"huge start", NewSubarray([]int{4}, []int{1}, []int{math.MaxInt}), "dimension 0"},
		{"array too large", NewSubarray([]int{1 << 30, 1 << 30}, []int{1, 1}, []int{0, 0}), "more than 2^48"},
		{"product overflows", NewSubarray([]int{math.MaxInt, math.MaxInt, 3}, []int{1, 1, 1}, []int{0, 0, 0}), "more than 2^48"},
		{"vector fields on a shape", Layout{Count: 1, Shape: NewIndexed([]int{1}, []int{0}).Shape}, "Count, BlockLen and Stride"},
		{"overlapping vector", Layout{Count: 2, BlockLen: 3, Stride: 2}, "blocks overlap"},
	}
	for _, c := range cases {
		err := c.l.Err()
		switch {
		case err == nil:
			t.Errorf("%s: %v is valid", c.name, c.l)
		case !errors.Is(err, ErrLayout):
			t.Errorf("%s: %v does not wrap ErrLayout", c.name, err)
		case !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %q does not say %q", c.name, err, c.want)
		}
	}
	// Valid edge cases.
	for _, l := range []Layout{
		NewIndexed(nil, nil), NewIndexed([]int{0, 0}, []int{0, 0}), NewIndexedBlock(0, []int{3, 1}),
		NewIndexedBlock(3, nil), NewSubarray([]int{1}, []int{0}, []int{1}), NewSubarray([]int{1, 1, 1}, []int{1, 1, 1}, []int{0, 0, 0}),
	} {
		if err := l.Err(); err != nil {
			t.Errorf("%v: %v", l, err)
		}
	}
	// The constructors copy their arguments.
	lens, displs := []int{2, 1}, []int{4, 0}
	l := NewIndexed(lens, displs)
	lens[0], displs[1] = 7, 9
	sz, sub, st := []int{4, 5}, []int{2, 2}, []int{1, 1}
	s := NewSubarray(sz, sub, st)
	sz[1], sub[1], st[0] = 9, 9, 0
	checkShape(t, testLayout{l, []int{4, 5, 0}, "Indexed after its slices changed"})
	checkShape(t, testLayout{s, []int{6, 7, 11, 12}, "Subarray after its slices changed"})
	if got := l.String(); got != "Indexed([2 1], [4 0])" {
		t.Errorf("String() = %q", got)
	}
	long := NewIndexedBlock(1, make([]int, 100))
	if got := long.String(); len(got) > 120 || !strings.Contains(got, "(100 in all)") {
		t.Errorf("String() of 100 blocks = %q", got)
	}
	if !long.Overlaps() || l.Overlaps() || s.Overlaps() {
		t.Error("Overlaps() wrong")
	}
}

func TestShapeChunkerRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	eszs := []int{1, 2, 4, 8}
	for i := 0; i < 20000; i++ {
		n := r.IntN(60)
		if r.IntN(10) == 0 {
			n = 0
		}
		o, tl := genLayout(r, n, false), genLayout(r, n, true)
		checkShape(t, o)
		checkShape(t, tl)
		checkRuns(t, eszs[r.IntN(4)], o, tl, n)
	}
}

// FuzzChunkerLayouts drives the generators of every kind of layout with
// the fuzz input and checks the chunker's runs and each layout's summary
// against the element references. Run with
// go test -fuzz FuzzChunkerLayouts ./internal/engine.
func FuzzChunkerLayouts(f *testing.F) {
	f.Add(uint8(3), uint8(12), []byte{2, 0, 3, 1, 4, 0, 0, 5, 9, 1})
	f.Add(uint8(0), uint8(0), []byte{4})
	f.Add(uint8(1), uint8(24), []byte{0, 4, 0, 3, 0, 2, 0, 1, 0, 0, 0, 4, 0, 2, 0, 2, 1, 1, 7, 7})
	f.Add(uint8(2), uint8(120), []byte{0, 4, 0, 3, 0, 3, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 3, 0, 2, 0, 1, 0, 2, 0, 1})
	f.Add(uint8(3), uint8(7), []byte{0, 2, 0, 7, 0, 1, 0, 9, 0, 3, 0, 2})
	f.Fuzz(func(t *testing.T, esz, n uint8, data []byte) {
		r := &bytePicker{data}
		nn := int(n)
		o, tl := genLayout(r, nn, false), genLayout(r, nn, true)
		checkShape(t, o)
		checkShape(t, tl)
		checkRuns(t, 1<<(esz%4), o, tl, nn)
	})
}

// TestShapePutGetReference issues random puts, gets and accumulates with
// layouts of every kind through a real window and compares window and
// buffer with the per-element reference; overlapping layouts are refused
// on the written side and work on the read side.
func TestShapePutGetReference(t *testing.T) {
	const winElems = 160
	w := oneRankWin(t, winElems*8)
	r := rand.New(rand.NewPCG(7, 8))
	types := []mem.Type{mem.Uint8, mem.Int16, mem.Int32, mem.Int64}
	kinds := []Kind{KindPut, KindGet, KindAccumulate, KindGetAccumulate}
	refused := 0
	for i := 0; i < 3000; i++ {
		typ := types[r.IntN(len(types))]
		esz := typ.Size()
		kind := kinds[r.IntN(len(kinds))]
		n := r.IntN(40)
		ol, tl := genLayout(r, n, false), genLayout(r, n, false)
		ext := func(x testLayout) int {
			e := 0
			for _, o := range x.ref {
				e = max(e, o+1)
			}
			return e
		}
		text := ext(tl)
		if text > winElems {
			continue
		}
		disp := r.IntN((winElems-text)*esz+1) / esz * esz
		buf := make([]byte, max(ext(ol), n)*esz)
		res := make([]byte, len(buf))
		for j := range buf {
			buf[j] = byte(r.Uint32())
			res[j] = byte(r.Uint32())
		}
		win := w.Memory()
		for j := range win {
			win[j] = byte(r.Uint32())
		}
		before, bufBefore, resBefore := slices.Clone(win), slices.Clone(buf), slices.Clone(res)
		a := Access{Kind: kind, Type: typ, Op: mem.Bxor, Origin: buf, OLayout: ol.l, Target: 0, Disp: disp, TLayout: tl.l}
		if kind == KindGetAccumulate {
			a.Result = res
		}
		if ol.l.Contiguous() {
			a.Origin = buf[:n*esz]
			if a.Result != nil {
				a.Result = res[:n*esz]
			}
		}
		desc := fmt.Sprintf("%v %v n=%d origin %s target %s disp %d", kind, typ, n, ol.desc, tl.desc, disp)
		err := w.Do(&a)
		oWritten := kind == KindGet || kind == KindGetAccumulate
		if (ol.l.Overlaps() && oWritten) || (tl.l.Overlaps() && kind != KindGet) {
			if !errors.Is(err, ErrLayout) {
				t.Fatalf("%s: %v, want ErrLayout for overlapping blocks written", desc, err)
			}
			if !slices.Equal(win, before) || !slices.Equal(buf, bufBefore) || !slices.Equal(res, resBefore) {
				t.Fatalf("%s: refused, but memory changed", desc)
			}
			refused++
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", desc, err)
		}
		wantWin, wantBuf, wantRes := slices.Clone(before), slices.Clone(bufBefore), slices.Clone(resBefore)
		for k := 0; k < n; k++ {
			ob, tb := ol.ref[k]*esz, disp+tl.ref[k]*esz
			switch kind {
			case KindPut:
				copy(wantWin[tb:tb+esz], bufBefore[ob:ob+esz])
			case KindGet:
				copy(wantBuf[ob:ob+esz], before[tb:tb+esz])
			case KindAccumulate, KindGetAccumulate:
				if kind == KindGetAccumulate {
					copy(wantRes[ob:ob+esz], wantWin[tb:tb+esz])
				}
				for j := 0; j < esz; j++ {
					wantWin[tb+j] ^= bufBefore[ob+j]
				}
			}
		}
		if !slices.Equal(win, wantWin) || !slices.Equal(buf, wantBuf) || !slices.Equal(res, wantRes) {
			t.Fatalf("%s: result differs from the element reference", desc)
		}
	}
	t.Logf("%d operations refused for overlapping written blocks", refused)
}

// TestShapeAllocs: once built, indexed and subarray layouts cost no
// allocation per operation.
func TestShapeAllocs(t *testing.T) {
	w := oneRankWin(t, 4*5*6*8)
	face := NewSubarray([]int{4, 5, 6}, []int{4, 5, 1}, []int{0, 0, 5})
	idx := NewIndexed([]int{3, 1, 4, 1, 5}, []int{0, 10, 20, 30, 40})
	buf := make([]byte, 20*8)
	put := &Access{Kind: KindPut, Type: mem.Int64, Origin: buf, TLayout: face}
	get := &Access{Kind: KindGet, Type: mem.Int64, Origin: buf[:14*8], TLayout: idx}
	acc := &Access{Kind: KindAccumulate, Type: mem.Int64, Op: mem.Sum, Origin: buf, OLayout: NewIndexedBlock(4, []int{16, 0, 8, 4, 12}), TLayout: face}
	for name, a := range map[string]*Access{"put": put, "get": get, "accumulate": acc} {
		if n := allocs(t, name, 200, func() error { return w.Do(a) }); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, n)
		}
	}
}
