package narma_test

// Indexed and subarray layouts through the public API: on both sides of
// puts, gets and accumulates (plain and notified), mixed with vectors and
// contiguous buffers, in every synchronization mode; their argument
// errors; and their independence from the caller's slices.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/narma-rma/narma"
)

// subRef is the element offsets of a row-major subarray, last index
// fastest: the reference the tests compare with.
func subRef(sizes, subs, starts []int) []int {
	n := 1
	for _, s := range subs {
		n *= s
	}
	offs := make([]int, 0, n)
	idx := make([]int, len(sizes))
	for e := 0; e < n; e++ {
		off := 0
		for k := range sizes {
			off = off*sizes[k] + starts[k] + idx[k]
		}
		offs = append(offs, off)
		for k := len(idx) - 1; k >= 0; k-- {
			if idx[k]++; idx[k] < subs[k] {
				break
			}
			idx[k] = 0
		}
	}
	return offs
}

// idxRef is the element offsets of an indexed layout, blocks in order.
func idxRef(lens, displs []int) []int {
	var offs []int
	for i, d := range displs {
		for j := 0; j < lens[i]; j++ {
			offs = append(offs, d+j)
		}
	}
	return offs
}

// vecRef is the element offsets of Vector(count, blockLen, stride).
func vecRef(count, blockLen, stride int) []int {
	var offs []int
	for b := 0; b < count; b++ {
		for j := 0; j < blockLen; j++ {
			offs = append(offs, b*stride+j)
		}
	}
	return offs
}

// box is a subarray of the 4x5x6 block the halo tests use.
type box struct{ subs, starts []int }

var block3 = []int{4, 5, 6}

func (b box) layout() narma.Layout { return narma.Subarray(block3, b.subs, b.starts) }
func (b box) ref() []int           { return subRef(block3, b.subs, b.starts) }

// faces are the six faces of the 4x5x6 block: low and high in each
// dimension.
var faces = []box{
	{[]int{1, 5, 6}, []int{0, 0, 0}}, {[]int{1, 5, 6}, []int{3, 0, 0}},
	{[]int{4, 1, 6}, []int{0, 0, 0}}, {[]int{4, 1, 6}, []int{0, 4, 0}},
	{[]int{4, 5, 1}, []int{0, 0, 0}}, {[]int{4, 5, 1}, []int{0, 0, 5}},
}

// srcVal is element k of rank r's source buffer number s.
func srcVal(r, s, k int) int64 { return int64(1_000_000*(s+1) + r*1000 + k) }

func srcBuf(r, s, n int) []int64 {
	b := make([]int64, n)
	for k := range b {
		b[k] = srcVal(r, s, k)
	}
	return b
}

// TestSubarrayHalo: the faces of a 4x5x6 block read into contiguous
// buffers (GetStrided with a Subarray source), a box read into a box of
// another array (Subarray on both sides), faces written from contiguous
// buffers and from a subarray of another shape, an interior box
// accumulated from a vector, and the written faces read back.
func TestSubarrayHalo(t *testing.T) {
	const n = 3
	xLow := faces[0]
	zHigh := box{[]int{3, 5, 1}, []int{1, 0, 5}}                   // x 1..3: no element of xLow
	yLow := box{[]int{3, 1, 5}, []int{1, 0, 0}}                    // z 0..4: no element of zHigh
	inner := box{[]int{2, 3, 4}, []int{1, 1, 1}}                   // y >= 1, z <= 4: none of the above
	other := narma.Subarray([]int{5, 5}, []int{3, 5}, []int{2, 0}) // 15 of a 5x5 matrix
	otherRef := subRef([]int{5, 5}, []int{3, 5}, []int{2, 0})
	forModes(t, func(t *testing.T, md mode, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			left, right := (me+n-1)%n, (me+1)%n
			w, err := allocPattern(c, 4*5*6, st)
			if err != nil {
				return err
			}
			k := newChecks(c)
			e := newEpoch(ctx, w, md, []int{min(left, right), max(left, right)}, []int{min(left, right), max(left, right)})

			// Epoch 1: read left's block (nobody writes in it).
			got := make([][]int64, len(faces))
			in3 := make([]int64, 3*4*5)
			for i := range in3 {
				in3[i] = -7
			}
			in3L := narma.Subarray([]int{3, 4, 5}, []int{2, 3, 4}, []int{1, 1, 1})
			if err := e.begin(); err != nil {
				return err
			}
			for f, fc := range faces {
				got[f] = make([]int64, len(fc.ref()))
				k.ok(fmt.Sprintf("GetStrided face %d", f), w.GetStrided(got[f], narma.Contiguous, left, 0, fc.layout()))
			}
			k.ok("GetStrided box to box", w.GetStrided(in3, in3L, left, 0, inner.layout()))
			if err := e.end(); err != nil {
				return err
			}
			for f, fc := range faces {
				for i, off := range fc.ref() {
					if want := pattern(left, off); got[f][i] != want {
						k.errorf("face %d element %d = %d, want %d (window element %d)", f, i, got[f][i], want, off)
						break
					}
				}
			}
			inRef := subRef([]int{3, 4, 5}, []int{2, 3, 4}, []int{1, 1, 1})
			want3 := make([]int64, len(in3))
			for i := range want3 {
				want3[i] = -7
			}
			for i, off := range inner.ref() {
				want3[inRef[i]] = pattern(left, off)
			}
			if !slices.Equal(in3, want3) {
				k.errorf("box to box: %v, want %v", in3, want3)
			}

			// Epoch 2: write right's block.
			s0 := srcBuf(me, 0, 30)
			s1 := srcBuf(me, 1, 15)
			s2 := srcBuf(me, 2, 25) // a 5x5 matrix, rows 2..4 go
			s3 := srcBuf(me, 3, 6*5)
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if err := e.begin(); err != nil {
				return err
			}
			k.ok("PutStrided contiguous to face", w.PutStrided(s0, narma.Contiguous, right, 0, xLow.layout()))
			k.ok("PutStrided contiguous to part face", w.PutStrided(s1, narma.Contiguous, right, 0, zHigh.layout()))
			k.ok("PutStrided subarray to subarray", w.PutStrided(s2, other, right, 0, yLow.layout()))
			k.ok("AccumulateStrided vector to subarray", w.AccumulateStrided(s3, narma.Vector(6, 4, 5), right, 0, inner.layout(), narma.Sum))
			if err := e.end(); err != nil {
				return err
			}
			want := make([]int64, 4*5*6)
			for i := range want {
				want[i] = pattern(me, i)
			}
			for i, off := range xLow.ref() {
				want[off] = srcVal(left, 0, i)
			}
			for i, off := range zHigh.ref() {
				want[off] = srcVal(left, 1, i)
			}
			for i, off := range yLow.ref() {
				want[off] = srcVal(left, 2, otherRef[i])
			}
			vr := vecRef(6, 4, 5)
			for i, off := range inner.ref() {
				want[off] += srcVal(left, 3, vr[i])
			}
			if err := barrierThen(c, func() error {
				if !slices.Equal(w.Local(), want) {
					return fmt.Errorf("window %v, want %v", w.Local(), want)
				}
				return nil
			}); err != nil {
				k.errorf("%v", err)
			}

			// Epoch 3: read the written face back from right.
			back := make([]int64, 30)
			if err := e.begin(); err != nil {
				return err
			}
			k.ok("GetStrided face back", w.GetStrided(back, narma.Contiguous, right, 0, xLow.layout()))
			if err := e.end(); err != nil {
				return err
			}
			if err := e.finish(); err != nil {
				return err
			}
			if !slices.Equal(back, s0) {
				k.errorf("face read back %v, want %v", back, s0)
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			return k.err()
		})
	})
}

// TestIndexedLayouts: an indexed gather of irregular blocks in no
// particular order, a get into an indexed destination, a get whose
// source blocks overlap, a vector origin put into indexed target blocks,
// an overlapping indexed origin put into an IndexedBlock target, and an
// accumulate indexed on both sides.
func TestIndexedLayouts(t *testing.T) {
	const n, size = 3, 64
	gLens, gDispls := []int{3, 1, 0, 5, 2}, []int{40, 2, 9, 20, 0}
	pLens, pDispls := []int{3, 1, 4}, []int{30, 0, 12}
	oLens, oDispls := []int{3, 3}, []int{0, 1}
	bDispls := []int{40, 44, 50}
	aDispls := []int{4, 3, 2, 1, 0}
	tLens, tDispls := []int{2, 3}, []int{20, 25}
	forModes(t, func(t *testing.T, md mode, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			left, right := (me+n-1)%n, (me+1)%n
			w, err := allocPattern(c, size, st)
			if err != nil {
				return err
			}
			k := newChecks(c)
			peers := []int{min(left, right), max(left, right)}
			e := newEpoch(ctx, w, md, peers, peers)

			// Epoch 1: gets from left.
			gather := make([]int64, 11)
			scatter := make([]int64, 12)
			for i := range scatter {
				scatter[i] = -4
			}
			twice := make([]int64, 6)
			if err := e.begin(); err != nil {
				return err
			}
			k.ok("GetStrided indexed gather", w.GetStrided(gather, narma.Contiguous, left, 0, narma.Indexed(gLens, gDispls)))
			k.ok("GetStrided into indexed", w.GetStrided(scatter, narma.Indexed([]int{2, 2, 2}, []int{10, 0, 5}), left, 1, narma.Vector(3, 2, 4)))
			k.ok("GetStrided overlapping source", w.GetStrided(twice, narma.Contiguous, left, 0, narma.Indexed([]int{3, 3}, []int{4, 5})))
			if err := e.end(); err != nil {
				return err
			}
			for i, off := range idxRef(gLens, gDispls) {
				if want := pattern(left, off); gather[i] != want {
					k.errorf("gather[%d] = %d, want %d", i, gather[i], want)
				}
			}
			wantScatter := make([]int64, 12)
			for i := range wantScatter {
				wantScatter[i] = -4
			}
			vr := vecRef(3, 2, 4)
			for i, off := range idxRef([]int{2, 2, 2}, []int{10, 0, 5}) {
				wantScatter[off] = pattern(left, 1+vr[i])
			}
			if !slices.Equal(scatter, wantScatter) {
				k.errorf("get into indexed: %v, want %v", scatter, wantScatter)
			}
			for i, off := range []int{4, 5, 6, 5, 6, 7} {
				if want := pattern(left, off); twice[i] != want {
					k.errorf("overlapping source: [%d] = %d, want %d", i, twice[i], want)
				}
			}

			// Epoch 2: writes to right, in disjoint parts of its window.
			s0 := srcBuf(me, 0, 12)
			s1 := srcBuf(me, 1, 4)
			s2 := srcBuf(me, 2, 5)
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if err := e.begin(); err != nil {
				return err
			}
			k.ok("PutStrided vector to indexed", w.PutStrided(s0, narma.Vector(4, 2, 3), right, 0, narma.Indexed(pLens, pDispls)))
			k.ok("PutStrided overlapping origin", w.PutStrided(s1, narma.Indexed(oLens, oDispls), right, 0, narma.IndexedBlock(2, bDispls)))
			k.ok("AccumulateStrided indexed to indexed", w.AccumulateStrided(s2, narma.IndexedBlock(1, aDispls), right, 0, narma.Indexed(tLens, tDispls), narma.Sum))
			if err := e.end(); err != nil {
				return err
			}
			if err := e.finish(); err != nil {
				return err
			}
			want := make([]int64, size)
			for i := range want {
				want[i] = pattern(me, i)
			}
			pv := vecRef(4, 2, 3)
			for i, off := range idxRef(pLens, pDispls) {
				want[off] = srcVal(left, 0, pv[i])
			}
			ov := idxRef(oLens, oDispls)
			for i, off := range idxRef([]int{2, 2, 2}, bDispls) {
				want[off] = srcVal(left, 1, ov[i])
			}
			for i, off := range idxRef(tLens, tDispls) {
				want[off] += srcVal(left, 2, aDispls[i])
			}
			if err := barrierThen(c, func() error {
				if !slices.Equal(w.Local(), want) {
					return fmt.Errorf("window %v, want %v", w.Local(), want)
				}
				return nil
			}); err != nil {
				k.errorf("%v", err)
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			return k.err()
		})
	})
}

// TestLayoutNotify: notified puts, gets and accumulates with subarray and
// indexed layouts; the target matches the notices and finds the data in
// place.
func TestLayoutNotify(t *testing.T) {
	const n, tag = 2, 7
	face := faces[5]
	idxT := narma.Indexed([]int{2, 3}, []int{96, 108}) // no element of face
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			left, right := (me+n-1)%n, (me+1)%n
			w, err := allocPattern(c, 4*5*6, st)
			if err != nil {
				return err
			}
			k := newChecks(c)
			req, err := w.NotifyInit(left, tag, 3)
			if err != nil {
				return err
			}
			if err := req.Start(); err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			s0 := srcBuf(me, 0, 20)
			s1 := srcBuf(me, 1, 5)
			got := make([]int64, 15)
			gotL := narma.Subarray([]int{3, 5}, []int{1, 5}, []int{1, 0}) // row 1 of a 3x5 matrix
			if err := w.LockAll(ctx, 0); err != nil {
				return err
			}
			k.ok("PutStridedNotify", w.PutStridedNotify(s0, narma.Contiguous, right, 0, face.layout(), narma.Tag(tag)))
			k.ok("AccumulateStridedNotify", w.AccumulateStridedNotify(s1, narma.IndexedBlock(1, []int{4, 3, 2, 1, 0}), right, 0, idxT, narma.Sum, narma.Tag(tag)))
			k.ok("GetStridedNotify", w.GetStridedNotify(got, gotL, right, 0, narma.Indexed([]int{3, 2}, []int{60, 42}), narma.Tag(tag)))
			if err := w.UnlockAll(ctx); err != nil {
				return err
			}
			if _, err := req.Wait(ctx); err != nil {
				return err
			}
			loc := w.Local()
			for i, off := range face.ref() {
				if want := srcVal(left, 0, i); loc[off] != want {
					k.errorf("face element %d (window %d) = %d when the notices are matched, want %d", i, off, loc[off], want)
				}
			}
			for i, off := range idxRef([]int{2, 3}, []int{96, 108}) {
				if want := pattern(me, off) + srcVal(left, 1, 4-i); loc[off] != want {
					k.errorf("accumulated window %d = %d, want %d", off, loc[off], want)
				}
			}
			wantGot := make([]int64, 15)
			for i, off := range []int{60, 61, 62, 42, 43} {
				wantGot[5+i] = pattern(right, off)
			}
			if !slices.Equal(got, wantGot) {
				k.errorf("GetStridedNotify into a row: %v, want %v", got, wantGot)
			}
			if err := req.Free(); err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			return k.err()
		})
	})
}

// TestLayoutArgumentErrors: invalid indexed and subarray layouts, and
// layouts that do not fit their buffers or each other, are refused by the
// call that uses them, with an error wrapping ErrLayout (ErrBounds for
// the target window) that names the call; nothing is written, nothing
// panics.
func TestLayoutArgumentErrors(t *testing.T) {
	const n, size = 2, 32
	type errCase struct {
		name, call string
		want       error
		do         func(w *narma.Win[int64], t int, buf []int64) error
	}
	six := []int64{1, 2, 3, 4, 5, 6}
	cont := narma.Contiguous
	cases := []errCase{
		{"negative block length", "Put", narma.ErrLayout, func(w *narma.Win[int64], t int, _ []int64) error {
			return w.PutStrided(six[:2], cont, t, 0, narma.Indexed([]int{3, -1}, []int{0, 5}))
		}},
		{"negative displacement at the origin", "Put", narma.ErrLayout, func(w *narma.Win[int64], t int, _ []int64) error {
			return w.PutStrided(six, narma.Indexed([]int{1, 1}, []int{-1, 2}), t, 0, narma.Vector(2, 1, 2))
		}},
		{"mismatched indexed slices", "Get", narma.ErrLayout, func(w *narma.Win[int64], t int, buf []int64) error {
			return w.GetStrided(buf[:2], cont, t, 0, narma.Indexed([]int{1, 1}, []int{0, 2, 4}))
		}},
		{"negative IndexedBlock length", "Put", narma.ErrLayout, func(w *narma.Win[int64], t int, _ []int64) error {
			return w.PutStrided(six, cont, t, 0, narma.IndexedBlock(-3, []int{0, 4}))
		}},
		{"indexed overflow", "Put", narma.ErrLayout, func(w *narma.Win[int64], t int, _ []int64) error {
			return w.PutStrided(six[:2], cont, t, 0, narma.Indexed([]int{1, 1}, []int{0, 1<<62 + 5}))
		}},
		{"subarray out of its array", "Accumulate", narma.ErrLayout, func(w *narma.Win[int64], t int, _ []int64) error {
			return w.AccumulateStrided(six, cont, t, 0, narma.Subarray([]int{4, 4}, []int{2, 3}, []int{0, 2}), narma.Sum)
		}},
		{"subarray of mismatched dimensions", "PutNotify", narma.ErrLayout, func(w *narma.Win[int64], t int, _ []int64) error {
			return w.PutStridedNotify(six, narma.Subarray([]int{2, 3}, []int{2, 3}, []int{0}), t, 0, cont, narma.Tag(1))
		}},
		{"subarray without dimensions", "Get", narma.ErrLayout, func(w *narma.Win[int64], t int, buf []int64) error {
			return w.GetStrided(buf[:1], narma.Subarray(nil, nil, nil), t, 0, cont)
		}},
		{"subarray of a zero size", "Put", narma.ErrLayout, func(w *narma.Win[int64], t int, _ []int64) error {
			return w.PutStrided(six[:0], cont, t, 0, narma.Subarray([]int{0, 3}, []int{0, 3}, []int{0, 0}))
		}},
		{"subarray overflow", "Put", narma.ErrLayout, func(w *narma.Win[int64], t int, _ []int64) error {
			return w.PutStrided(six[:1], cont, t, 0, narma.Subarray([]int{1 << 40, 1 << 40}, []int{1, 1}, []int{0, 0}))
		}},
		{"vector fields set on an indexed layout", "Put", narma.ErrLayout, func(w *narma.Win[int64], t int, _ []int64) error {
			l := narma.Indexed([]int{2}, []int{0})
			l.Stride = 4
			return w.PutStrided(six[:2], cont, t, 0, l)
		}},
		{"overlapping put target", "Put", narma.ErrLayout, func(w *narma.Win[int64], t int, _ []int64) error {
			return w.PutStrided(six[:4], cont, t, 0, narma.Indexed([]int{2, 2}, []int{4, 5}))
		}},
		{"overlapping accumulate target", "AccumulateNotify", narma.ErrLayout, func(w *narma.Win[int64], t int, _ []int64) error {
			return w.AccumulateStridedNotify(six[:2], cont, t, 0, narma.IndexedBlock(1, []int{3, 3}), narma.Sum, narma.Tag(2))
		}},
		{"overlapping get destination", "Get", narma.ErrLayout, func(w *narma.Win[int64], t int, buf []int64) error {
			return w.GetStrided(buf, narma.Indexed([]int{2, 2}, []int{0, 1}), t, 0, cont)
		}},
		{"element counts differ", "Put", narma.ErrLayout, func(w *narma.Win[int64], t int, _ []int64) error {
			return w.PutStrided(six, narma.Indexed([]int{2, 3}, []int{0, 3}), t, 0, narma.Subarray([]int{4, 4}, []int{2, 3}, []int{0, 0}))
		}},
		{"indexed origin beyond its buffer", "Put", narma.ErrLayout, func(w *narma.Win[int64], t int, _ []int64) error {
			return w.PutStrided(six, narma.Indexed([]int{2}, []int{5}), t, 0, cont)
		}},
		{"subarray destination beyond its buffer", "Get", narma.ErrLayout, func(w *narma.Win[int64], t int, buf []int64) error {
			return w.GetStrided(buf, narma.Subarray([]int{3, 3}, []int{1, 2}, []int{2, 1}), t, 0, narma.Vector(1, 2, 2))
		}},
		{"subarray target beyond the window", "Put", narma.ErrBounds, func(w *narma.Win[int64], t int, _ []int64) error {
			return w.PutStrided(six[:2], cont, t, 0, narma.Subarray([]int{8, 5}, []int{1, 2}, []int{6, 3}))
		}},
		{"indexed target beyond the window from disp", "Accumulate", narma.ErrBounds, func(w *narma.Win[int64], t int, _ []int64) error {
			return w.AccumulateStrided(six[:3], cont, t, 20, narma.Indexed([]int{1, 2}, []int{12, 0}), narma.Sum)
		}},
	}
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			right := (me + 1) % n
			w, err := allocPattern(c, size, st)
			if err != nil {
				return err
			}
			k := newChecks(c)
			if err := w.Fence(ctx, narma.NoPrecede); err != nil {
				return err
			}
			for _, ec := range cases {
				buf := []int64{-9, -9, -9, -9, -9}
				err := func() (err error) {
					defer func() {
						if p := recover(); p != nil {
							err = fmt.Errorf("panicked: %v", p)
						}
					}()
					return ec.do(w, right, buf)
				}()
				k.is(ec.name, err, ec.want, ec.call)
				if !slices.Equal(buf, []int64{-9, -9, -9, -9, -9}) {
					k.errorf("%s: origin buffer written: %v", ec.name, buf)
				}
			}
			if err := w.Fence(ctx, narma.NoSucceed); err != nil {
				return err
			}
			if err := barrierThen(c, func() error { return checkPattern(w.Local(), me) }); err != nil {
				k.errorf("%v", err)
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			return k.err()
		})
	})
}

// TestLayoutErr: Err reports the problem of an invalid layout where it is
// built, wrapping ErrLayout, and nil for valid ones; String shows the
// constructor and its arguments.
func TestLayoutErr(t *testing.T) {
	bad := map[string]narma.Layout{
		"block 0 has length -2": narma.Indexed([]int{-2}, []int{0}),
		"1 block lengths for 2": narma.Indexed([]int{1}, []int{0, 1}),
		"dimension 1":           narma.Subarray([]int{3, 3}, []int{1, 2}, []int{0, 2}),
		"no dimensions":         narma.Subarray(nil, nil, nil),
		"blocks overlap":        narma.Vector(3, 2, 1),
		"block count -1":        narma.Vector(-1, 1, 1),
	}
	l := narma.IndexedBlock(1, []int{0})
	l.Count = 1 // not for a layout of Indexed
	bad["Count, BlockLen and Stride set"] = l
	for want, l := range bad {
		err := l.Err()
		if !errors.Is(err, narma.ErrLayout) || !strings.Contains(err.Error(), want) {
			t.Errorf("%v.Err() = %v, want an ErrLayout saying %q", l, err, want)
		}
	}
	for _, l := range []narma.Layout{
		narma.Contiguous, narma.Vector(3, 2, 4), narma.Indexed(nil, nil), narma.Indexed([]int{2, 0, 1}, []int{5, 0, 0}),
		narma.IndexedBlock(2, []int{0, 1}), narma.Subarray([]int{4, 5, 6}, []int{0, 5, 6}, []int{4, 0, 0}),
	} {
		if err := l.Err(); err != nil {
			t.Errorf("%v.Err() = %v", l, err)
		}
	}
	if !narma.IndexedBlock(2, []int{0, 1}).Overlaps() || narma.Indexed([]int{2, 2}, []int{2, 0}).Overlaps() || narma.Vector(2, 1, 1).Overlaps() {
		t.Error("Overlaps is wrong")
	}
	for l, want := range map[narma.Layout]string{
		narma.Contiguous:                                               "Contiguous",
		narma.Vector(4, 1, 6):                                          "Vector(4, 1, 6)",
		narma.Indexed([]int{2, 1}, []int{5, 0}):                        "Indexed([2 1], [5 0])",
		narma.IndexedBlock(3, []int{9, 0}):                             "IndexedBlock(3, [9 0])",
		narma.Subarray([]int{4, 5, 6}, []int{4, 5, 1}, []int{0, 0, 5}): "Subarray([4 5 6], [4 5 1], [0 0 5])",
	} {
		if got := l.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
	// Layouts stay comparable values: copies are equal, equal vectors are
	// equal, two subarrays built apart are not, the contiguous layout is
	// the zero one.
	args := [][]int{{2, 2}, {1, 1}, {0, 0}}
	s, s2 := narma.Subarray(args[0], args[1], args[2]), narma.Subarray(args[0], args[1], args[2])
	cp := s
	v1, v2 := narma.Vector(1, 2, 3), narma.Vector(1, 2, 3)
	if cp != s || s == s2 || s == narma.Contiguous || (narma.Layout{}) != narma.Contiguous || v1 != v2 {
		t.Error("Layout comparisons are wrong")
	}
}

// TestLayoutSlicesReused: a layout owns copies of the slices it was built
// from: operations queued by a deferred epoch move the elements the
// layout described at the call, whatever the caller does to its slices
// afterwards.
func TestLayoutSlicesReused(t *testing.T) {
	const n, size = 2, 40
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx := c.Context()
			me := c.Rank()
			right, left := (me+1)%n, (me+n-1)%n
			w, err := allocPattern(c, size, st)
			if err != nil {
				return err
			}
			k := newChecks(c)
			lens, displs := []int{2, 3}, []int{10, 0}
			sizes, subs, starts := []int{4, 5}, []int{2, 2}, []int{1, 1}
			if err := w.Lock(ctx, narma.Exclusive, right, 0); err != nil {
				return err
			}
			src := srcBuf(me, 0, 5)
			k.ok("PutStrided indexed", w.PutStrided(src, narma.Contiguous, right, 0, narma.Indexed(lens, displs)))
			sub := narma.Subarray(sizes, subs, starts)
			lens[0], displs[0], displs[1] = 5, 30, 35
			sizes[1], subs[0], starts[0] = 8, 1, 3
			k.ok("PutStrided subarray", w.PutStrided(srcBuf(me, 1, 4), narma.Contiguous, right, 20, sub))
			if err := w.Unlock(ctx, right); err != nil {
				return err
			}
			want := make([]int64, size)
			for i := range want {
				want[i] = pattern(me, i)
			}
			for i, off := range []int{10, 11, 0, 1, 2} {
				want[off] = srcVal(left, 0, i)
			}
			for i, off := range subRef([]int{4, 5}, []int{2, 2}, []int{1, 1}) {
				want[20+off] = srcVal(left, 1, i)
			}
			if err := barrierThen(c, func() error {
				if !slices.Equal(w.Local(), want) {
					return fmt.Errorf("window %v, want %v", w.Local(), want)
				}
				return nil
			}); err != nil {
				k.errorf("%v", err)
			}
			if err := w.Free(ctx); err != nil {
				return err
			}
			return k.err()
		})
	})
}

// TestLayoutAllocs: once built, indexed and subarray layouts cost no
// allocation per call, with either strategy (deferred queues reused).
func TestLayoutAllocs(t *testing.T) {
	skipOnAsync(t)
	if testing.Short() {
		t.Skip("allocation counts need a quiet run")
	}
	face := narma.Subarray(block3, []int{4, 5, 1}, []int{0, 0, 5})
	idx := narma.IndexedBlock(4, []int{16, 0, 8, 4, 12})
	for _, st := range strategies {
		t.Run(st.String(), func(t *testing.T) {
			runLocal(t, 2, func(c *narma.Comm) error {
				ctx := c.Context()
				w, err := narma.Allocate[int64](ctx, c, 4*5*6, narma.WithStrategy(st))
				if err != nil {
					return err
				}
				if c.Rank() == 0 {
					if err := w.Lock(ctx, narma.Shared, 1, 0); err != nil {
						return err
					}
					src := make([]int64, 20)
					var callErr error
					f := func() {
						if callErr == nil {
							callErr = w.PutStrided(src, idx, 1, 0, face)
						}
						if callErr == nil {
							callErr = w.AccumulateStrided(src, narma.Contiguous, 1, 0, face, narma.Sum)
						}
						if callErr == nil {
							callErr = w.Flush(ctx, 1)
						}
					}
					f()
					if a := testing.AllocsPerRun(100, f); a != 0 {
						t.Errorf("PutStrided, AccumulateStrided and Flush with subarray and indexed layouts: %.1f allocations", a)
					}
					if callErr != nil {
						return callErr
					}
					if err := w.Unlock(ctx, 1); err != nil {
						return err
					}
				}
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				return w.Free(ctx)
			})
		})
	}
}
