package shmem

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// Every atomic under contention from every PE, on each of the four
// integer types: the results are exact.
func TestAtomicsContended(t *testing.T) {
	t.Run("int32", func(t *testing.T) { atomicsContended[int32](t) })
	t.Run("int64", func(t *testing.T) { atomicsContended[int64](t) })
	t.Run("uint32", func(t *testing.T) { atomicsContended[uint32](t) })
	t.Run("uint64", func(t *testing.T) { atomicsContended[uint64](t) })
}

// Each atomic returns the previous value and leaves the right one, on a
// remote PE and on the own PE.
func TestAtomicResults(t *testing.T) {
	t.Run("int32", func(t *testing.T) { atomicResults[int32](t) })
	t.Run("int64", func(t *testing.T) { atomicResults[int64](t) })
	t.Run("uint32", func(t *testing.T) { atomicResults[uint32](t) })
	t.Run("uint64", func(t *testing.T) { atomicResults[uint64](t) })
}

func atomicResults[T Int](t *testing.T) {
	run(t, 2, func(ctx context.Context, w *World) error {
		x := alloc[T](ctx, w, 2)
		pe := 1 - w.MyPE()
		mine := x.At(w.MyPE()) // each PE works on its element of both copies
		for _, target := range []struct {
			dst Sym[T]
			pe  int
		}{{mine, pe}, {mine, w.MyPE()}} {
			dst, pe := target.dst, target.pe
			step := func(what string, got T, err error, want, after T) error {
				if err != nil || got != want {
					return fmt.Errorf("%T %s: returned %d, %v; want %d", got, what, got, err, want)
				}
				if now, err := AtomicFetch(ctx, w, dst, pe); err != nil || now != after {
					return fmt.Errorf("%T after %s: %d, %v; want %d", got, what, now, err, after)
				}
				return nil
			}
			must(AtomicSet(ctx, w, dst, 0b1100, pe))
			for _, err := range []error{
				func() error {
					v, err := AtomicFetchAnd(ctx, w, dst, 0b1010, pe)
					return step("FetchAnd", v, err, 0b1100, 0b1000)
				}(),
				func() error {
					v, err := AtomicFetchOr(ctx, w, dst, 0b0001, pe)
					return step("FetchOr", v, err, 0b1000, 0b1001)
				}(),
				func() error {
					v, err := AtomicFetchXor(ctx, w, dst, 0b1111, pe)
					return step("FetchXor", v, err, 0b1001, 0b0110)
				}(),
				func() error { v, err := AtomicSwap(ctx, w, dst, 5, pe); return step("Swap", v, err, 6, 5) }(),
				func() error {
					v, err := AtomicCompareSwap(ctx, w, dst, 4, 9, pe)
					return step("failed CompareSwap", v, err, 5, 5)
				}(),
				func() error {
					v, err := AtomicCompareSwap(ctx, w, dst, 5, 9, pe)
					return step("CompareSwap", v, err, 5, 9)
				}(),
				func() error { v, err := AtomicFetchAdd(ctx, w, dst, 3, pe); return step("FetchAdd", v, err, 9, 12) }(),
				func() error { v, err := AtomicFetchInc(ctx, w, dst, pe); return step("FetchInc", v, err, 12, 13) }(),
				func() error { return step("And", 0, AtomicAnd(ctx, w, dst, 0b0111, pe), 0, 0b0101) }(),
				func() error { return step("Or", 0, AtomicOr(ctx, w, dst, 0b1000, pe), 0, 0b1101) }(),
				func() error { return step("Xor", 0, AtomicXor(ctx, w, dst, 0b0110, pe), 0, 0b1011) }(),
				func() error { return step("Inc", 0, AtomicInc(ctx, w, dst, pe), 0, 12) }(),
				func() error { return step("Add", 0, AtomicAdd(ctx, w, dst, ^T(0), pe), 0, 11) }(), // wraps: -1
			} {
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func atomicsContended[T Int](t *testing.T) {
	const pes, rounds = 4, 150
	run(t, pes, func(ctx context.Context, w *World) error {
		me := w.MyPE()
		// On PE 0: counters for add, inc, fetch-add, fetch-inc, a word
		// per bitwise operation, a CAS lock count and a swap word.
		v := alloc[T](ctx, w, 10)
		const add, inc, fadd, finc, and, or, xor, fand, cas, swap = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
		if me == 0 {
			must(AtomicSet(ctx, w, v.At(and), ^T(0), 0))
			must(AtomicSet(ctx, w, v.At(fand), ^T(0), 0))
		}
		must(w.BarrierAll(ctx))
		var fetched, swapped []T
		for r := 0; r < rounds; r++ {
			must(AtomicAdd(ctx, w, v.At(add), T(me+1), 0))
			must(AtomicInc(ctx, w, v.At(inc), 0))
			old, err := AtomicFetchAdd(ctx, w, v.At(fadd), 2, 0)
			must(err)
			fetched = append(fetched, old)
			old, err = AtomicFetchInc(ctx, w, v.At(finc), 0)
			must(err)
			fetched = append(fetched, old+1<<30) // keep the two kinds apart
			bit := T(1) << (me*8 + r%8)
			if r%2 == 0 {
				must(AtomicOr(ctx, w, v.At(or), bit, 0))
				must(AtomicXor(ctx, w, v.At(xor), bit, 0))
			} else {
				_, err := AtomicFetchOr(ctx, w, v.At(or), bit, 0)
				must(err)
				_, err = AtomicFetchXor(ctx, w, v.At(xor), bit, 0)
				must(err)
			}
			if r%8 == 0 {
				must(AtomicAnd(ctx, w, v.At(and), ^T(1<<(me*8)), 0))
				_, err := AtomicFetchAnd(ctx, w, v.At(fand), ^T(1<<(me*8+1)), 0)
				must(err)
			}
			// Increment with compare-and-swap: retry until it sticks.
			for {
				cur, err := AtomicFetch(ctx, w, v.At(cas), 0)
				must(err)
				prev, err := AtomicCompareSwap(ctx, w, v.At(cas), cur, cur+1, 0)
				must(err)
				if prev == cur {
					break
				}
			}
			s, err := AtomicSwap(ctx, w, v.At(swap), T(me*rounds+r+1), 0)
			must(err)
			swapped = append(swapped, s)
		}
		// Gather every PE's fetched and swapped values on PE 0.
		all := alloc[T](ctx, w, pes*3*rounds)
		mine := append(fetched, swapped...)
		must(Put(ctx, w, all.Slice(me*3*rounds, (me+1)*3*rounds), mine, 0))
		must(w.BarrierAll(ctx))
		if me != 0 {
			return nil
		}
		got := v.Local(w)
		sum := T(0)
		for pe := 0; pe < pes; pe++ {
			sum += T(pe+1) * rounds
		}
		if got[add] != sum || got[inc] != pes*rounds || got[fadd] != 2*pes*rounds || got[finc] != pes*rounds || got[cas] != pes*rounds {
			return fmt.Errorf("%T: add %d (want %d), inc %d, fetch-add %d, fetch-inc %d, cas %d", got[0], got[add], sum, got[inc], got[fadd], got[finc], got[cas])
		}
		// Every PE set bits 0..7 of its byte with OR, and toggled each of
		// them rounds/8 times with XOR.
		var wantOr, wantXor, wantAnd, wantFand T = 0, 0, ^T(0), ^T(0)
		for pe := 0; pe < pes; pe++ {
			wantOr |= 0xff << (pe * 8)
			if rounds/8%2 == 1 {
				wantXor |= 0xff << (pe * 8)
			}
			for b := 0; b < 8; b++ {
				if b < rounds%8 {
					wantXor ^= 1 << (pe*8 + b)
				}
			}
			wantAnd &^= 1 << (pe * 8)
			wantFand &^= 1 << (pe*8 + 1)
		}
		if got[or] != wantOr || got[xor] != wantXor || got[and] != wantAnd || got[fand] != wantFand {
			return fmt.Errorf("%T: or %#x (want %#x), xor %#x (want %#x), and %#x (want %#x), fetch-and %#x (want %#x)",
				got[0], got[or], wantOr, got[xor], wantXor, got[and], wantAnd, got[fand], wantFand)
		}
		// The fetching adds returned each old value exactly once, and the
		// swaps handed every value but the last one out exactly once.
		var adds, incs, swaps []T
		for pe := 0; pe < pes; pe++ {
			b := all.Slice(pe*3*rounds, (pe+1)*3*rounds).Local(w)
			for i := 0; i < 2*rounds; i += 2 {
				adds = append(adds, b[i])
				incs = append(incs, b[i+1]-1<<30)
			}
			swaps = append(swaps, b[2*rounds:]...)
		}
		swaps = append(swaps, got[swap])
		slices.Sort(adds)
		slices.Sort(incs)
		slices.Sort(swaps)
		for i := 0; i < pes*rounds; i++ {
			if adds[i] != T(2*i) || incs[i] != T(i) {
				return fmt.Errorf("%T: fetch-add results %v..., fetch-inc results %v...", got[0], adds[:8], incs[:8])
			}
		}
		for i := range swaps {
			if swaps[i] != T(i) {
				return fmt.Errorf("%T: swapped values %v", got[0], swaps)
			}
		}
		return nil
	})
}
