package shmem

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/narma-rma/narma"
)

func TestWorld(t *testing.T) {
	run(t, 3, func(ctx context.Context, w *World) error {
		if w.MyPE() != w.Comm().Rank() || w.NPEs() != 3 || w.HeapSize() != 1<<16 {
			return fmt.Errorf("MyPE %d, NPEs %d, HeapSize %d", w.MyPE(), w.NPEs(), w.HeapSize())
		}
		return nil
	})
	runComm(t, 2, func(c *narma.Comm) error {
		ctx := c.Context()
		w, err := Init(ctx, c) // the default heap
		if err != nil {
			return err
		}
		if w.HeapSize() != DefaultHeapSize {
			return fmt.Errorf("HeapSize %d, want %d", w.HeapSize(), DefaultHeapSize)
		}
		return w.Finalize(ctx)
	})
}

// Objects are symmetric (same address everywhere), line-aligned, zeroed,
// and reused after Free; Local, Len, Slice and At address what they say.
func TestAllocLocalSlice(t *testing.T) {
	run(t, 2, func(ctx context.Context, w *World) error {
		a := alloc[int64](ctx, w, 10)
		b := alloc[int8](ctx, w, 3)
		c := alloc[float32](ctx, w, 0)
		offs := []int64{int64(a.off), int64(b.off), int64(c.off)}
		all := make([]int64, 3*w.NPEs())
		if err := narma.Allgather(ctx, w.Comm(), offs, all); err != nil {
			return err
		}
		if !slices.Equal(all[:3], all[3:]) {
			return fmt.Errorf("offsets differ between PEs: %v", all)
		}
		for _, off := range offs {
			if off%lineSize != 0 {
				return fmt.Errorf("object at %d is not line-aligned", off)
			}
		}
		if c.Len() != 0 || len(c.Local(w)) != 0 || b.off == c.off {
			return fmt.Errorf("empty object %v, b %v", c, b)
		}
		la := a.Local(w)
		if len(la) != 10 || cap(la) != 10 || slices.ContainsFunc(la, func(v int64) bool { return v != 0 }) {
			return fmt.Errorf("Local of %v: %v (cap %d)", a, la, cap(la))
		}
		for i := range la {
			la[i] = int64(i)
		}
		s := a.Slice(2, 7)
		if s.Len() != 5 || s.Local(w)[0] != 2 || a.At(9).Local(w)[0] != 9 || s.At(4).Local(w)[0] != 6 {
			return fmt.Errorf("Slice(2,7) = %v: %v", s, s.Local(w))
		}
		if got := s.Slice(1, 3).Local(w); !slices.Equal(got, []int64{3, 4}) {
			return fmt.Errorf("Slice of a Slice: %v", got)
		}
		if s := fmt.Sprint(a.Slice(1, 2)); s != fmt.Sprintf("Sym[int64]{off %d, len 1}", a.off+8) {
			return fmt.Errorf("String: %s", s)
		}
		for _, bad := range []Sym[int64]{a.Slice(-1, 2), a.Slice(3, 2), a.Slice(0, 11), a.At(10), a.Slice(3, 2).At(0)} {
			if bad.Len() != 0 || bad.Local(w) != nil {
				return fmt.Errorf("out-of-range %v: Len %d, Local %v", bad, bad.Len(), bad.Local(w))
			}
		}
		must(w.BarrierAll(ctx)) // nobody reads a any more
		if err := Free(ctx, w, a); err != nil {
			return err
		}
		if a.Local(w) != nil {
			return fmt.Errorf("Local of a freed object: %v", a.Local(w))
		}
		d := alloc[int64](ctx, w, 4) // reuses a's space, zeroed
		if d.off != a.off || !slices.Equal(d.Local(w), make([]int64, 4)) {
			return fmt.Errorf("reused object %v (a was %v): %v", d, a, d.Local(w))
		}
		return nil
	})
}

type celsius float64 // a type defined on an element type

// Put, PutNBI, Get, GetNBI, P and G between all pairs of PEs, on several
// element types, including a defined one.
func TestPutGet(t *testing.T) {
	run(t, 3, func(ctx context.Context, w *World) error {
		me, n := w.MyPE(), w.NPEs()
		x := alloc[int32](ctx, w, 4*n)   // block me of PE pe: from me
		y := alloc[celsius](ctx, w, 2*n) // element me of PE pe: from me
		z := alloc[uint16](ctx, w, n)
		src := make([][]int32, n)
		for pe := 0; pe < n; pe++ {
			src[pe] = []int32{int32(me), int32(pe), int32(me * pe), -1}
			dst := x.Slice(4*me, 4*me+4)
			if pe%2 == 0 {
				must(Put(ctx, w, dst, src[pe], pe))
			} else {
				must(PutNBI(w, dst, src[pe], pe))
			}
			must(P(ctx, w, y.At(me), celsius(me)+0.5, pe))
			must(PutNBI(w, y.At(n+me), []celsius{celsius(pe) + 0.25}, pe))
			must(P(ctx, w, z.At(me), uint16(1000+me), pe))
		}
		must(w.Quiet(ctx)) // completes the NBI puts; src may change now
		for pe := range src {
			src[pe][3] = 99
		}
		must(w.BarrierAll(ctx))
		for pe := 0; pe < n; pe++ {
			if got, want := x.Slice(4*pe, 4*pe+4).Local(w), []int32{int32(pe), int32(me), int32(me * pe), -1}; !slices.Equal(got, want) {
				return fmt.Errorf("PE %d: block from %d is %v, want %v", me, pe, got, want)
			}
			if got := y.Local(w); got[pe] != celsius(pe)+0.5 || got[n+pe] != celsius(me)+0.25 {
				return fmt.Errorf("PE %d: y = %v", me, got)
			}
		}
		// Get, GetNBI and G read every PE's copy.
		for pe := 0; pe < n; pe++ {
			got := make([]int32, 4)
			must(Get(ctx, w, got, x.Slice(4*me, 4*me+4), pe))
			if want := []int32{int32(me), int32(pe), int32(me * pe), -1}; !slices.Equal(got, want) {
				return fmt.Errorf("Get from %d: %v, want %v", pe, got, want)
			}
			nbi := make([]int32, 2)
			must(GetNBI(w, nbi, x.Slice(4*me+1, 4*me+3), pe))
			must(w.Quiet(ctx))
			if nbi[0] != int32(pe) || nbi[1] != int32(me*pe) {
				return fmt.Errorf("GetNBI from %d: %v", pe, nbi)
			}
			if v, err := G(ctx, w, y.At(me), pe); err != nil || v != celsius(me)+0.5 {
				return fmt.Errorf("G(y[%d]) from %d: %v, %v", me, pe, v, err)
			}
			if v, err := G(ctx, w, z.At(pe), pe); err != nil || v != uint16(1000+pe) {
				return fmt.Errorf("G(z[%d]) from %d: %v, %v", pe, pe, v, err)
			}
		}
		// Zero-length transfers are no-ops.
		must(Put(ctx, w, x.Slice(0, 0), nil, (me+1)%n))
		must(Get(ctx, w, nil, x, (me+1)%n))
		return nil
	})
}

// Fence orders a put before a flag: a PE that sees the flag sees the
// data, for every message of a stream.
func TestFence(t *testing.T) {
	run(t, 2, func(ctx context.Context, w *World) error {
		const msgs = 200
		data := alloc[int64](ctx, w, msgs)
		flag := alloc[int64](ctx, w, 1)
		if w.MyPE() == 0 {
			for i := 0; i < msgs; i++ {
				must(PutNBI(w, data.At(i), []int64{int64(i + 1)}, 1))
				must(w.Fence(ctx))
				must(AtomicSet(ctx, w, flag, int64(i+1), 1))
			}
			return nil
		}
		for i := 0; i < msgs; i++ {
			must(WaitUntil(ctx, w, flag, CmpGE, int64(i+1)))
			// The flag says that data.At(i) (at least) is in place.
			v, err := G(ctx, w, data.At(i), 1)
			if err != nil || v != int64(i+1) {
				return fmt.Errorf("message %d: %d, %v", i, v, err)
			}
		}
		return nil
	})
}

// Barrier over subsets: overlapping sets, given in any order, with puts
// before each barrier visible after it to the members.
func TestBarrierSubsets(t *testing.T) {
	run(t, 5, func(ctx context.Context, w *World) error {
		me := w.MyPE()
		x := alloc[int64](ctx, w, 5)
		sets := [][]int{{0, 1, 2, 3, 4}, {3, 1}, {4, 2, 0}, {2}, {1, 2, 3}, {0, 4}}
		for round := 0; round < 20; round++ {
			for si, set := range sets {
				if !slices.Contains(set, me) {
					continue
				}
				// Each member writes its stamp into every member's x[me].
				stamp := int64(round*100 + si*10 + me + 1)
				for _, pe := range set {
					must(PutNBI(w, x.At(me), []int64{stamp}, pe))
				}
				if err := w.Barrier(ctx, set); err != nil {
					return err
				}
				for _, pe := range set {
					want := int64(round*100 + si*10 + pe + 1)
					if got := x.At(pe).Local(w)[0]; got != want {
						return fmt.Errorf("PE %d, round %d, set %v: x[%d] = %d, want %d", me, round, set, pe, got, want)
					}
				}
				// Nobody may overwrite x before the members have read it.
				if err := w.Barrier(ctx, set); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
