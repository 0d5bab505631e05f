package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
