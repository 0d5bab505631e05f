package shmem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/narma-rma/narma"
)

// Puts, gets and atomics on a context of the team of World PEs 1, 3, 5
// name their targets by team PE, and land on the right World PE.
func TestCtxTeamRelative(t *testing.T) {
	run(t, 6, func(ctx context.Context, w *World) error {
		me := w.MyPE()
		odd, err := w.TeamWorld().SplitStrided(ctx, 1, 2, 3) // team PE k is World PE 2k+1
		if err != nil {
			return err
		}
		buf := alloc[int64](ctx, w, 3)
		got := alloc[int64](ctx, w, 3)
		ctr := alloc[int64](ctx, w, 8)
		sig := alloc[uint64](ctx, w, 1)
		if odd != nil {
			cx, err := odd.CreateCtx(CtxSerialized)
			if err != nil {
				return err
			}
			if cx.Team() != odd || cx.Options() != CtxSerialized {
				return errors.New("Team or Options of a context")
			}
			k := odd.MyPE()
			next, prev := (k+1)%3, (k+2)%3
			// Team PE k puts its World PE into slot k of team PE k+1.
			if err := CtxPut(ctx, cx, buf.At(k), []int64{int64(me)}, next); err != nil {
				return err
			}
			// And adds me+1 to ctr[0] of team PE 0 (World PE 1), 10*(me+1)
			// to ctr[1] of team PE 2 (World PE 5).
			if err := CtxAtomicAdd(ctx, cx, ctr.At(0), int64(me+1), 0); err != nil {
				return err
			}
			if _, err := CtxAtomicFetchAdd(ctx, cx, ctr.At(1), int64(10*(me+1)), 2); err != nil {
				return err
			}
			// A signal to team PE next, and one word with it.
			if err := CtxPutSignal(ctx, cx, got.At(0), []int64{int64(100 + me)}, sig, 1, SignalAdd, next); err != nil {
				return err
			}
			if _, err := SignalWaitUntil(ctx, w, sig, CmpEQ, 1); err != nil {
				return err
			}
			// From World PE 2*prev+1.
			if g := got.Local(w)[0]; g != int64(100+2*prev+1) {
				return fmt.Errorf("PE %d: signalled word %d, want %d", me, g, 100+2*prev+1)
			}
			if err := odd.Barrier(ctx); err != nil {
				return err
			}
			// Team PE next holds this PE's World PE in slot k: read it back,
			// with G and with a nonblocking Get completed by Quiet.
			v, err := CtxG(ctx, cx, buf.At(k), next)
			if err != nil {
				return err
			}
			if v != int64(me) {
				return fmt.Errorf("PE %d: CtxG of slot %d on team PE %d: %d", me, k, next, v)
			}
			all := make([]int64, 3)
			if err := CtxGetNBI(cx, all, buf, prev); err != nil {
				return err
			}
			if err := cx.Quiet(ctx); err != nil {
				return err
			}
			// Team PE prev got from team PE prev-1 = next, World PE 2*next+1.
			want := []int64{0, 0, 0}
			want[next] = int64(2*next + 1)
			if !slices.Equal(all, want) {
				return fmt.Errorf("PE %d: CtxGetNBI from team PE %d: %v, want %v", me, prev, all, want)
			}
			one := make([]int64, 1)
			if err := CtxGet(ctx, cx, one, buf.At(next), prev); err != nil {
				return err
			}
			if one[0] != int64(2*next+1) {
				return fmt.Errorf("PE %d: CtxGet: %d, want %d", me, one[0], 2*next+1)
			}
			// The atomics, each on this PE's own words ctr[2..7] of team PE
			// next, with the values worked out by hand.
			base := int64(me)
			dst := func(i int) Sym[int64] { return ctr.At(i) }
			must(CtxAtomicSet(ctx, cx, dst(2), base, next))
			if old, err := CtxAtomicSwap(ctx, cx, dst(2), 7, next); err != nil || old != base {
				return fmt.Errorf("CtxAtomicSwap: %d, %v", old, err)
			}
			if old, err := CtxAtomicCompareSwap(ctx, cx, dst(2), 7, 9, next); err != nil || old != 7 {
				return fmt.Errorf("CtxAtomicCompareSwap: %d, %v", old, err)
			}
			if old, err := CtxAtomicCompareSwap(ctx, cx, dst(2), 7, 11, next); err != nil || old != 9 {
				return fmt.Errorf("failing CtxAtomicCompareSwap: %d, %v", old, err)
			}
			must(CtxAtomicInc(ctx, cx, dst(2), next)) // 10
			if old, err := CtxAtomicFetchInc(ctx, cx, dst(2), next); err != nil || old != 10 {
				return fmt.Errorf("CtxAtomicFetchInc: %d, %v", old, err)
			}
			must(CtxAtomicSet(ctx, cx, dst(3), 0b1100, next))
			must(CtxAtomicAnd(ctx, cx, dst(3), 0b0110, next)) // 0b0100
			if old, err := CtxAtomicFetchAnd(ctx, cx, dst(3), 0b0101, next); err != nil || old != 0b0100 {
				return fmt.Errorf("CtxAtomicFetchAnd: %b, %v", old, err)
			}
			must(CtxAtomicOr(ctx, cx, dst(3), 0b0001, next)) // 0b0101
			if old, err := CtxAtomicFetchOr(ctx, cx, dst(3), 0b1000, next); err != nil || old != 0b0101 {
				return fmt.Errorf("CtxAtomicFetchOr: %b, %v", old, err)
			}
			must(CtxAtomicXor(ctx, cx, dst(3), 0b0011, next)) // 0b1110
			if old, err := CtxAtomicFetchXor(ctx, cx, dst(3), 0b1111, next); err != nil || old != 0b1110 {
				return fmt.Errorf("CtxAtomicFetchXor: %b, %v", old, err)
			}
			if v, err := CtxAtomicFetch(ctx, cx, dst(3), next); err != nil || v != 0b0001 {
				return fmt.Errorf("CtxAtomicFetch: %b, %v", v, err)
			}
			if v, err := CtxAtomicFetch(ctx, cx, dst(2), next); err != nil || v != 11 {
				return fmt.Errorf("CtxAtomicFetch: %d, %v", v, err)
			}
			if err := cx.Destroy(ctx); err != nil {
				return err
			}
		}
		if err := w.BarrierAll(ctx); err != nil {
			return err
		}
		// The sums landed on World PEs 1 and 5: (2+4+6) and 10*(2+4+6).
		wantCtr := map[int][2]int64{1: {12, 0}, 5: {0, 120}}[me]
		if c := ctr.Local(w); c[0] != wantCtr[0] || c[1] != wantCtr[1] {
			return fmt.Errorf("PE %d: counters %v, want %v", me, c[:2], wantCtr)
		}
		// The even PEs were never written.
		if me%2 == 0 && (slices.ContainsFunc(buf.Local(w), func(v int64) bool { return v != 0 }) || slices.ContainsFunc(ctr.Local(w), func(v int64) bool { return v != 0 })) {
			return fmt.Errorf("PE %d, outside the team, was written: %v %v", me, buf.Local(w), ctr.Local(w))
		}
		// A context of TeamWorld takes World PEs.
		must(w.BarrierAll(ctx)) // everybody has looked
		cx, err := w.CtxCreate(0)
		if err != nil {
			return err
		}
		if err := CtxP(ctx, cx, buf.At(0), int64(1000+me), (me+1)%6); err != nil {
			return err
		}
		must(cx.Destroy(ctx))
		must(w.BarrierAll(ctx))
		if got := buf.Local(w)[0]; got != int64(1000+(me+5)%6) {
			return fmt.Errorf("PE %d: CtxP on TeamWorld: %d", me, got)
		}
		return nil
	})
}

// A context's Quiet flushes the PEs its nonblocking calls went to, and
// no other; its data is in place when Quiet returns (a flag set after it
// finds it there).
func TestCtxQuiet(t *testing.T) {
	run(t, 4, func(ctx context.Context, w *World) error {
		me, n := w.MyPE(), w.NPEs()
		data := alloc[int64](ctx, w, 4*n)
		flag := alloc[int64](ctx, w, n)
		top, err := w.TeamWorld().SplitStrided(ctx, 3, -1, 4) // team PE k is World PE 3-k
		if err != nil {
			return err
		}
		a, err := top.CreateCtx(0)
		must(err)
		b, err := w.CtxCreate(CtxPrivate)
		must(err)
		// a: to team PEs 0 and 2 (World PEs 3 and 1); b: to World PE 2.
		src := []int64{int64(me), int64(me * 10), int64(me * 100), int64(me * 1000)}
		must(CtxPutNBI(a, data.Slice(4*me, 4*me+4), src, 0))
		must(CtxPutNBI(a, data.Slice(4*me, 4*me+4), src, 2))
		must(CtxPutNBI(a, data.Slice(4*me, 4*me+4), src, 0)) // once in the list
		must(CtxPutNBI(b, data.Slice(4*me, 4*me+4), src, 2))
		w.mu.Lock()
		ta, tb := slices.Clone(a.targets), slices.Clone(b.targets)
		w.mu.Unlock()
		if !slices.Equal(ta, []int{3, 1}) || !slices.Equal(tb, []int{2}) {
			return fmt.Errorf("targets: a %v, b %v; want [3 1], [2]", ta, tb)
		}
		must(a.Quiet(ctx))
		w.mu.Lock()
		ta, tb = slices.Clone(a.targets), slices.Clone(b.targets)
		w.mu.Unlock()
		if len(ta) != 0 || !slices.Equal(tb, []int{2}) {
			return fmt.Errorf("after a's Quiet: a %v, b %v; want [], [2]", ta, tb)
		}
		must(b.Fence(ctx))
		// The data is in place at World PEs 1, 2, 3: say so with a flag,
		// which each of them waits for from every PE.
		for _, pe := range []int{1, 2, 3} {
			must(AtomicSet(ctx, w, flag.At(me), 1, pe))
		}
		if me != 0 {
			for pe := range n {
				must(WaitUntil(ctx, w, flag.At(pe), CmpEQ, 1))
				if got := data.Local(w)[4*pe : 4*pe+4]; !slices.Equal(got, []int64{int64(pe), int64(pe * 10), int64(pe * 100), int64(pe * 1000)}) {
					return fmt.Errorf("PE %d: data from PE %d: %v after its Quiet", me, pe, got)
				}
			}
		}
		must(w.BarrierAll(ctx))
		// Gets to every PE: Quiet flushes them all, and fills dst.
		got := make([]int64, n)
		for pe := range n {
			must(CtxGetNBI(a, got[pe:pe+1], data.At(4*me), pe))
		}
		w.mu.Lock()
		all := len(a.targets)
		w.mu.Unlock()
		if all != n {
			return fmt.Errorf("%d targets after gets from %d PEs", all, n)
		}
		must(a.Quiet(ctx))
		// Team PE k is World PE 3-k, whose data holds this PE's put if it
		// is World PE 1, 2 or 3: all but team PE 3.
		if want := []int64{int64(me), int64(me), int64(me), 0}; !slices.Equal(got, want) {
			return fmt.Errorf("PE %d: gets %v after Quiet, want %v", me, got, want)
		}
		must(a.Destroy(ctx))
		must(b.Destroy(ctx))
		return top.Destroy(ctx)
	})
}

// Goroutines of each PE, each with its own context, put and add
// concurrently, while the PE's own goroutine makes the World's calls:
// every put lands once, every add counts.
func TestCtxGoroutines(t *testing.T) {
	run(t, 3, func(ctx context.Context, w *World) error {
		const workers, rounds = 4, 20
		me, n := w.MyPE(), w.NPEs()
		slots := alloc[int64](ctx, w, n*workers)
		count := alloc[int64](ctx, w, 1)
		ticks := alloc[int64](ctx, w, 1)
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for g := range workers {
			cx, err := w.CtxCreate(CtxPrivate)
			if err != nil {
				return err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[g] = func() error {
					src := make([]int64, 1)
					for r := 1; r <= rounds; r++ {
						for pe := range n {
							src[0] = int64(r*1000 + me*10 + g)
							if err := CtxPutNBI(cx, slots.At(me*workers+g), src, pe); err != nil {
								return err
							}
							if err := cx.Quiet(ctx); err != nil { // src is reused
								return err
							}
							if err := CtxAtomicInc(ctx, cx, count, pe); err != nil {
								return err
							}
						}
					}
					return cx.Destroy(ctx)
				}()
			}()
		}
		for range rounds {
			if err := AtomicInc(ctx, w, ticks, (me+1)%n); err != nil {
				return err
			}
			if _, err := Test(w, count, CmpGE, 0); err != nil {
				return err
			}
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if err := w.BarrierAll(ctx); err != nil {
			return err
		}
		for pe := range n {
			for g := range workers {
				if got, want := slots.Local(w)[pe*workers+g], int64(rounds*1000+pe*10+g); got != want {
					return fmt.Errorf("PE %d: slot of PE %d worker %d: %d, want %d", me, pe, g, got, want)
				}
			}
		}
		if got := count.Local(w)[0]; got != int64(n*workers*rounds) {
			return fmt.Errorf("PE %d: count %d, want %d", me, got, n*workers*rounds)
		}
		if got := ticks.Local(w)[0]; got != rounds {
			return fmt.Errorf("PE %d: ticks %d, want %d", me, got, rounds)
		}
		return nil
	})
}

// Bad arguments to the context calls: errors wrapping the right sentinel,
// nothing written.
func TestCtxErrors(t *testing.T) {
	run(t, 4, func(ctx context.Context, w *World) error {
		me := w.MyPE()
		pair, _, err := w.TeamWorld().Split2D(ctx, 2) // {0,1} and {2,3}
		if err != nil {
			return err
		}
		x := alloc[int64](ctx, w, 4)
		sig := alloc[uint64](ctx, w, 1)
		freed := alloc[int64](ctx, w, 1)
		must(Free(ctx, w, freed))
		cx, err := pair.CreateCtx(0)
		must(err)
		dead, err := pair.CreateCtx(0)
		must(err)
		must(dead.Destroy(ctx))
		var nilCtx *Ctx
		one := []int64{5}
		checks := []struct {
			what   string
			err    error
			target error
		}{
			// PEs outside the context's team (of 2).
			{"CtxPut to team PE 2", CtxPut(ctx, cx, x, one, 2), narma.ErrRank},
			{"CtxPutNBI to team PE -1", CtxPutNBI(cx, x, one, -1), narma.ErrRank},
			{"CtxGet from team PE 3", CtxGet(ctx, cx, []int64{0}, x, 3), narma.ErrRank},
			{"CtxGetNBI from narma.ProcNull", CtxGetNBI(cx, []int64{0}, x, narma.ProcNull), narma.ErrRank},
			{"CtxP to team PE 2", CtxP(ctx, cx, x.At(0), 1, 2), narma.ErrRank},
			{"CtxG from team PE 2", func() error { _, err := CtxG(ctx, cx, x.At(0), 2); return err }(), narma.ErrRank},
			{"CtxAtomicAdd on team PE 2", CtxAtomicAdd(ctx, cx, x.At(0), 1, 2), narma.ErrRank},
			{"CtxAtomicCompareSwap on team PE -1", func() error { _, err := CtxAtomicCompareSwap(ctx, cx, x.At(0), 0, 1, -1); return err }(), narma.ErrRank},
			{"CtxPutSignal to team PE 2", CtxPutSignal(ctx, cx, x, one, sig, 1, SignalSet, 2), narma.ErrRank},
			{"CtxPutSignalNBI to team PE 9", CtxPutSignalNBI(cx, x, one, sig, 1, SignalSet, 9), narma.ErrRank},
			// Addresses and lengths, as for the World's calls.
			{"CtxPut into a freed object", CtxPut(ctx, cx, freed, one, 0), ErrNotSymmetric},
			{"CtxPutNBI of 5 into 4", CtxPutNBI(cx, x, make([]int64, 5), 1), narma.ErrBounds},
			{"CtxAtomicInc on 4 elements", CtxAtomicInc(ctx, cx, x, 0), narma.ErrInvalid},
			{"CtxPutSignal with 2 signal words", CtxPutSignal(ctx, cx, x, one, Sym[uint64]{off: sig.off, n: 2}, 1, SignalSet, 0), narma.ErrInvalid},
			{"CtxPutSignalNBI with signal op 7", CtxPutSignalNBI(cx, x, one, sig, 1, 7, 1), narma.ErrInvalidNotification},
			{"CtxGetNBI from an out-of-range Slice", CtxGetNBI(cx, []int64{0}, x.Slice(3, 5), 0), ErrNotSymmetric},
			// Nil and destroyed contexts, unknown options.
			{"CtxPut on a nil context", CtxPut(ctx, nilCtx, x, one, 0), narma.ErrInvalid},
			{"Quiet of a nil context", nilCtx.Quiet(ctx), narma.ErrInvalid},
			{"Destroy of a nil context", nilCtx.Destroy(ctx), narma.ErrInvalid},
			{"CtxAtomicFetch on a nil context", func() error { _, err := CtxAtomicFetch(ctx, nilCtx, x.At(0), 0); return err }(), narma.ErrInvalid},
			{"CtxPut on a destroyed context", CtxPut(ctx, dead, x, one, 0), narma.ErrFreed},
			{"Quiet of a destroyed context", dead.Quiet(ctx), narma.ErrFreed},
			{"Fence of a destroyed context", dead.Fence(ctx), narma.ErrFreed},
			{"Destroy of a destroyed context", dead.Destroy(ctx), narma.ErrFreed},
			{"CtxCreate with an unknown option", func() error { _, err := w.CtxCreate(1 << 7); return err }(), narma.ErrInvalid},
			{"CreateCtx with an unknown option", func() error { _, err := pair.CreateCtx(CtxNoStore | 1<<9); return err }(), narma.ErrInvalid},
			{"CtxCreate on a nil World", func() error { _, err := (*World)(nil).CtxCreate(0); return err }(), narma.ErrInvalid},
		}
		for _, c := range checks {
			if err := wantErr(c.what, c.err, c.target); err != nil {
				return err
			}
		}
		if nilCtx.Team() != nil || nilCtx.Options() != 0 {
			return errors.New("accessors of a nil context")
		}
		w.mu.Lock()
		nt := len(cx.targets)
		w.mu.Unlock()
		if nt != 0 {
			return fmt.Errorf("refused calls left %d targets to flush", nt)
		}
		must(w.BarrierAll(ctx))
		for i, v := range x.Local(w) {
			if v != 0 {
				return fmt.Errorf("PE %d: x[%d] = %d after refused calls", me, i, v)
			}
		}
		if v := sig.Local(w)[0]; v != 0 {
			return fmt.Errorf("PE %d: signal %d after refused calls", me, v)
		}
		// Destroying the team destroys its contexts.
		must(pair.Destroy(ctx))
		return wantErr("CtxPut on a context of a destroyed team", CtxPut(ctx, cx, x, one, 0), narma.ErrFreed)
	})
}
